package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// RetireInstance (an interrupted or given-up step) keeps an instance that is all its index
// has while the LRP wants the index — one a scale-up created on the rollout's target — and
// retires it beside an old instance, or beyond the count.
func TestRetireInstanceKeepsTheOnlyInstanceOfAWantedIndex(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	makeRunning(t, s, "app", "app", 0)
	addDefinition(t, s, "app", "v2")
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('app', 'v2', 0, 'domain', 'UNCLAIMED', 0, 'e0'), ('app', 'v2', 2, 'domain', 'UNCLAIMED', 0, 'e2')`)
	exec(t, s, `DELETE FROM actual_lrps WHERE process_guid = 'app' AND definition_id = 'app' AND instance_index = 1`)
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('app', 'v2', 1, 'domain', 'UNCLAIMED', 0, 'e1')`)
	makeRunning(t, s, "app", "v2", 1)

	for index, kept := range map[int32]bool{0: false, 1: true, 2: false} {
		if _, err := s.RetireInstance(ctx, "app", "v2", index); err != nil {
			t.Fatal(err)
		}
		n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = $1 AND NOT retiring`, index)
		if kept != (n == 1) {
			t.Errorf("index %d: %d instance of v2 left serving, want kept=%v", index, n, kept)
		}
	}
}
