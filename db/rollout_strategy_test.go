package db_test

import (
	"encoding/json"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func strategy(t *testing.T, raw string) *model.RolloutStrategy {
	t.Helper()
	var s model.RolloutStrategy
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func strategyJSON(t *testing.T, s *model.RolloutStrategy) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An LRP's default strategy is stored on desire, changed by an update, and read back by every
// read of the LRP; a rollout records its strategy resolved over it at its start.
func TestRolloutStrategyIsStoredAndResolved(t *testing.T) {
	s := dbtest.NewStore(t)
	lrp := newLRP("app", 2)
	lrp.RolloutStrategy = strategy(t, `{"max_in_flight": 2, "index_deadline_ms": 60000}`)
	desire(t, s, lrp)
	d, err := s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if got := strategyJSON(t, d.RolloutStrategy); got != `{"max_in_flight":2,"index_deadline_ms":60000}` {
		t.Fatalf("stored default = %s", got)
	}
	server := model.DefaultRolloutStrategy()
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2"),
		Strategy: strategy(t, `{"max_in_flight": 3}`), Defaults: &server})
	if err != nil {
		t.Fatal(err)
	}
	want := server
	want.MaxInFlight, want.IndexDeadlineMS = ptr(int32(3)), ptr(int64(60000))
	if got := strategyJSON(t, st.Rollout.Strategy); got != strategyJSON(t, &want) {
		t.Fatalf("resolved:\n got %s\nwant %s", got, strategyJSON(t, &want))
	}
	r, err := s.RolloutByProcessGUID(ctx, "app")
	if err != nil || strategyJSON(t, r.Strategy) != strategyJSON(t, &want) {
		t.Fatalf("read back: %+v %v", r, err)
	}

	// An update beside a new definition sets the default its own rollout resolves over.
	exec(t, s, `UPDATE rollouts SET state = 'completed', finished_at = now()`)
	u := &model.DesiredLRPUpdate{Definition: newDef("v3"), RolloutStrategy: strategy(t, `{"max_in_flight": 5}`)}
	st, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: u.Definition,
		Update: &model.DesiredLRPUpdate{RolloutStrategy: u.RolloutStrategy}, Defaults: &server})
	if err != nil {
		t.Fatal(err)
	}
	if *st.Rollout.Strategy.MaxInFlight != 5 || *st.Rollout.Strategy.IndexDeadlineMS != 300000 {
		t.Fatalf("resolved over the new default: %s", strategyJSON(t, st.Rollout.Strategy))
	}
	if strategyJSON(t, st.Desired.RolloutStrategy) != `{"max_in_flight":5}` {
		t.Fatalf("default after the update: %s", strategyJSON(t, st.Desired.RolloutStrategy))
	}

	// An update alone replaces the default; lists read it too.
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{RolloutStrategy: strategy(t, `{"on_failure": "continue"}`)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.DesiredLRPs(ctx, model.DesiredLRPFilter{})
	if err != nil || len(list) != 1 || strategyJSON(t, list[0].RolloutStrategy) != `{"on_failure":"continue"}` {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// Without any strategy (an LRP without a default, a server that passes none: rollouts started
// by the previous release) the rollout's strategy is NULL and reads back as none.
func TestRolloutWithoutStrategyRecordsNone(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rollout.Phase != model.PhaseWalking {
		t.Fatalf("phase of an active rollout = %q", st.Rollout.Phase)
	}
	if st.Rollout.Strategy != nil || st.Desired.RolloutStrategy != nil {
		t.Fatalf("strategy %+v, default %+v", st.Rollout.Strategy, st.Desired.RolloutStrategy)
	}
	if n := count(t, s, `SELECT count(*) FROM rollouts WHERE strategy IS NULL`); n != 1 {
		t.Fatalf("rollouts without a strategy = %d", n)
	}
}
