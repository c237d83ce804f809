package db_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// An instance reports, as a Diego cell does at start, its LRP's internal routes and metric
// tags with INDEX and INSTANCE_GUID resolved: taken when it becomes RUNNING (single, batched,
// an unknown instance's start), kept through a crash and an update of the LRP's tags until its
// next start, copied to its EVACUATING record; none before it starts, none for an LRP
// without them.
func TestInstancesReportInternalRoutesAndMetricTags(t *testing.T) {
	s := dbtest.NewStore(t)
	lrp := newLRP("app", 3)
	lrp.MetricsGUID = "app-guid"
	lrp.Routes[model.InternalRouter] = json.RawMessage(`[{"hostname":"app.apps.internal"},{"hostname":"v1.app.apps.internal"}]`)
	lrp.MetricTags = map[string]json.RawMessage{
		"source_id":   json.RawMessage(`{"static":"app-guid"}`),
		"instance_id": json.RawMessage(`{"dynamic":1}`),
		"guid":        json.RawMessage(`{"dynamic":"INSTANCE_GUID"}`),
	}
	desire(t, s, lrp)
	desire(t, s, newLRP("plain", 1))
	hostnames := []string{"app.apps.internal", "v1.app.apps.internal"}
	check := func(what string, a *model.ActualLRP, routes []string, tags map[string]string) {
		t.Helper()
		if !reflect.DeepEqual(a.InternalRoutes, routes) || !reflect.DeepEqual(a.MetricTags, tags) {
			t.Fatalf("%s: internal routes %q, metric tags %v; want %q, %v", what, a.InternalRoutes, a.MetricTags, routes, tags)
		}
		stored, err := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: a.ProcessGUID, Index: &a.Index})
		if err != nil || len(stored) == 0 {
			t.Fatalf("%s: %v %v", what, stored, err)
		}
		if !reflect.DeepEqual(stored[0].InternalRoutes, routes) || !reflect.DeepEqual(stored[0].MetricTags, tags) {
			t.Fatalf("%s: stored internal routes %q, metric tags %v; want %q, %v", what, stored[0].InternalRoutes, stored[0].MetricTags, routes, tags)
		}
	}

	a, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("claimed", a, nil, nil)
	a, err = s.StartActualLRP(ctx, key("app", 0), cellA, net, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{"source_id": "app-guid", "instance_id": "0", "guid": "ig-a"}
	check("started", a, hostnames, first)

	// New tags on the LRP: the running instance keeps the ones it started with.
	tags := map[string]json.RawMessage{"source_id": json.RawMessage(`{"static":"app-guid"}`), "space": json.RawMessage(`{"static":"s2"}`)}
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{MetricTags: &tags}); err != nil {
		t.Fatal(err)
	}
	a, err = s.StartActualLRP(ctx, key("app", 0), cellA, net, nil) // the cell's periodic report: no start
	if err != nil {
		t.Fatal(err)
	}
	check("reported again", a, hostnames, first)
	a, err = s.CrashActualLRP(ctx, key("app", 0), cellA, "boom", nil)
	if err != nil {
		t.Fatal(err)
	}
	check("crashed", a, hostnames, first)

	res, err := s.StartActualLRPs(ctx, []db.InstanceReport{{Key: key("app", 1), InstanceKey: cellB, NetInfo: net}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("batch start: %v %+v", err, res)
	}
	second := map[string]string{"source_id": "app-guid", "space": "s2"}
	check("batch start after the update", res[0].ActualLRP, hostnames, second)

	if _, err := s.EvacuateRunningActualLRP(ctx, key("app", 1), cellB, net); err != nil {
		t.Fatal(err)
	}
	all, err := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app", Index: ptr(int32(1))})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Presence == model.PresenceEvacuating {
			check("evacuating copy", &e, hostnames, second)
		}
	}

	unknown := model.ActualLRPKey{ProcessGUID: "app", Index: 2, Domain: "cf-apps"}
	a, err = s.StartActualLRP(ctx, unknown, model.ActualLRPInstanceKey{InstanceGUID: "ig-c", CellID: "cell-a"}, net, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("start of an instance the store did not know", a, hostnames, second)

	a, err = s.StartActualLRP(ctx, key("plain", 0), cellA, net, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("an LRP without either", a, nil, nil)
}

func ptr[T any](v T) *T { return &v }
