package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func TestRolloutReads(t *testing.T) {
	s := dbtest.NewStore(t)
	_, err := s.RolloutByProcessGUID(ctx, "a")
	wantType(t, err, model.ErrResourceNotFound)

	ins := `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances,
    given_up_indices, started_at, finished_at, workflow_id)
VALUES (gen_random_uuid(), $1, 'update', 'v1', $2, $3, 4, $4, now() - $5 * interval '1 minute',
    CASE WHEN $3 IN ('active', 'paused', 'canceling') THEN NULL ELSE now() END, 'rollout:' || $1)`
	exec(t, s, ins, "a", "v2", "completed", "{}", 10)
	exec(t, s, ins, "a", "v3", "active", "{2}", 5)
	exec(t, s, ins, "a", "v4", "failed", "{}", 1)
	exec(t, s, ins, "b", "v2", "canceled", "{}", 1)

	all, err := s.Rollouts(ctx, model.RolloutFilter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("rollouts = %d, %v", len(all), err)
	}
	active, err := s.Rollouts(ctx, model.RolloutFilter{Active: true})
	if err != nil || len(active) != 1 || active[0].ToDefinitionID != "v3" || len(active[0].GivenUpIndices) != 1 || active[0].GivenUpIndices[0] != 2 {
		t.Fatalf("active rollouts = %+v, %v", active, err)
	}
	ofB, _ := s.Rollouts(ctx, model.RolloutFilter{ProcessGUID: "b"})
	if len(ofB) != 1 || ofB[0].FinishedAt == 0 || ofB[0].StartedAt == 0 {
		t.Fatalf("rollouts of b = %+v", ofB)
	}
	// Get prefers the rollout in progress over a newer finished one.
	r, err := s.RolloutByProcessGUID(ctx, "a")
	if err != nil || r.ToDefinitionID != "v3" || r.WorkflowID != "rollout:a" || r.FinishedAt != 0 {
		t.Fatalf("rollout of a = %+v, %v", r, err)
	}
	exec(t, s, `UPDATE rollouts SET state = 'completed', finished_at = now() WHERE to_definition_id = 'v3'`)
	if r, _ := s.RolloutByProcessGUID(ctx, "a"); r.ToDefinitionID != "v4" {
		t.Fatalf("latest rollout of a = %s, want v4", r.ToDefinitionID)
	}
}
