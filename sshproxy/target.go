package sshproxy

import (
	"cmp"
	"context"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/model"
	"golang.org/x/crypto/ssh"
)

// BBS is what the proxy reads: an LRP with all its definitions (its routes, its active
// definition, each definition's ports) and the instances at an index.
type BBS interface {
	LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error)
	ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error)
}

// Target is the instance a session reaches and how to reach its daemon.
type Target struct {
	Instance model.ActualLRP
	// Address is the daemon's host:port: the instance's address and the host port its own
	// definition maps the route's container port to.
	Address     string
	Route       *Route
	Signer      ssh.Signer
	fingerprint fingerprint
}

// Resolve finds the instance at index of the LRP and where its daemon listens, or says
// clearly why there is none.
func Resolve(ctx context.Context, bbs BBS, guid string, index int32) (*Target, error) {
	deps, err := bbs.LRPDeployments(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{guid}})
	if err != nil {
		return nil, err
	}
	if len(deps) == 0 {
		return nil, refuse("there is no LRP with process guid %s", quote(guid))
	}
	dep := &deps[0]
	raw, ok := dep.Routes[RouteName]
	if !ok {
		return nil, refuse("LRP %s has no %s route: ssh is not enabled for it", quote(guid), RouteName)
	}
	route, signer, err := ParseRoute(raw)
	if err != nil {
		return nil, refuse("LRP %s: %s", quote(guid), err.Error())
	}
	if index >= dep.Instances {
		return nil, refuse("index %d is out of range: LRP %s has %d instance(s)%s", index, quote(guid), dep.Instances, indexRange(dep.Instances))
	}
	instances, err := bbs.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid, Index: &index})
	if err != nil {
		return nil, err
	}
	inst, err := SelectInstance(instances, dep.ActiveDefinitionID)
	if err != nil {
		return nil, refuse("LRP %s, index %d: %s", quote(guid), index, err.Error())
	}
	addr, err := daemonAddress(dep, inst, route.ContainerPort)
	if err != nil {
		return nil, err
	}
	fp, _ := parseFingerprint(route.HostFingerprint) // checked by ParseRoute
	return &Target{Instance: *inst, Address: addr, Route: route, Signer: signer, fingerprint: fp}, nil
}

func indexRange(n int32) string {
	if n == 0 {
		return ""
	}
	return " (indices 0-" + strconv.Itoa(int(n-1)) + ")"
}

// SelectInstance picks the instance a session at an index reaches. During a rollout an
// index may have two instances (the previous definition's, being replaced, and the active
// one's, starting), and an evacuating cell's instance may have a replacement: it takes the
// RUNNING, non-retiring instance of the active definition, else another RUNNING one,
// preferring one not retiring, then an ORDINARY one over an evacuating or suspect one, and
// then the lowest instance guid, so that the choice never depends on the listing's order.
func SelectInstance(instances []model.ActualLRP, activeDefinitionID string) (*model.ActualLRP, error) {
	var running []*model.ActualLRP
	var states []string
	for i := range instances {
		a := &instances[i]
		if a.State == model.StateRunning {
			running = append(running, a)
		} else {
			states = append(states, a.State)
		}
	}
	if len(running) == 0 {
		if len(instances) == 0 {
			return nil, refuse("no instance yet")
		}
		slices.Sort(states)
		return nil, refuse("no RUNNING instance (%s)", strings.Join(slices.Compact(states), ", "))
	}
	rank := func(a *model.ActualLRP) [3]int {
		return [3]int{b2i(a.Retiring), b2i(!isActive(a, activeDefinitionID)), b2i(a.Presence != model.PresenceOrdinary && a.Presence != "")}
	}
	slices.SortFunc(running, func(a, b *model.ActualLRP) int {
		ra, rb := rank(a), rank(b)
		for i := range ra {
			if c := cmp.Compare(ra[i], rb[i]); c != 0 {
				return c
			}
		}
		return strings.Compare(a.InstanceGUID, b.InstanceGUID)
	})
	return running[0], nil
}

// isActive reports whether the instance runs the active definition. An instance without a
// definition id (an old client's record) runs the only definition there is.
func isActive(a *model.ActualLRP, active string) bool {
	return a.DefinitionID == "" || a.DefinitionID == active
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// daemonAddress is where the instance's daemon listens: the route's container port mapped
// through the instance's own port mapping, which its own definition decided (two
// definitions may expose different ports during a rollout).
func daemonAddress(dep *model.LRPDeployment, inst *model.ActualLRP, containerPort uint32) (string, error) {
	defID := cmp.Or(inst.DefinitionID, dep.ActiveDefinitionID)
	if def, ok := dep.Definitions[defID]; ok && !slices.Contains(def.Ports, containerPort) {
		return "", refuse("definition %s of LRP %s does not expose the ssh port %d (its ports: %v)",
			quote(defID), quote(dep.ProcessGUID), containerPort, def.Ports)
	}
	for _, p := range inst.Ports {
		if p.ContainerPort != containerPort {
			continue
		}
		if inst.PreferredAddress == model.PreferredAddressInstance && inst.InstanceAddress != "" {
			return net.JoinHostPort(inst.InstanceAddress, strconv.Itoa(int(p.ContainerPort))), nil
		}
		return net.JoinHostPort(inst.Address, strconv.Itoa(int(p.HostPort))), nil
	}
	return "", refuse("instance %s (definition %s) of LRP %s has no host port for the ssh port %d",
		inst.InstanceGUID, quote(defID), quote(dep.ProcessGUID), containerPort)
}
