package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// An LRP scaled down and back up before its cells stopped the instances the scale-down
// retired keeps those instances: their retirement is withdrawn (routers told so), rather than
// their indices standing empty, slots taken, until the instances are gone and convergence
// fills them.
func TestScaleUpWithdrawsTheRetirementOfAScaleDown(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	for i := range 3 {
		makeRunning(t, s, "app", "app", i)
	}
	one, three := int32(1), int32(3)
	res, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &one})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToStop) != 2 || !res.ToStop[0].Retiring {
		t.Fatalf("the scale-down retires %+v", res.ToStop)
	}
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &three}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND state = 'RUNNING' AND NOT retiring`); n != 3 {
		t.Errorf("%d instances RUNNING and not retiring after the scale-up, want 3", n)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app'`); n != 3 {
		t.Errorf("%d instances, want 3: none created beside the kept ones", n)
	}
	if n := count(t, s, `SELECT count(*) FROM events WHERE name = $1 AND NOT (data->'after'->>'retiring')::boolean IS TRUE
  AND (data->'before'->>'retiring')::boolean`, model.EventActualLRPChanged); n != 2 {
		t.Errorf("%d events withdrawing a retirement, want 2", n)
	}
}

// An instance a rollout retired stays retiring through a scale-up: its index has the new
// instance that replaced it.
func TestScaleUpLeavesTheRetirementOfARollout(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	makeRunning(t, s, "app", "app", 0)
	addDefinition(t, s, "app", "v2")
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', previous_definition_id = 'app', healthy_definition_id = 'app'
WHERE process_guid = 'app'`)
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('app', 'v2', 0, 'domain', 'UNCLAIMED', 0, 'e')`)
	makeRunning(t, s, "app", "v2", 0)
	exec(t, s, `UPDATE actual_lrps SET retiring = true WHERE definition_id = 'app'`)
	two := int32(2)
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &two}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND instance_index = 0 AND retiring`); n != 1 {
		t.Errorf("the instance the rollout retired is no longer retiring")
	}
}
