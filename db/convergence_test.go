package db_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func converge(t *testing.T, s *db.Store, opts db.ConvergeOptions) *db.ConvergeResult {
	t.Helper()
	res, err := s.Converge(ctx, opts)
	if err != nil {
		t.Fatalf("Converge: %v", err)
	}
	return res
}

// putCell records a cell whose presence is fresh, or expired a minute ago.
func putCell(t *testing.T, s *db.Store, id string, fresh bool) {
	t.Helper()
	exec(t, s, `INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ($1, 'z1', 'http://127.0.0.1:1', 1024, 1024, 100, now() + CASE WHEN $2 THEN interval '1 hour' ELSE interval '-1 minute' END)
ON CONFLICT (cell_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`, id, fresh)
}

// putDomain marks a domain fresh for an hour, or expired a minute ago.
func putDomain(t *testing.T, s *db.Store, name string, fresh bool) {
	t.Helper()
	exec(t, s, `INSERT INTO domains (name, expires_at)
VALUES ($1, now() + CASE WHEN $2 THEN interval '1 hour' ELSE interval '-1 minute' END)
ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at`, name, fresh)
}

// placeOn puts the ordinary instance at index in state on a cell.
func placeOn(t *testing.T, s *db.Store, guid string, index int, state, cell string) {
	t.Helper()
	exec(t, s, `UPDATE actual_lrps SET state = $3, cell_id = $4, instance_guid = 'ig-'||$4||'-'||instance_index,
    address = '10.0.0.1', ports = '[{"container_port":8080,"host_port":61000}]'
WHERE process_guid = $1 AND instance_index = $2 AND presence = 'ORDINARY'`, guid, index, state, cell)
}

func instanceState(t *testing.T, s *db.Store, guid string, index int, presence string) string {
	t.Helper()
	var st []string
	if err := s.DB().SelectContext(ctx, &st, `SELECT state FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = $3`, guid, index, presence); err != nil {
		t.Fatal(err)
	}
	if len(st) == 0 {
		return "none"
	}
	return st[0]
}

func eventCount(t *testing.T, s *db.Store) int { return count(t, s, `SELECT count(*) FROM events`) }

// snapshot is every instance and definition as text, to prove a pass changed nothing.
func snapshot(t *testing.T, s *db.Store) string {
	t.Helper()
	var out string
	if err := s.DB().GetContext(ctx, &out, `SELECT coalesce((SELECT string_agg(a::text, E'\n' ORDER BY a::text) FROM actual_lrps a), '')
    || coalesce((SELECT string_agg(d.definition_id || d.live::text, ',' ORDER BY d.definition_id) FROM lrp_definitions d), '')`); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConvergeMissingCells(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	putCell(t, s, "gone", false)
	putCell(t, s, "alive", true)
	placeOn(t, s, "app", 0, model.StateRunning, "gone")
	placeOn(t, s, "app", 1, model.StateClaimed, "gone")
	placeOn(t, s, "app", 2, model.StateRunning, "alive")
	exec(t, s, `UPDATE actual_lrps SET crash_count = 2 WHERE instance_index = 0`)
	before := eventCount(t, s)

	res := converge(t, s, db.ConvergeOptions{})
	if res.MissingCellClaims != 1 || res.Suspected != 1 || res.MissingIndices != 0 || len(res.ToStop) != 0 {
		t.Fatalf("result = %+v", res)
	}
	lrps, _ := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app"})
	got := map[string]model.ActualLRP{}
	for _, a := range lrps {
		got[fmt.Sprintf("%d/%s", a.Index, a.Presence)] = a
	}
	if a := got["0/SUSPECT"]; a.State != model.StateRunning || a.CellID != "gone" || a.ModificationTag.Index != 1 {
		t.Fatalf("the running instance must stay as it is, as SUSPECT: %+v", a)
	}
	if a := got["0/ORDINARY"]; a.State != model.StateUnclaimed || a.CrashCount != 2 || a.CellID != "" || a.DefinitionID != "app" {
		t.Fatalf("the replacement = %+v", a)
	}
	if a := got["1/ORDINARY"]; a.State != model.StateUnclaimed || a.CellID != "" || a.InstanceGUID != "" || a.Address != "" || len(a.Ports) != 0 {
		t.Fatalf("the claimed instance must be unclaimed with its key and net info cleared: %+v", a)
	}
	if a := got["2/ORDINARY"]; a.State != model.StateRunning || a.CellID != "alive" {
		t.Fatalf("an instance on a fresh cell must be untouched: %+v", a)
	}
	if n := eventCount(t, s) - before; n != 3 {
		t.Fatalf("events = %d, want 2 changed + 1 created", n)
	}

	// The cell comes back while the replacement is still being placed: the suspect stays.
	putCell(t, s, "gone", true)
	snap, n := snapshot(t, s), eventCount(t, s)
	if res := converge(t, s, db.ConvergeOptions{}); res.SuspectsRemoved != 0 || res.Suspected != 0 || len(res.ToStop) != 0 {
		t.Fatalf("result = %+v", res)
	}
	if snapshot(t, s) != snap || eventCount(t, s) != n {
		t.Fatal("a pass with nothing to do changed something")
	}

	// The replacement runs: the suspect goes, and its cell is told to stop it.
	placeOn(t, s, "app", 0, model.StateRunning, "alive")
	res = converge(t, s, db.ConvergeOptions{})
	if res.SuspectsRemoved != 1 || len(res.ToStop) != 1 || res.ToStop[0].CellID != "gone" || res.ToStop[0].Presence != model.PresenceSuspect {
		t.Fatalf("result = %+v", res)
	}
	if instanceState(t, s, "app", 0, model.PresenceSuspect) != "none" {
		t.Fatal("the resolved suspect is still stored")
	}
}

func TestConvergeMissingIndices(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 4))
	desire(t, s, newLRP("fresh", 2))
	// app: v2 is active, but only app has ever run: replacements use the healthy definition.
	addDefinition(t, s, "app", "v2")
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = 'app' WHERE process_guid = 'app'`)
	exec(t, s, `DELETE FROM actual_lrps WHERE process_guid = 'app' AND instance_index IN (1, 3)`)
	// An index served by another definition (mid-rollout) is not missing.
	exec(t, s, `UPDATE actual_lrps SET definition_id = 'v2' WHERE process_guid = 'app' AND instance_index = 2`)
	// fresh has never run: its active definition is used.
	exec(t, s, `DELETE FROM actual_lrps WHERE process_guid = 'fresh' AND instance_index = 0`)
	// A suspect does not fill its index.
	exec(t, s, `UPDATE actual_lrps SET presence = 'SUSPECT' WHERE process_guid = 'fresh' AND instance_index = 1`)

	res := converge(t, s, db.ConvergeOptions{})
	if res.MissingIndices != 4 {
		t.Fatalf("missing indices = %d, want 4 (%+v)", res.MissingIndices, res)
	}
	for _, c := range []struct {
		guid  string
		index int
		def   string
	}{{"app", 1, "app"}, {"app", 3, "app"}, {"fresh", 0, "fresh"}, {"fresh", 1, "fresh"}} {
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = $1 AND instance_index = $2
AND definition_id = $3 AND presence = 'ORDINARY' AND state = 'UNCLAIMED'`, c.guid, c.index, c.def); n != 1 {
			t.Errorf("%s/%d: no UNCLAIMED instance of %s", c.guid, c.index, c.def)
		}
	}
	if n := events(t, s, model.EventActualLRPCreated); n != 6+4 {
		t.Fatalf("created events = %d, want 10", n)
	}
}

func TestConvergeExtrasOnlyInFreshDomains(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	desire(t, s, newLRP("removed", 2))
	putCell(t, s, "cell-1", true)
	putCell(t, s, "dead", false)
	placeOn(t, s, "app", 1, model.StateRunning, "cell-1")
	placeOn(t, s, "app", 2, model.StateClaimed, "cell-1")
	placeOn(t, s, "removed", 0, model.StateRunning, "dead")
	exec(t, s, `UPDATE actual_lrps SET state = 'CRASHED', crash_count = 5 WHERE process_guid = 'removed' AND instance_index = 1`)
	// Scale app to 1 and forget removed without stopping anything, as a lost database would.
	exec(t, s, `UPDATE desired_lrps SET instances = 1 WHERE process_guid = 'app'`)
	exec(t, s, `DELETE FROM desired_lrps WHERE process_guid = 'removed'`)
	// An evacuating extra belongs to the evacuation protocol.
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, presence, domain, state,
    instance_guid, cell_id, since, modification_epoch)
VALUES ('app', 'app', 2, 'EVACUATING', 'cf-apps', 'RUNNING', 'ig-e', 'cell-1', 1, 'e')`)

	putDomain(t, s, "cf-apps", false)
	snap := snapshot(t, s)
	res := converge(t, s, db.ConvergeOptions{})
	if res.ExtrasRemoved != 0 || res.ExtrasToStop != 0 || len(res.ToStop) != 0 || res.Suspected != 0 || snapshot(t, s) != snap {
		t.Fatalf("a stale domain's instances were touched: %+v", res)
	}

	putDomain(t, s, "cf-apps", true)
	res = converge(t, s, db.ConvergeOptions{})
	// Deleted: removed/1 (CRASHED) and removed/0 (RUNNING on a dead cell: nobody will report it).
	// Returned to stop: app/1 and app/2 (on a fresh cell), and removed/0 in case its cell returns.
	if res.ExtrasRemoved != 2 || res.ExtrasToStop != 2 || len(res.ToStop) != 3 {
		t.Fatalf("result = %+v", res)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'removed'`); n != 0 {
		t.Fatalf("%d records of the removed LRP remain", n)
	}
	if instanceState(t, s, "app", 1, model.PresenceOrdinary) != model.StateRunning ||
		instanceState(t, s, "app", 2, model.PresenceEvacuating) != model.StateRunning {
		t.Fatal("running extras must stay until their cells report the stop")
	}
	if n := events(t, s, model.EventActualLRPRemoved); n != 2 {
		t.Fatalf("removed events = %d, want 2", n)
	}

	// The next pass asks again for the same stops and writes nothing.
	snap, n := snapshot(t, s), eventCount(t, s)
	res = converge(t, s, db.ConvergeOptions{})
	if res.ExtrasRemoved != 0 || res.ExtrasToStop != 2 || snapshot(t, s) != snap || eventCount(t, s) != n {
		t.Fatalf("second pass = %+v", res)
	}
}

func TestConvergeRestartsCrashedAfterBackoff(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	now := time.Now()
	crash := func(index int, count int32, ago time.Duration) {
		exec(t, s, `UPDATE actual_lrps SET state = 'CRASHED', crash_count = $2, since = $3, crash_reason = 'exit 1'
WHERE process_guid = 'app' AND instance_index = $1`, index, count, now.Add(-ago).UnixNano())
	}
	crash(0, 4, 10*time.Second) // waits 30 s
	crash(1, 4, 31*time.Second)
	crash(2, 201, 24*time.Hour) // never again

	res := converge(t, s, db.ConvergeOptions{})
	if res.CrashedRestarted != 1 {
		t.Fatalf("restarted = %d, want 1", res.CrashedRestarted)
	}
	var a []model.ActualLRP
	a, _ = s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app"})
	if a[0].State != model.StateCrashed || a[1].State != model.StateUnclaimed || a[2].State != model.StateCrashed {
		t.Fatalf("states = %s %s %s", a[0].State, a[1].State, a[2].State)
	}
	if a[1].CrashCount != 4 || a[1].CrashReason != "exit 1" || a[1].Since < now.UnixNano() {
		t.Fatalf("a restarted instance keeps its count and becomes UNCLAIMED now: %+v", a[1])
	}
	// A policy of the caller's own applies.
	p := model.DefaultRestartPolicy()
	p.BaseDelay = 5 * time.Second
	if res := converge(t, s, db.ConvergeOptions{RestartPolicy: &p}); res.CrashedRestarted != 1 {
		t.Fatalf("with a 5 s base delay, restarted = %d, want 1", res.CrashedRestarted)
	}
}

// The SQL eligibility mirrors RestartPolicy.ShouldRestart at every count and on both sides of
// each delay.
func TestConvergeCrashEligibilityMatchesRestartPolicy(t *testing.T) {
	uncapped := model.DefaultRestartPolicy()
	uncapped.ImmediateRestarts, uncapped.MaxDelay, uncapped.BaseDelay = 1, 0, time.Second
	for name, p := range map[string]model.RestartPolicy{"default": model.DefaultRestartPolicy(), "uncapped": uncapped} {
		t.Run(name, func(t *testing.T) {
			s := dbtest.NewStore(t)
			counts := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40, 70, 199, 200, 201, 5000}
			desire(t, s, newLRP("app", int32(2*len(counts))))
			now := time.Now()
			want := map[int]bool{}
			for i, c := range counts {
				d, _ := p.RestartDelay(c)
				for j, age := range []time.Duration{d - 2*time.Second, d + 2*time.Second} {
					if d > 100*365*24*time.Hour { // beyond any real clock: never passed
						age = 24 * time.Hour
					}
					index := 2*i + j
					since := now.Add(-age)
					want[index] = p.ShouldRestart(c, since, now)
					exec(t, s, `UPDATE actual_lrps SET state = 'CRASHED', crash_count = $2, since = $3
WHERE process_guid = 'app' AND instance_index = $1`, index, c, since.UnixNano())
				}
			}
			converge(t, s, db.ConvergeOptions{RestartPolicy: &p})
			for index, restart := range want {
				if got := instanceState(t, s, "app", index, model.PresenceOrdinary) == model.StateUnclaimed; got != restart {
					t.Errorf("count %d, index %d: restarted = %v, ShouldRestart = %v", counts[index/2], index, got, restart)
				}
			}
		})
	}
}

func TestConvergeCountsStaleUnclaimed(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	exec(t, s, `UPDATE actual_lrps SET since = $1 WHERE instance_index < 2`, time.Now().Add(-time.Minute).UnixNano())
	if res := converge(t, s, db.ConvergeOptions{}); res.StaleUnclaimed != 2 {
		t.Fatalf("stale = %d, want 2", res.StaleUnclaimed)
	}
	if res := converge(t, s, db.ConvergeOptions{StaleUnclaimed: 2 * time.Minute}); res.StaleUnclaimed != 0 {
		t.Fatalf("stale with a 2 min limit = %d, want 0", res.StaleUnclaimed)
	}
}

func TestConvergePrunesDefinitions(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	for _, id := range []string{"v2", "v3", "v4", "v5"} {
		addDefinition(t, s, "app", id)
	}
	// app: healthy and runs index 0; v2: active; v5: previous; v4: named by a paused
	// rollout; v3: nothing uses it.
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = 'app',
    previous_definition_id = 'v5' WHERE process_guid = 'app'`)
	exec(t, s, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'app', 'update', 'app', 'v4', 'paused', 1, 'rollout:app')`)
	// Eleven older retired definitions, r01 the oldest.
	for i := 1; i <= 11; i++ {
		exec(t, s, `INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info, live, retired_at)
VALUES ('app', $1, 'docker:///busybox', 64, 64, '{}', false, now() - make_interval(hours => $2))`, fmt.Sprintf("r%02d", i), 100-i)
	}

	res := converge(t, s, db.ConvergeOptions{})
	if res.DefinitionsRetired != 1 || res.DefinitionsPruned != 2 {
		t.Fatalf("retired %d, pruned %d; want 1 and 2", res.DefinitionsRetired, res.DefinitionsPruned)
	}
	var live, retired []string
	s.DB().SelectContext(ctx, &live, `SELECT definition_id FROM lrp_definitions WHERE live ORDER BY 1`)
	s.DB().SelectContext(ctx, &retired, `SELECT definition_id FROM lrp_definitions WHERE NOT live ORDER BY 1`)
	if fmt.Sprint(live) != "[app v2 v4 v5]" {
		t.Fatalf("live = %v", live)
	}
	if fmt.Sprint(retired) != "[r03 r04 r05 r06 r07 r08 r09 r10 r11 v3]" {
		t.Fatalf("retired = %v: want the newest 10", retired)
	}
	if res := converge(t, s, db.ConvergeOptions{RetiredHistory: 3}); res.DefinitionsPruned != 7 {
		t.Fatalf("pruned with a history of 3 = %d, want 7", res.DefinitionsPruned)
	}
	if _, err := s.Converge(ctx, db.ConvergeOptions{RetiredHistory: -1}); model.TypeOf(err) != model.ErrInvalidRequest {
		t.Fatalf("a negative history = %v, want InvalidRequest", err)
	}
}

// A pass over a store that a pass just converged changes nothing and writes no events.
func TestConvergeIsIdempotent(t *testing.T) {
	s := dbtest.NewStore(t)
	putDomain(t, s, "cf-apps", true)
	putCell(t, s, "cell-1", true)
	putCell(t, s, "dead", false)
	desire(t, s, newLRP("app", 4))
	placeOn(t, s, "app", 0, model.StateRunning, "cell-1")
	placeOn(t, s, "app", 1, model.StateRunning, "dead")
	placeOn(t, s, "app", 2, model.StateClaimed, "dead")
	exec(t, s, `DELETE FROM actual_lrps WHERE instance_index = 3`)
	exec(t, s, `UPDATE desired_lrps SET instances = 5`)
	addDefinition(t, s, "app", "unused")
	first := converge(t, s, db.ConvergeOptions{})
	if first.MissingCells != 1 || first.Suspected != 1 || first.MissingCellClaims != 1 || first.MissingIndices != 2 || first.DefinitionsRetired != 1 {
		t.Fatalf("first pass = %+v", first)
	}
	snap, n := snapshot(t, s), eventCount(t, s)
	second := converge(t, s, db.ConvergeOptions{})
	if snapshot(t, s) != snap || eventCount(t, s) != n {
		t.Fatal("the second pass changed the store")
	}
	// The dead cell still holds the suspect: found again (reported only), nothing done.
	if len(second.Steps) == 0 {
		t.Fatal("the pass reported no step times")
	}
	second.Steps = nil
	if !reflect.DeepEqual(*second, db.ConvergeResult{MissingCells: 1}) {
		t.Fatalf("second pass = %+v, want nothing done", second)
	}
}

func TestConvergeAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("large convergence in -short mode")
	}
	s := dbtest.NewStore(t)
	const lrps, instances, cells = 2000, 5, 50
	putDomain(t, s, "cf-apps", true)
	exec(t, s, `INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
SELECT 'cell-'||c, 'z1', 'http://127.0.0.1:1', 65536, 65536, 1000,
    now() + CASE WHEN c = 0 THEN interval '-1 minute' ELSE interval '1 hour' END
FROM generate_series(0, $1 - 1) AS c`, cells)
	tx := s.DB().MustBegin()
	tx.MustExec(`INSERT INTO desired_lrps (process_guid, domain, instances, active_definition_id, healthy_definition_id, modification_epoch)
SELECT 'lrp-'||g, 'cf-apps', $2, 'v1', 'v1', 'e' FROM generate_series(1, $1) AS g`, lrps, instances)
	tx.MustExec(`INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info)
SELECT 'lrp-'||g, 'v1', 'docker:///busybox', 64, 64, '{}' FROM generate_series(1, $1) AS g`, lrps)
	// Every instance RUNNING, spread over the cells; every hundredth one is missing.
	tx.MustExec(`INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state,
    instance_guid, cell_id, since, modification_epoch)
SELECT 'lrp-'||g, 'v1', i, 'cf-apps', 'RUNNING', 'ig-'||g||'-'||i, 'cell-'||((g * $2 + i) % $3), 1, 'e'
FROM generate_series(1, $1) AS g, generate_series(0, $2 - 1) AS i
WHERE (g * $2 + i) % 100 <> 7`, lrps, instances, cells)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	total := lrps * instances
	missing := total / 100
	onDead := count(t, s, `SELECT count(*) FROM actual_lrps WHERE cell_id = 'cell-0'`)

	start := time.Now()
	res := converge(t, s, db.ConvergeOptions{})
	t.Logf("converged %d instances (%d missing, %d on a dead cell) in %v", total, missing, onDead, time.Since(start))
	if res.MissingIndices != missing || res.Suspected != onDead {
		t.Fatalf("result = %+v, want %d missing and %d suspected", res, missing, onDead)
	}
	start = time.Now()
	res = converge(t, s, db.ConvergeOptions{})
	t.Logf("second pass in %v", time.Since(start))
	if res.MissingIndices != 0 || res.Suspected != 0 {
		t.Fatalf("second pass = %+v", res)
	}
}
