package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs/events"
	"code.cloudfoundry.org/bbs/models"
)

// desire desires an LRP of sleeping instances through our JSON API, with an internal route
// and metric tags as Cloud Controller sets them, and removes it when the test ends.
func desire(t *testing.T, guid string, instances int, extra ...map[string]any) {
	t.Helper()
	post := func(path string, body any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(sys.apiURL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	lrp := map[string]any{
		"process_guid": guid, "domain": "cf-apps", "instances": instances,
		"rootfs": "preloaded:cflinuxfs4", "memory_mb": 16, "disk_mb": 16, "metrics_guid": guid,
		"routes": map[string]any{"internal-router": []map[string]string{{"hostname": guid + ".apps.internal"}}},
		"metric_tags": map[string]any{"source_id": map[string]string{"static": guid},
			"instance_id": map[string]string{"dynamic": "INDEX"}, "instance_guid": map[string]string{"dynamic": "INSTANCE_GUID"}},
		"action": map[string]any{"run": map[string]any{"path": "/bin/sleep", "args": []string{"3600"}}},
	}
	for _, e := range extra {
		maps.Copy(lrp, e)
	}
	post("/v1/desired_lrp/desire", map[string]any{"desired_lrp": lrp})
	t.Cleanup(func() { post("/v1/desired_lrp/remove", map[string]any{"process_guid": guid}) })
}

// next is the source's next event, within 30 s.
func next(t *testing.T, src events.EventSource) models.Event {
	t.Helper()
	type result struct {
		e   models.Event
		err error
	}
	ch := make(chan result, 1)
	go func() {
		e, err := src.Next()
		ch <- result{e, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Next: %v", r.err)
		}
		return r.e
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return nil
}

// TestActualLRPsThroughTheRealClient: the real client lists an LRP's instances as Cloud
// Controller reads them (index, state, routable with presence, the cell's zone), gets their
// groups, follows their events — created, then changed until RUNNING and routable — on the
// instance stream and its cell's, and retires one.
func TestActualLRPsThroughTheRealClient(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	all, err := c.SubscribeToInstanceEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	groups, err := c.SubscribeToEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	const guid = "compat-actual"
	desire(t, guid, 2)

	var lrps []*models.ActualLRP
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !waitFor(ctx, func() bool {
		lrps, err = c.ActualLRPs(log, traceID(t), models.ActualLRPFilter{ProcessGuid: guid})
		if err != nil || len(lrps) != 2 {
			return false
		}
		for _, a := range lrps {
			if a.State != models.ActualLRPStateRunning {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("instances of %s = %v, %v; want 2 RUNNING", guid, lrps, err)
	}
	cells, err := c.Cells(log, traceID(t))
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, cell := range cells {
		zones[cell.CellId] = cell.Zone
	}
	for i, a := range lrps {
		if a.Index != int32(i) || !a.RoutableExists() || !a.GetRoutable() || a.InstanceGuid == "" ||
			a.AvailabilityZone == "" || a.AvailabilityZone != zones[a.CellId] || a.Domain != "cf-apps" {
			t.Errorf("instance %d = %+v (cell zones %v)", i, a, zones)
		}
		// What a rep reports at start: the internal route's hostname, the tags resolved.
		tags := map[string]string{"source_id": guid, "instance_id": fmt.Sprint(i), "instance_guid": a.InstanceGuid}
		if len(a.ActualLrpInternalRoutes) != 1 || a.ActualLrpInternalRoutes[0].Hostname != guid+".apps.internal" ||
			!reflect.DeepEqual(a.MetricTags, tags) {
			t.Errorf("instance %d: internal routes %v, metric tags %v; want %s.apps.internal, %v",
				i, a.ActualLrpInternalRoutes, a.MetricTags, guid, tags)
		}
	}

	// The instance stream: each instance created UNCLAIMED, then changed until it runs,
	// routable only then.
	running := map[int32]bool{}
	for len(running) < 2 {
		switch e := next(t, all).(type) {
		case *models.ActualLRPInstanceCreatedEvent:
			if e.ActualLrp.ProcessGuid == guid && (e.ActualLrp.State != models.ActualLRPStateUnclaimed || e.ActualLrp.GetRoutable()) {
				t.Errorf("created = %+v", e.ActualLrp)
			}
		case *models.ActualLRPInstanceChangedEvent:
			if e.ProcessGuid != guid {
				continue
			}
			if e.After.State == models.ActualLRPStateRunning {
				if !e.After.RoutableExists() || !e.After.GetRoutable() || e.CellId == "" {
					t.Errorf("changed to RUNNING = %+v", e)
				}
				running[e.Index] = true
			}
		}
	}
	// The deprecated group stream says the same in groups.
	for seen := 0; seen < 2; {
		if e, ok := next(t, groups).(*models.ActualLRPChangedEvent); ok && e.After.Instance != nil &&
			e.After.Instance.ProcessGuid == guid && e.After.Instance.State == models.ActualLRPStateRunning {
			seen++
		}
	}

	group, err := c.ActualLRPGroupByProcessGuidAndIndex(log, traceID(t), guid, 1)
	if err != nil || group.Instance == nil || group.Instance.InstanceGuid != lrps[1].InstanceGuid {
		t.Fatalf("group at index 1 = %+v, %v", group, err)
	}
	byGUIDs, err := c.ActualLRPsByProcessGuids(log, traceID(t), []string{guid})
	if err != nil || len(byGUIDs) != 2 {
		t.Fatalf("ActualLRPsByProcessGuids = %v, %v", byGUIDs, err)
	}

	// Retire index 0 on its own cell's stream: its instance stops being routable at once,
	// and goes.
	onCell, err := c.SubscribeToInstanceEventsByCellID(log, lrps[0].CellId)
	if err != nil {
		t.Fatal(err)
	}
	defer onCell.Close()
	time.Sleep(500 * time.Millisecond) // the stream subscribes once its request arrives
	key := models.NewActualLRPKey(guid, 0, "cf-apps")
	if err := c.RetireActualLRP(log, traceID(t), &key); err != nil {
		t.Fatal(err)
	}
	for unroutable := false; ; {
		e := next(t, onCell)
		if ce, ok := e.(*models.ActualLRPInstanceChangedEvent); ok && ce.InstanceGuid == lrps[0].InstanceGuid && !ce.After.GetRoutable() {
			unroutable = true
		}
		if re, ok := e.(*models.ActualLRPInstanceRemovedEvent); ok && re.ActualLrp.InstanceGuid == lrps[0].InstanceGuid {
			if !unroutable {
				t.Error("the retired instance was removed without first becoming unroutable")
			}
			break
		}
		if ae := e.(interface{ EventType() string }); ae.EventType() == models.EventTypeActualLRPInstanceCreated {
			if ce := e.(*models.ActualLRPInstanceCreatedEvent); ce.ActualLrp.CellId != lrps[0].CellId {
				t.Errorf("a cell's stream passed an instance of another cell: %+v", ce.ActualLrp)
			}
		}
	}
}

// TestRoutableFollowsReadiness: an instance whose readiness check does not pass runs, and the
// real client reads it RUNNING with routable present and false (as a rep reports it), on the
// list and on its events; CC and route-emitter keep traffic away from it.
func TestRoutableFollowsReadiness(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	const guid = "compat-unready"
	desire(t, guid, 1, map[string]any{"ports": []int{8080},
		"check_definition": map[string]any{"readiness_checks": []any{map[string]any{"tcp_check": map[string]any{"port": 8080}}}}})
	var lrps []*models.ActualLRP
	var err error
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !waitFor(ctx, func() bool {
		lrps, err = c.ActualLRPs(log, traceID(t), models.ActualLRPFilter{ProcessGuid: guid})
		return err == nil && len(lrps) == 1 && lrps[0].State == models.ActualLRPStateRunning
	}) {
		t.Fatalf("instances of %s = %v, %v; want 1 RUNNING", guid, lrps, err)
	}
	time.Sleep(2 * time.Second) // a few readiness checks, all failing: nothing listens on 8080
	lrps, err = c.ActualLRPs(log, traceID(t), models.ActualLRPFilter{ProcessGuid: guid})
	if err != nil || len(lrps) != 1 || lrps[0].State != models.ActualLRPStateRunning || !lrps[0].RoutableExists() || lrps[0].GetRoutable() {
		t.Fatalf("instance of %s = %+v, %v; want RUNNING with routable present and false", guid, lrps, err)
	}
}
