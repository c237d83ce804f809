package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sampler counts, continuously, the indices served by a RUNNING instance of an LRP and keeps
// the lowest count seen: the zero-downtime invariant is that it never drops below N.
type sampler struct {
	lowest  atomic.Int64
	samples atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	// worst is the first sample at the lowest count, to say which index went unserved, and
	// when (to find it in the processes' logs).
	worst   []instance
	worstAt time.Time
}

func (d *devStack) sample(guid string, n int) *sampler {
	s := &sampler{stop: make(chan struct{})}
	s.lowest.Store(int64(n))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			var resp struct {
				ActualLRPs []instance `json:"actual_lrps"`
			}
			if d.api.post("/v1/actual_lrps/list", obj{"process_guid": guid}, &resp) == 200 {
				if got := int64(runningIndices(resp.ActualLRPs)); got < s.lowest.Load() {
					s.lowest.Store(got)
					s.worst, s.worstAt = resp.ActualLRPs, time.Now()
				}
				s.samples.Add(1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return s
}

func (s *sampler) finish(t *testing.T, n int, what string) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	if s.lowest.Load() < int64(n) {
		var seen []string
		for _, a := range s.worst {
			seen = append(seen, fmt.Sprintf("%d %s %s %s retiring=%v cell=%s guid=%s", a.Index, a.DefinitionID, a.State, a.Presence, a.Retiring, a.CellID, a.InstanceGUID))
		}
		t.Fatalf("%s: served indices dropped to %d of %d (%d samples); the instances at %s: %s", what, s.lowest.Load(), n, s.samples.Load(),
			s.worstAt.UTC().Format("15:04:05.000"), strings.Join(seen, "; "))
	}
	t.Logf("%s: never below %d of %d over %d samples", what, s.lowest.Load(), n, s.samples.Load())
}

type rolloutView struct {
	State            string  `json:"state"`
	Kind             string  `json:"kind"`
	From             string  `json:"from_definition_id"`
	To               string  `json:"to_definition_id"`
	UpdatedInstances int32   `json:"updated_instances"`
	GivenUp          []int32 `json:"given_up_indices"`
}

func (d *devStack) rollout(guid string) rolloutView {
	var resp struct {
		Rollout rolloutView `json:"rollout"`
	}
	d.api.mustPost("/v1/rollouts/get", obj{"process_guid": guid}, &resp)
	return resp.Rollout
}

// allOn reports whether every index runs the definition and nothing else is left.
func (d *devStack) allOn(guid, def string, n int) bool {
	l := d.instances(guid)
	if len(l) != n {
		return false
	}
	for _, a := range l {
		if a.State != "RUNNING" || a.DefinitionID != def {
			return false
		}
	}
	return true
}

func demoDefinition(id, version string) obj {
	d := demoLRP("x", 1)
	def := obj{"definition_id": id}
	for _, k := range []string{"rootfs", "memory_mb", "disk_mb", "ports", "action", "check_definition"} {
		def[k] = d[k]
	}
	def["env"] = []obj{{"name": "DEMO_VERSION", "value": version}}
	return def
}

// TestRollingUpdateCancelAndRollback drives seed 001 with real processes: an update rolls
// every instance to v2 with zero downtime and prunes v1; an update to v3 cancelled halfway
// walks back to v2; a rollback to v3... is refused once pruned, and a rollback to a stored
// definition rolls back — all while the number of served indices never drops below N.
func TestRollingUpdateCancelAndRollback(t *testing.T) {
	const n = 4
	d := startDev(t)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "4 RUNNING on web", 30*time.Second, func() bool { return d.allOn("web", "web", n) })

	d.waitFor(t, "the router to route web.example.com", 10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = "web.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	traffic := d.drive("web.example.com", 4)
	s := d.sample("web", n)
	var got struct {
		DesiredLRP obj `json:"desired_lrp"`
	}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v2", "v2")}}, &got)
	if got.DesiredLRP["definition_id"] != "v2" || got.DesiredLRP["previous_definition_id"] != "web" {
		t.Fatalf("desired during the update: %v", got.DesiredLRP)
	}
	var conflict struct{ Error struct{ Type string } }
	if st := d.api.post("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v9", "v9")}}, &conflict); st != 409 || conflict.Error.Type != "UpdateInProgress" {
		t.Errorf("a second update while one runs: %d %+v", st, conflict)
	}
	d.waitFor(t, "every index on v2", 60*time.Second, func() bool { return d.allOn("web", "v2", n) && d.rollout("web").State == "completed" })
	s.finish(t, n, "update to v2")
	if r := d.rollout("web"); r.UpdatedInstances != n || r.From != "web" || r.To != "v2" {
		t.Fatalf("rollout = %+v", r)
	}
	got.DesiredLRP = nil // decoding into a map merges keys
	d.api.mustPost("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}, &got)
	if _, ok := got.DesiredLRP["previous_definition_id"]; ok || got.DesiredLRP["definition_id"] != "v2" {
		t.Fatalf("after the update: %v", got.DesiredLRP)
	}

	// Cancel an update halfway: the updated indices go back to v2, index by index.
	s = d.sample("web", n)
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v3", "v3")}}, nil)
	d.waitFor(t, "two indices on v3", 30*time.Second, func() bool { return d.rollout("web").UpdatedInstances >= 2 })
	d.api.mustPost("/v1/desired_lrp/cancel_update", obj{"process_guid": "web"}, nil)
	d.waitFor(t, "the cancel to walk back to v2", 60*time.Second, func() bool {
		return d.rollout("web").State == "canceled" && d.allOn("web", "v2", n)
	})
	s.finish(t, n, "cancel of v3")
	var none struct{ Error struct{ Type string } }
	if st := d.api.post("/v1/desired_lrp/cancel_update", obj{"process_guid": "web"}, &none); st != 409 || none.Error.Type != "NoUpdateInProgress" {
		t.Errorf("cancel with nothing to cancel: %d %+v", st, none)
	}

	// Roll back to the first definition, kept in the history after it was pruned from the map.
	s = d.sample("web", n)
	d.api.mustPost("/v1/desired_lrp/rollback", obj{"process_guid": "web", "definition_id": "web"}, nil)
	d.waitFor(t, "the rollback to the first definition", 60*time.Second, func() bool {
		r := d.rollout("web")
		return r.State == "completed" && r.Kind == "rollback" && d.allOn("web", "web", n)
	})
	s.finish(t, n, "rollback to web")
	traffic.finish(t, "update, cancel and rollback")
	if st := d.api.post("/v1/desired_lrp/rollback", obj{"process_guid": "web", "definition_id": "never-stored"}, &none); st != 404 || none.Error.Type != "ResourceNotFound" {
		t.Errorf("rollback to an unknown definition: %d %+v", st, none)
	}
}
