package db_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

func TestMigrateConcurrentlyAndTwice(t *testing.T) {
	url := dbtest.NewEmptyURL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := db.Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.Migrate(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	s, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if n := count(t, s, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN
        ('domains','desired_lrps','lrp_definitions','actual_lrps','rollouts','cells')`); n != 6 {
		t.Fatalf("tables = %d, want 6", n)
	}
}

// The seed-000 invariants hold inside the database, whatever Go code does.
func TestSchemaEnforcesDefinitionInvariants(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("p1", 1))
	desire(t, s, newLRP("p2", 1))
	addDefinition(t, s, "p1", "v2")

	bad := map[string]string{
		"active names a missing definition":      `UPDATE desired_lrps SET active_definition_id = 'nope' WHERE process_guid = 'p1'`,
		"healthy names a missing definition":     `UPDATE desired_lrps SET healthy_definition_id = 'nope' WHERE process_guid = 'p1'`,
		"active names another LRP's definition":  `UPDATE desired_lrps SET active_definition_id = 'p2' WHERE process_guid = 'p1'`,
		"the active definition is retired":       `UPDATE lrp_definitions SET live = false, retired_at = now() WHERE process_guid = 'p1' AND definition_id = 'p1'`,
		"the active definition is deleted":       `DELETE FROM lrp_definitions WHERE process_guid = 'p1' AND definition_id = 'p1'`,
		"a definition id is reused":              `INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info) VALUES ('p1', 'v2', 'x:y', 1, 1, '{}')`,
		"a retired definition still marked live": `UPDATE lrp_definitions SET retired_at = now() WHERE definition_id = 'v2'`,
		"two instances in one slot":              `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch) VALUES ('p1', 'p1', 0, 'd', 'UNCLAIMED', 0, 'e')`,
		"an UNCLAIMED instance holds a cell":     `UPDATE actual_lrps SET cell_id = 'c' WHERE process_guid = 'p1'`,
		"an unknown state":                       `UPDATE actual_lrps SET state = 'STARTING' WHERE process_guid = 'p1'`,
	}
	for name, stmt := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := s.DB().ExecContext(ctx, stmt); err == nil {
				t.Fatalf("accepted: %s", stmt)
			}
		})
	}

	t.Run("healthy may name a live definition and retiring a spare one works", func(t *testing.T) {
		exec(t, s, `UPDATE desired_lrps SET healthy_definition_id = 'p1' WHERE process_guid = 'p1'`)
		exec(t, s, `UPDATE lrp_definitions SET live = false, retired_at = now() WHERE definition_id = 'v2'`)
	})
	t.Run("one rollout in progress per LRP", func(t *testing.T) {
		ins := `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'p1', 'update', 'p1', 'v2', $1, 1, 'rollout:p1')`
		exec(t, s, ins, "completed")
		exec(t, s, ins, "active")
		if _, err := s.DB().ExecContext(ctx, ins, "canceling"); err == nil {
			t.Fatal("a second rollout in progress was accepted")
		}
	})
}

// TestSessionSettings: the store's connections run without JIT compilation (it costs more
// than it saves on every query over the whole fleet) unless the URL asks for it.
func TestSessionSettings(t *testing.T) {
	url := dbtest.NewURL(t)
	s, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if jit := count(t, s, `SELECT (current_setting('jit') = 'off')::int`); jit != 1 {
		t.Fatalf("jit is on in the store's sessions")
	}
	withJIT, err := db.Open(ctx, url+sep(url)+"jit=on")
	if err != nil {
		t.Fatal(err)
	}
	defer withJIT.Close()
	if jit := count(t, withJIT, `SELECT (current_setting('jit') = 'on')::int`); jit != 1 {
		t.Fatalf("jit=on in the URL was not kept")
	}
}

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}
