package db_test

import (
	"maps"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// A rollout sets its LRP's split under a new generation, with its event; setting the same
// split again is not a new generation; the rollout's end gives the LRP back to routing by
// instances, also with its event, and a finished rollout cannot set a split.
func TestTrafficSplitGenerationsAndTheRolloutsEnd(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 4))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	id := st.Rollout.ID
	w := map[string]int32{"v2": 10, st.Rollout.FromDefinitionID: 90}
	split, err := s.SetTraffic(ctx, id, w)
	if err != nil || split.Generation != 1 || !maps.Equal(split.Weights, w) {
		t.Fatalf("first split: %+v %v", split, err)
	}
	again, err := s.SetTraffic(ctx, id, w)
	if err != nil || again.Generation != 1 {
		t.Fatalf("the same split again: %+v %v", again, err)
	}
	if n := count(t, s, `SELECT count(*) FROM events WHERE name = 'traffic_changed'`); n != 1 {
		t.Fatalf("%d traffic events after one change", n)
	}
	dep, err := s.LRPDeploymentByProcessGUID(ctx, "app")
	if err != nil || dep.Traffic == nil || dep.Traffic.Generation != 1 || dep.Traffic.Weights["v2"] != 10 {
		t.Fatalf("the LRP reads %+v %v", dep.Traffic, err)
	}
	if err := s.RecordTrafficAcked(ctx, id, split); err != nil {
		t.Fatal(err)
	}
	r, _ := s.RolloutByProcessGUID(ctx, "app")
	if r.TrafficGeneration != 1 || r.Traffic["v2"] != 10 {
		t.Fatalf("the rollout reports traffic %v at %d", r.Traffic, r.TrafficGeneration)
	}
	if _, err := s.FinishRollout(ctx, id, model.RolloutCompleted, ""); err != nil {
		t.Fatal(err)
	}
	dep, _ = s.LRPDeploymentByProcessGUID(ctx, "app")
	if dep.Traffic.Weighted() || dep.Traffic.Generation != 2 {
		t.Fatalf("after the rollout's end the LRP reads %+v", dep.Traffic)
	}
	r, _ = s.RolloutByProcessGUID(ctx, "app")
	if r.Traffic != nil {
		t.Fatalf("a finished rollout reports traffic %v", r.Traffic)
	}
	if n := count(t, s, `SELECT count(*) FROM events WHERE name = 'traffic_changed'`); n != 2 {
		t.Fatalf("%d traffic events after the end", n)
	}
	_, err = s.SetTraffic(ctx, id, w)
	wantType(t, err, model.ErrNoUpdateInProgress)
}

// A step waits for the live routers that route by an older generation; a router silent for
// longer than the liveness bound does not hold it.
func TestTrafficWaitsForEveryLiveRouter(t *testing.T) {
	s := dbtest.NewStore(t)
	report := func(id string, gen int64) {
		t.Helper()
		if err := s.ReportRouter(ctx, model.RouterReport{RouterID: id, StartedAt: 1, Applied: map[string]int64{"app": gen}}); err != nil {
			t.Fatal(err)
		}
	}
	report("r1", 3)
	report("r2", 2)
	waiting, err := s.TrafficWaiting(ctx, "app", 3, 5*time.Second)
	if err != nil || len(waiting) != 1 || waiting[0] != "r2" {
		t.Fatalf("waiting = %v %v", waiting, err)
	}
	report("r2", 4)
	if waiting, _ := s.TrafficWaiting(ctx, "app", 3, 5*time.Second); len(waiting) != 0 {
		t.Fatalf("waiting after every router acknowledged: %v", waiting)
	}
	exec(t, s, `UPDATE routers SET seen_at = now() - interval '1 minute' WHERE router_id = 'r1'`)
	if waiting, _ := s.TrafficWaiting(ctx, "app", 5, 5*time.Second); len(waiting) != 1 || waiting[0] != "r2" {
		t.Fatalf("a silent router still waited for: %v", waiting)
	}
}

// Telemetry merges series into what a router reported before, and replaces it all when the
// router started again; reads are by LRP.
func TestRouterTelemetryMergesAndRestarts(t *testing.T) {
	s := dbtest.NewStore(t)
	series := func(guid, def string, n int64) model.RouteTelemetry {
		l := make([]int64, len(model.LatencyBounds)+1)
		l[2] = n
		return model.RouteTelemetry{ProcessGUID: guid, DefinitionID: def, Requests: n, Latency: l}
	}
	send := func(started int64, ts ...model.RouteTelemetry) {
		t.Helper()
		if err := s.ReportRouter(ctx, model.RouterReport{RouterID: "r1", StartedAt: started, Telemetry: ts}); err != nil {
			t.Fatal(err)
		}
	}
	send(1000, series("app", "v1", 5), series("app", "v2", 1), series("app_other", "v1", 7))
	send(1000, series("app", "v2", 3))
	got, err := s.RouteTelemetry(ctx, "app", 5*time.Second)
	if err != nil || len(got) != 2 || got[0].DefinitionID != "v1" || got[0].Requests != 5 || got[1].Requests != 3 {
		t.Fatalf("merged: %+v %v", got, err)
	}
	send(2000, series("app", "v1", 1))
	got, _ = s.RouteTelemetry(ctx, "app", 5*time.Second)
	if len(got) != 1 || got[0].Requests != 1 {
		t.Fatalf("after a restart: %+v", got)
	}
}

// An abort withdraws the new definition's weight in the store at once when the LRP routes by
// weight, and leaves an LRP routed by instances as it is; the workflow's own weight of 0
// afterwards is the same split, under the same generation.
func TestWithdrawWeightOnlyFromAWeightedSplit(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 4))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	id := st.Rollout.ID
	if changed, err := s.WithdrawWeight(ctx, id); err != nil || changed {
		t.Fatalf("an LRP routed by instances: changed %v, %v", changed, err)
	}
	if _, err := s.SetTraffic(ctx, id, map[string]int32{"v2": 10}); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.WithdrawWeight(ctx, id); err != nil || !changed {
		t.Fatalf("a weighted LRP: changed %v, %v", changed, err)
	}
	split, err := s.SetTraffic(ctx, id, map[string]int32{"v2": 0})
	if err != nil || split.Generation != 2 {
		t.Fatalf("the workflow's weight of 0 after the withdrawal: %+v %v", split, err)
	}
	if changed, _ := s.WithdrawWeight(ctx, id); changed {
		t.Fatal("a second withdrawal changed the split")
	}
}

// A weight the LRP's instances cannot carry at all is refused at the start, nothing written.
func TestWeightTheInstancesCannotCarryIsRefused(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	_, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2"),
		Strategy: strategy(t, `{"canary": {"steps": [{"weight": 10}]}}`)})
	wantType(t, err, model.ErrInvalidRequest)
	if n := count(t, s, `SELECT count(*) FROM rollouts`); n != 0 {
		t.Fatalf("%d rollouts after a refused start", n)
	}
	if n := count(t, s, `SELECT count(*) FROM lrp_definitions WHERE definition_id = 'v2'`); n != 0 {
		t.Fatal("the refused start stored its definition")
	}
}

// A rollout's end removes its analysis marks and keeps its verdicts.
func TestRolloutEndRemovesItsMarks(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	id := st.Rollout.ID
	for _, name := range []string{"step-0/0", "step-0/1"} {
		if _, err := s.TakeAnalysisMark(ctx, id, "app", name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordVerdict(ctx, id, model.AnalysisVerdict{Window: "step-0/1", Verdict: model.VerdictPass}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRollout(ctx, id, model.RolloutCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM analysis_marks`); n != 0 {
		t.Fatalf("%d marks after the rollout's end", n)
	}
	if r, _ := s.RolloutByProcessGUID(ctx, "app"); len(r.Analysis) != 1 {
		t.Fatalf("verdicts after the end: %+v", r.Analysis)
	}
}

// A window is the difference of two marks, router by router: a router that started again
// in between counts from its start; crashes are those the log recorded between the marks.
func TestAnalysisWindowSubtractsMarks(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	id := st.Rollout.ID
	series := func(def string, n, errs int64, bucket int) model.RouteTelemetry {
		l := make([]int64, len(model.LatencyBounds)+1)
		l[bucket] = n
		return model.RouteTelemetry{ProcessGUID: "app", DefinitionID: def, Requests: n, Errors: errs, Latency: l}
	}
	report := func(started int64, ts ...model.RouteTelemetry) {
		t.Helper()
		if err := s.ReportRouter(ctx, model.RouterReport{RouterID: "r1", StartedAt: started, Telemetry: ts}); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(name string) {
		t.Helper()
		if _, err := s.TakeAnalysisMark(ctx, id, "app", name); err != nil {
			t.Fatal(err)
		}
	}
	report(1000, series("app", 10, 0, 4), series("v2", 2, 0, 4))
	mark("m0")
	report(1000, series("app", 30, 0, 4), series("v2", 6, 1, 12))
	exec(t, s, `INSERT INTO events (name, data, process_guid) VALUES ('actual_lrp_instance_crashed', '{"definition_id": "v2"}', 'app')`)
	mark("m1")
	report(2000, series("app", 4, 0, 4))
	mark("m2")
	w, err := s.AnalysisWindow(ctx, id, "app", "v2", "m0", "m1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Canary.Requests != 4 || w.Canary.ErrorRate != 0.25 || w.Baseline.Requests != 20 || w.Canary.Crashes != 1 || w.Baseline.Crashes != 0 {
		t.Fatalf("window m0..m1: canary %+v, baseline %+v", w.Canary, w.Baseline)
	}
	if w.Canary.P99MS <= model.LatencyBounds[11] || w.Canary.P99MS > model.LatencyBounds[12] {
		t.Fatalf("the canary's p99 %v is not in its bucket", w.Canary.P99MS)
	}
	w, err = s.AnalysisWindow(ctx, id, "app", "v2", "m1", "m2")
	if err != nil {
		t.Fatal(err)
	}
	if w.Baseline.Requests != 4 || w.Canary.Requests != 0 {
		t.Fatalf("across a router's restart: canary %+v, baseline %+v", w.Canary, w.Baseline)
	}
	_, err = s.AnalysisWindow(ctx, id, "app", "v2", "m0", "never")
	wantType(t, err, model.ErrResourceNotFound)
}
