// Package router is a small Gorouter with its route emitter: it keeps a table from host
// names to the RUNNING instances of the LRPs whose cf-router routes name them, follows the
// BBS event stream (with a periodic full resync), and proxies HTTP by Host header.
package router

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/updatable-lrps/bbs/model"
)

// Endpoint is one instance serving a host.
type Endpoint struct {
	Address      string // host:port
	ProcessGUID  string
	DefinitionID string
	Index        int32
	InstanceGUID string
}

// CFRoute is one entry of routes["cf-router"] (seed 002).
type CFRoute struct {
	Hostnames []string `json:"hostnames"`
	Port      uint32   `json:"port"`
}

// LRP is what the table needs to know of an LRP: its routes and each definition's ports.
type LRP struct {
	ProcessGUID string
	Routes      []CFRoute
	// Ports are the container ports of each definition: during a rollout two definitions
	// may expose different ports (seed 001's route-emitter concern).
	Ports map[string][]uint32
	// Traffic is how its requests split between definitions (by instances unless weighted).
	Traffic model.TrafficSplit
}

// LRPFromDeployment reads the cf-router routes and definition ports of a deployment.
func LRPFromDeployment(d *model.LRPDeployment) LRP {
	l := LRP{ProcessGUID: d.ProcessGUID, Ports: map[string][]uint32{}}
	if d.Traffic != nil {
		l.Traffic = *d.Traffic
	}
	if raw, ok := d.Routes["cf-router"]; ok {
		_ = json.Unmarshal(raw, &l.Routes) // an opaque value that is not cf-router JSON routes nothing
	}
	for id, def := range d.Definitions {
		l.Ports[id] = def.Ports
	}
	return l
}

// Table maps host names to endpoints. It is safe for concurrent use.
type Table struct {
	mu        sync.RWMutex
	lrps      map[string]LRP                        // by process guid
	instances map[string]map[string]model.ActualLRP // process guid → instance key → RUNNING instance
	// splits are the LRPs' traffic splits (by process guid), kept apart from lrps so that a
	// split applied from its event is not undone by an older read of the LRP.
	splits map[string]model.TrafficSplit
	// byHost indexes lrps by the host names their routes name (lower case): a change to one
	// LRP or instance rebuilds only that LRP's hosts.
	byHost map[string]map[string]bool
	hosts  map[string]*Route // derived
	next   atomic.Uint64
}

// Route is what a host routes to: its endpoints, sorted, and the weighted split of each of
// its LRPs under a weighted step. A Route is never changed once built.
type Route struct {
	Endpoints []Endpoint
	splits    map[string]*lrpSplit
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{lrps: map[string]LRP{}, instances: map[string]map[string]model.ActualLRP{}, splits: map[string]model.TrafficSplit{},
		byHost: map[string]map[string]bool{}, hosts: map[string]*Route{}}
}

func instanceKey(a *model.ActualLRP) string {
	return fmt.Sprintf("%s/%d/%s", a.DefinitionID, a.Index, a.Presence)
}

// routable is whether an instance may take traffic: routable by the model's rule, and with
// an address to send it to.
func routable(a *model.ActualLRP) bool {
	return a.Routable() && a.Address != ""
}

// Replace swaps in a whole new state (a resync).
func (t *Table) Replace(lrps []LRP, actual []model.ActualLRP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lrps = map[string]LRP{}
	splits := map[string]model.TrafficSplit{}
	for _, l := range lrps {
		t.lrps[l.ProcessGUID] = l
		splits[l.ProcessGUID] = newer(t.splits[l.ProcessGUID], l.Traffic)
	}
	t.splits = splits
	t.instances = map[string]map[string]model.ActualLRP{}
	for i := range actual {
		if routable(&actual[i]) {
			t.putLocked(actual[i])
		}
	}
	t.byHost = map[string]map[string]bool{}
	for guid, l := range t.lrps {
		t.indexLocked(guid, l)
	}
	t.hosts = make(map[string]*Route, len(t.byHost))
	for h := range t.byHost {
		t.rebuildHostLocked(h)
	}
}

// SetLRP records (or replaces) an LRP's routes and ports.
func (t *Table) SetLRP(l LRP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := hostsOf(t.lrps[l.ProcessGUID])
	t.unindexLocked(l.ProcessGUID, old)
	t.lrps[l.ProcessGUID] = l
	t.indexLocked(l.ProcessGUID, l)
	t.splits[l.ProcessGUID] = newer(t.splits[l.ProcessGUID], l.Traffic)
	// The hosts it left and the hosts it names now, each rebuilt once.
	affected := old
	for _, h := range hostsOf(l) {
		if !slices.Contains(affected, h) {
			affected = append(affected, h)
		}
	}
	t.rebuildHostsLocked(affected...)
}

// SetSplit applies an LRP's traffic split unless the table has a later generation, and
// says whether it did.
func (t *Table) SetSplit(s model.TrafficSplit) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.lrps[s.ProcessGUID]; !ok || t.splits[s.ProcessGUID].Generation > s.Generation {
		return false
	}
	t.splits[s.ProcessGUID] = s
	t.rebuildLRPLocked(s.ProcessGUID)
	return true
}

// Applied lists the generation of the split each LRP is routed by (LRPs whose split never
// changed are left out): what the router acknowledges.
func (t *Table) Applied() map[string]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := map[string]int64{}
	for guid, s := range t.splits {
		if s.Generation > 0 {
			out[guid] = s.Generation
		}
	}
	return out
}

// newer is the later of two generations of a split.
func newer(have, got model.TrafficSplit) model.TrafficSplit {
	if have.Generation > got.Generation {
		return have
	}
	return got
}

// RemoveLRP forgets an LRP and its instances.
func (t *Table) RemoveLRP(guid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := hostsOf(t.lrps[guid])
	t.unindexLocked(guid, old)
	delete(t.lrps, guid)
	delete(t.instances, guid)
	delete(t.splits, guid)
	t.rebuildHostsLocked(old...)
}

// HasLRP reports whether the table knows an LRP's routes.
func (t *Table) HasLRP(guid string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.lrps[guid]
	return ok
}

// SetInstance records an instance's current state: routable ones are added, others (and
// retiring ones) removed.
func (t *Table) SetInstance(a model.ActualLRP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if routable(&a) {
		t.putLocked(a)
	} else if m := t.instances[a.ProcessGUID]; m != nil {
		delete(m, instanceKey(&a))
	}
	t.rebuildLRPLocked(a.ProcessGUID)
}

// RemoveInstance forgets an instance.
func (t *Table) RemoveInstance(a model.ActualLRP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.instances[a.ProcessGUID]; m != nil {
		delete(m, instanceKey(&a))
	}
	t.rebuildLRPLocked(a.ProcessGUID)
}

func (t *Table) putLocked(a model.ActualLRP) {
	m := t.instances[a.ProcessGUID]
	if m == nil {
		m = map[string]model.ActualLRP{}
		t.instances[a.ProcessGUID] = m
	}
	m[instanceKey(&a)] = a
}

// hostsOf lists the host names l's routes name, in lower case, each once.
func hostsOf(l LRP) []string {
	var hosts []string
	for _, r := range l.Routes {
		for _, h := range r.Hostnames {
			if h = strings.ToLower(h); !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

func (t *Table) indexLocked(guid string, l LRP) {
	for _, h := range hostsOf(l) {
		if t.byHost[h] == nil {
			t.byHost[h] = map[string]bool{}
		}
		t.byHost[h][guid] = true
	}
}

func (t *Table) unindexLocked(guid string, hosts []string) {
	for _, h := range hosts {
		delete(t.byHost[h], guid)
		if len(t.byHost[h]) == 0 {
			delete(t.byHost, h)
		}
	}
}

// rebuildLRPLocked derives the routes of the hosts guid's routes name. An event changes one
// LRP or one instance, so it costs that LRP's hosts, not the fleet: rebuilding the whole
// map per event cost 59 ms an event at 10,000 routed LRPs (BenchmarkSetInstance; now
// 2.4 µs), and the instance events of every rollout went through it.
func (t *Table) rebuildLRPLocked(guid string) {
	if l, ok := t.lrps[guid]; ok {
		t.rebuildHostsLocked(hostsOf(l)...)
	}
}

func (t *Table) rebuildHostsLocked(hosts ...string) {
	for _, h := range hosts {
		t.rebuildHostLocked(h)
	}
}

// rebuildHostLocked derives host's Route from the LRPs whose routes name it: an endpoint for
// each routable instance and each of its LRP's routes naming the host, sorted by address, and
// each weighted LRP's split among its own endpoints. A Route is replaced, never changed: the
// proxy may hold the old one.
func (t *Table) rebuildHostLocked(host string) {
	var list []Endpoint
	for guid := range t.byHost[host] {
		l := t.lrps[guid]
		for _, a := range t.instances[guid] {
			for _, r := range l.Routes {
				port, ok := hostPort(&a, containerPort(r.Port, l.Ports[a.DefinitionID]))
				if !ok {
					continue
				}
				ep := Endpoint{Address: net.JoinHostPort(a.Address, fmt.Sprint(port)), ProcessGUID: guid,
					DefinitionID: a.DefinitionID, Index: a.Index, InstanceGUID: a.InstanceGUID}
				for _, h := range r.Hostnames {
					if strings.ToLower(h) == host {
						list = append(list, ep)
					}
				}
			}
		}
	}
	if len(list) == 0 {
		delete(t.hosts, host)
		return
	}
	// Sorted in full, so that a host's order does not depend on map iteration (two LRPs
	// may briefly share an address: one's instance gone, another's placed there).
	slices.SortFunc(list, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.ProcessGUID, b.ProcessGUID),
			cmp.Compare(a.DefinitionID, b.DefinitionID), cmp.Compare(a.Index, b.Index), cmp.Compare(a.InstanceGUID, b.InstanceGUID))
	})
	r := &Route{Endpoints: list}
	for _, ep := range list {
		w := weightsOf(t.splits[ep.ProcessGUID])
		if w == nil || r.splits[ep.ProcessGUID] != nil {
			continue
		}
		if r.splits == nil {
			r.splits = map[string]*lrpSplit{}
		}
		own := slices.DeleteFunc(slices.Clone(list), func(e Endpoint) bool { return e.ProcessGUID != ep.ProcessGUID })
		r.splits[ep.ProcessGUID] = newSplit(ep.ProcessGUID, own, w)
	}
	t.hosts[host] = r
}

// containerPort is the port a route reaches on an instance of a definition exposing ports:
// the route's port when the definition has it, else the definition's first port (a rollout
// that changed the app's port keeps both definitions routed).
func containerPort(routePort uint32, ports []uint32) uint32 {
	if len(ports) == 0 || slices.Contains(ports, routePort) {
		return routePort
	}
	return ports[0]
}

func hostPort(a *model.ActualLRP, container uint32) (uint32, bool) {
	for _, p := range a.Ports {
		if p.ContainerPort == container {
			return p.HostPort, true
		}
	}
	return 0, false
}

// Route is what host routes to, or nil.
func (t *Table) Route(host string) *Route {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.hosts[strings.ToLower(host)]
}

// Endpoints returns the endpoints of host, rotated for round-robin.
func (t *Table) Endpoints(host string) []Endpoint {
	r := t.Route(host)
	if r == nil {
		return nil
	}
	return rotated(r.Endpoints, t.next.Add(1))
}

// Hosts lists the routed host names and their endpoint counts.
func (t *Table) Hosts() map[string]int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]int, len(t.hosts))
	for h, r := range t.hosts {
		out[h] = len(r.Endpoints)
	}
	return out
}
