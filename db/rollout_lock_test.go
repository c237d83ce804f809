package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// Finishing a rollout takes the LRP's row before the rollout's, as a rollout's start does:
// a start that holds the LRP and wants the rollout waits for the finish (or the finish for
// it), where the opposite order deadlocked and PostgreSQL aborted one of them.
func TestFinishRolloutLocksInTheOrderOfAStart(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	addDefinition(t, s, "app", "v2")
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', previous_definition_id = 'app' WHERE process_guid = 'app'`)
	var id string
	if err := s.DB().GetContext(ctx, &id, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'app', 'update', 'app', 'v2', 'active', 1, 'rollout:app') RETURNING id`); err != nil {
		t.Fatal(err)
	}

	// A start's order: the LRP, then its rollouts.
	start, err := s.DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer start.Rollback()
	start.MustExec(`SELECT 1 FROM desired_lrps WHERE process_guid = 'app' FOR UPDATE`)
	finished := make(chan error, 1)
	go func() {
		_, err := s.FinishRollout(ctx, id, model.RolloutCompleted, "")
		finished <- err
	}()
	time.Sleep(300 * time.Millisecond) // the finish takes what it can meanwhile
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := start.ExecContext(lctx, `SELECT 1 FROM rollouts WHERE process_guid = 'app' FOR UPDATE`); err != nil {
		t.Fatalf("the start could not lock the rollout: %v", err)
	}
	if err := start.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Fatalf("finish: %v", err)
	}
}
