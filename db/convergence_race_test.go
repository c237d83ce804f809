package db_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// lockWaiters counts the backends of the test's database waiting for a lock.
func lockWaiters(t *testing.T, s *db.Store) int {
	t.Helper()
	return count(t, s, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`)
}

// settle waits until the call whose result done carries has returned (true) or until at
// least waiters backends wait for a lock (false): either way the call has got as far as it
// can, which is what lets a test interleave transactions without sleeping.
func settle(t *testing.T, s *db.Store, c *call, waiters int) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			if c.err != nil {
				t.Fatal(c.err)
			}
			return true
		default:
		}
		if lockWaiters(t, s) >= waiters {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("neither returned nor waiting for a lock (%d waiters wanted)", waiters)
	return false
}

// call is a store call running in a goroutine of its own.
type call struct {
	done chan struct{}
	err  error
}

func run(f func() error) *call {
	c := &call{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = f()
	}()
	return c
}

// A scale-up during a rollout, while the first RUNNING instance of the new definition makes
// it healthy, must not meet a convergence pass at an index both want to fill: the pass reads
// the healthy definition and the free indices under the LRP's row lock, as every other
// writer of the LRP does, so the two fill an index once between them.
//
// The interleaving is forced: an uncommitted instance at the missing index (another
// transaction's) makes the pass wait in the middle of filling it; meanwhile the new
// definition starts RUNNING and the LRP is scaled up; then that transaction rolls back.
// Without the lock the pass still works from what it read before it waited — the old
// healthy definition, the index free — and fills the index beside the scale-up's instance
// of the new one.
func TestConvergeFillsAnIndexOnceDuringAScaleUp(t *testing.T) {
	s := dbtest.NewStore(t)
	putCell(t, s, "cell-1", true)
	putCell(t, s, "cell-b", true)
	desire(t, s, newLRP("app", 2))
	makeRunning(t, s, "app", "app", 0)
	makeRunning(t, s, "app", "app", 1)
	exec(t, s, `UPDATE desired_lrps SET healthy_definition_id = 'app'`)
	if _, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DesireInstance(ctx, "app", "v2", 0); err != nil {
		t.Fatal(err)
	}
	// Index 1 lost its instance (its cell reported it stopped): convergence must fill it.
	exec(t, s, `DELETE FROM actual_lrps WHERE instance_index = 1`)

	blocker, err := s.DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(ctx, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('app', 'app', 1, 'cf-apps', 'UNCLAIMED', 1, 'blocker')`); err != nil {
		t.Fatal(err)
	}

	var res *db.ConvergeResult
	pass := run(func() (err error) {
		res, err = s.Converge(ctx, db.ConvergeOptions{})
		return err
	})
	if settle(t, s, pass, 1) {
		t.Fatal("the pass did not wait for the uncommitted instance at index 1")
	}
	waiters := 1
	// v2 runs at index 0: the first RUNNING instance of the active definition makes it healthy.
	started := run(func() error {
		_, err := s.StartActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "v2", Index: 0, Domain: "cf-apps"}, cellB, net, nil)
		return err
	})
	if !settle(t, s, started, waiters+1) {
		waiters++
	}
	three := int32(3)
	scaled := run(func() error {
		_, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &three})
		return err
	})
	settle(t, s, scaled, waiters+1)
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i, c := range []*call{pass, started, scaled} {
		select {
		case <-c.done:
			if c.err != nil {
				t.Fatal(c.err)
			}
		case <-time.After(30 * time.Second):
			var act []string
			s.DB().SelectContext(ctx, &act, `SELECT coalesce(wait_event_type,'')||' '||state||' '||query FROM pg_stat_activity WHERE datname = current_database()`)
			t.Fatalf("writer %d never finished: %q", i, act)
		}
	}

	var defs []string
	if err := s.DB().SelectContext(ctx, &defs, `SELECT definition_id FROM actual_lrps
WHERE process_guid = 'app' AND instance_index = 1 AND presence = 'ORDINARY' AND NOT retiring ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 {
		t.Fatalf("index 1 holds instances of %v (pass: %+v): one index, one instance", defs, res)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE instance_index = 2 AND presence = 'ORDINARY'`); n != 1 {
		t.Fatalf("index 2 holds %d instances, want the scale-up's one", n)
	}
	if dep, _ := s.LRPDeploymentByProcessGUID(ctx, "app"); dep.HealthyDefinitionID != "v2" {
		t.Fatalf("healthy = %q, want v2", dep.HealthyDefinitionID)
	}
}

// putInstance stores an ordinary instance of def at index in state (on cell, unless it is
// UNCLAIMED or CRASHED), beside whatever the index holds.
func putInstance(t *testing.T, s *db.Store, guid, def string, index int, state, cell string) {
	t.Helper()
	if state == model.StateUnclaimed || state == model.StateCrashed {
		cell = ""
	}
	ig := ""
	if cell != "" {
		ig = "ig-" + def + "-" + cell
	}
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state,
    instance_guid, cell_id, since, modification_epoch)
VALUES ($1, $2, $3, 'cf-apps', $4, $5, $6, 1, 'e')
ON CONFLICT (process_guid, definition_id, instance_index, presence) DO UPDATE
SET state = EXCLUDED.state, instance_guid = EXCLUDED.instance_guid, cell_id = EXCLUDED.cell_id`,
		guid, def, index, state, ig, cell)
}

// ordinaryAt lists the definitions of the ordinary instances at an index that are not on
// their way out.
func ordinaryAt(t *testing.T, s *db.Store, guid string, index int) []string {
	t.Helper()
	var defs []string
	if err := s.DB().SelectContext(ctx, &defs, `SELECT definition_id FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = 'ORDINARY' AND NOT retiring
ORDER BY definition_id`, guid, index); err != nil {
		t.Fatal(err)
	}
	return defs
}

// Outside a rollout an index holds one instance; convergence keeps the one that serves best
// (RUNNING, then CLAIMED, then the healthy definition's) and stops the others. During a
// rollout the index being replaced legitimately holds the old definition's instance and the
// new one's (seed 000): the walk retires the old one once the new one runs, and convergence
// leaves them be.
func TestConvergeStopsDuplicatesAtAnIndex(t *testing.T) {
	s := dbtest.NewStore(t)
	putDomain(t, s, "cf-apps", true)
	putCell(t, s, "cell-1", true)
	putCell(t, s, "cell-2", true)
	desire(t, s, newLRP("app", 6))
	addDefinition(t, s, "app", "v2")
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = 'v2' WHERE process_guid = 'app'`)
	cases := []struct {
		index       int
		old, new    string // the states of the instances of app (the old definition) and v2
		keep        string
		removed     bool // the other one's record is deleted (else it is retiring, to stop)
		description string
	}{
		{0, model.StateRunning, model.StateUnclaimed, "app", true, "a running one beats an unclaimed one"},
		{1, model.StateUnclaimed, model.StateRunning, "v2", true, "whatever its definition"},
		{2, model.StateRunning, model.StateRunning, "v2", false, "both run: the healthy definition's stays"},
		{3, model.StateClaimed, model.StateCrashed, "app", true, "a claimed one beats a crashed one"},
		{4, model.StateClaimed, model.StateRunning, "v2", false, "a claimed one is stopped on its cell"},
	}
	for _, c := range cases {
		putInstance(t, s, "app", "app", c.index, c.old, "cell-1")
		putInstance(t, s, "app", "v2", c.index, c.new, "cell-2")
	}
	// Not duplicates: an instance on its way out, an evacuating one and a suspect one (whose
	// replacement is being started).
	putInstance(t, s, "app", "app", 5, model.StateClaimed, "cell-1")
	putInstance(t, s, "app", "v2", 5, model.StateRunning, "cell-2")
	exec(t, s, `UPDATE actual_lrps SET retiring = true WHERE instance_index = 5 AND definition_id = 'v2'`)
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, presence, domain, state,
    instance_guid, cell_id, since, modification_epoch)
VALUES ('app', 'app', 5, 'EVACUATING', 'cf-apps', 'RUNNING', 'ig-e', 'cell-2', 1, 'e'),
       ('app', 'app', 5, 'SUSPECT', 'cf-apps', 'RUNNING', 'ig-s', 'cell-2', 1, 'e')`)

	// LRPs in the middle of a rollout, in each state a rollout is in progress in, whose index
	// 0 holds the old instance and the new one.
	for _, state := range []string{model.RolloutActive, model.RolloutPaused, model.RolloutCanceling} {
		desire(t, s, newLRP(state, 2))
		putInstance(t, s, state, state, 0, model.StateRunning, "cell-1")
		putInstance(t, s, state, state, 1, model.StateRunning, "cell-1")
		addDefinition(t, s, state, "v2")
		exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = $1, previous_definition_id = $1
WHERE process_guid = $1`, state)
		exec(t, s, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), $1, 'update', $1, 'v2', $2, 2, 'rollout:'||$1)`, state, state)
		putInstance(t, s, state, "v2", 0, model.StateClaimed, "cell-2")
	}
	rolling := func() string {
		var out string
		if err := s.DB().GetContext(ctx, &out, `SELECT string_agg(a::text, E'\n' ORDER BY a::text)
FROM actual_lrps a WHERE process_guid <> 'app'`); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := rolling()
	removedBefore := events(t, s, model.EventActualLRPRemoved)

	res := converge(t, s, db.ConvergeOptions{})
	if res.DuplicatesRemoved != 3 || res.DuplicatesToStop != 2 {
		t.Fatalf("duplicates removed %d, to stop %d; want 3 and 2 (%+v)", res.DuplicatesRemoved, res.DuplicatesToStop, res)
	}
	stopped := map[string]bool{}
	for _, a := range res.ToStop {
		stopped[fmt.Sprintf("%s/%s/%d", a.ProcessGUID, a.DefinitionID, a.Index)] = true
	}
	for _, c := range cases {
		t.Run(c.description, func(t *testing.T) {
			if got := ordinaryAt(t, s, "app", c.index); len(got) != 1 || got[0] != c.keep {
				t.Fatalf("index %d holds %v, want only %s", c.index, got, c.keep)
			}
			other := "app"
			if c.keep == "app" {
				other = "v2"
			}
			stored := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND instance_index = $1
AND definition_id = $2 AND presence = 'ORDINARY'`, c.index, other) == 1
			toStop := stopped[fmt.Sprintf("app/%s/%d", other, c.index)]
			if c.removed && (stored || toStop) {
				t.Fatalf("the %s instance at %d: stored %v, to stop %v; want deleted", other, c.index, stored, toStop)
			}
			if !c.removed && (!stored || !toStop) {
				t.Fatalf("the %s instance at %d: stored %v, to stop %v; want retiring and handed to its cell", other, c.index, stored, toStop)
			}
		})
	}
	if got := ordinaryAt(t, s, "app", 5); len(got) != 1 || got[0] != "app" {
		t.Fatalf("index 5 holds %v", got)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE instance_index = 5 AND process_guid = 'app'`); n != 4 {
		t.Fatalf("index 5 holds %d records, want its 4 untouched", n)
	}
	if rolling() != before {
		t.Fatal("convergence touched the instances of a rollout in progress")
	}
	if n := events(t, s, model.EventActualLRPRemoved) - removedBefore; n != 3 {
		t.Fatalf("removed events = %d, want 3", n)
	}

	// The next pass removes nothing more; it asks again for the stops (as for every retiring
	// instance) until the cells report them.
	snap := snapshot(t, s)
	res = converge(t, s, db.ConvergeOptions{})
	if res.DuplicatesRemoved != 0 || res.DuplicatesToStop != 0 || snapshot(t, s) != snap {
		t.Fatalf("second pass = %+v", res)
	}
	for _, c := range cases {
		if !c.removed {
			other := "app"
			found := false
			for _, a := range res.ToStop {
				found = found || (a.DefinitionID == other && a.Index == int32(c.index))
			}
			if !found {
				t.Fatalf("the second pass does not ask again to stop app/%d: %+v", c.index, res.ToStop)
			}
		}
	}
}

// The pass locks an LRP before it fills its indices; a cell's report of an instance the store
// did not know locks them the other way round (the instance, then the LRP, to make its
// definition healthy). When the two meet, PostgreSQL aborts one of them; the pass, aborted
// here because it waited first, tries again and finds the index filled.
//
// Which of two deadlocked transactions PostgreSQL aborts depends on whose deadlock_timeout
// runs out first once both wait: the test makes it the pass's, whatever the machine's load,
// by giving new sessions of its database 5 s (the pass waits first, and the report starts
// waiting well within that) and the report a minute. That needs a superuser (the throwaway
// cluster's; a DATABASE_URL of a plain role skips the test, saying so).
func TestConvergeRetriesWhenADeadlockAbortsIt(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	exec(t, s, `DELETE FROM actual_lrps WHERE instance_index = 1`)
	if _, err := s.DB().ExecContext(ctx, `DO $$ BEGIN
EXECUTE format('ALTER DATABASE %I SET deadlock_timeout = %L', current_database(), '5s'); END $$`); err != nil {
		t.Skipf("pacing deadlock detection needs a superuser: %v", err)
	}
	s.DB().SetMaxIdleConns(0) // every session from here on is new, with the database's setting

	report, err := s.DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer report.Rollback()
	if _, err := report.ExecContext(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := report.ExecContext(ctx, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state,
    instance_guid, cell_id, since, modification_epoch)
VALUES ('app', 'app', 1, 'cf-apps', 'RUNNING', 'ig', 'cell-1', 1, 'e')`); err != nil {
		t.Fatal(err)
	}
	var res *db.ConvergeResult
	pass := run(func() (err error) {
		res, err = s.Converge(ctx, db.ConvergeOptions{})
		return err
	})
	if settle(t, s, pass, 1) {
		t.Fatal("the pass did not wait for the reported instance")
	}
	if _, err := report.ExecContext(ctx, `UPDATE desired_lrps SET healthy_definition_id = 'app' WHERE process_guid = 'app'`); err != nil {
		t.Fatalf("the report was aborted, not the pass: %v", err)
	}
	if err := report.Commit(); err != nil {
		t.Fatal(err)
	}
	<-pass.done
	if pass.err != nil {
		t.Fatalf("the pass failed instead of trying again: %v", pass.err)
	}
	if res.MissingIndices != 0 {
		t.Fatalf("the pass filled %d indices; the report had filled index 1", res.MissingIndices)
	}
	if got := ordinaryAt(t, s, "app", 1); len(got) != 1 {
		t.Fatalf("index 1 holds %v", got)
	}
}
