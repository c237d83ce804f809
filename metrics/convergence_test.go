package metrics_test

import (
	"context"
	"testing"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap/zaptest"
)

// TestMain gives the package's tests a real PostgreSQL and stops it afterwards.
func TestMain(m *testing.M) { dbtest.Main(m) }

// seedFleet stores a fleet for one pass to change in known ways: web's index 1 is on a
// vanished cell (made SUSPECT, replaced), its index 3 has no record (created), shrink runs
// an instance beyond its count (extra); crashy has crashed for good.
func seedFleet(t *testing.T, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	for guid, n := range map[string]int32{"web": 4, "crashy": 2, "shrink": 2} {
		if _, err := s.DesireLRP(ctx, &model.DesiredLRP{ProcessGUID: guid, Domain: "cf-apps", Instances: n,
			LRPDefinition: model.LRPDefinition{RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 64,
				Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO domains VALUES ('cf-apps', NULL), ('old', now() - interval '1 minute')`,
		`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1', 1024, 1024, 10, now() + interval '1 hour'),
       ('gone', 'z1', 'http://127.0.0.1:2', 1024, 1024, 10, now() - interval '1 minute')`,
		`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-1', instance_guid = 'ig-'||process_guid||instance_index
WHERE (process_guid = 'web' AND instance_index = 0) OR process_guid = 'shrink'`,
		`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'gone', instance_guid = 'ig-web1' WHERE process_guid = 'web' AND instance_index = 1`,
		`UPDATE actual_lrps SET state = 'CLAIMED', cell_id = 'cell-1', instance_guid = 'ig-web2' WHERE process_guid = 'web' AND instance_index = 2`,
		`DELETE FROM actual_lrps WHERE process_guid = 'web' AND instance_index = 3`,
		`UPDATE actual_lrps SET state = 'CRASHED', crash_count = 201 WHERE process_guid = 'crashy'`,
		`UPDATE desired_lrps SET instances = 1 WHERE process_guid = 'shrink'`,
		`INSERT INTO tasks (task_guid, domain, state, definition, memory_mb, disk_mb, callback_url, created_at, updated_at, first_completed_at)
VALUES ('pending', 'cf-tasks', 'PENDING', '{}', 1, 1, '', extract(epoch FROM now())::bigint * 1000000000, extract(epoch FROM now())::bigint * 1000000000, 0),
       ('done', 'cf-tasks', 'COMPLETED', '{}', 1, 1, 'http://cc/done', extract(epoch FROM now())::bigint * 1000000000,
        extract(epoch FROM now())::bigint * 1000000000, extract(epoch FROM now())::bigint * 1000000000)`,
		`INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'web', 'update', 'web', 'v2', 'active', 4, 'rollout:web')`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestConvergencePassSetsTheFleetSeries runs one convergence pass over a known fleet on a
// real PostgreSQL and reads the series as Prometheus would.
func TestConvergencePassSetsTheFleetSeries(t *testing.T) {
	s := dbtest.NewStore(t)
	seedFleet(t, s)
	reg := metrics.NewRegistry()
	c := &activities.Converger{Store: s, Tasks: s, Fleet: s, Metrics: metrics.NewConvergence(reg), Log: zaptest.NewLogger(t)}
	before := scrapeReg(t, reg)
	if before["bbs_convergence_last_pass_timestamp_seconds"] != 0 {
		t.Fatalf("before any pass: %v", before)
	}
	if _, err := c.Converge(context.Background(), activities.ConvergeInput{}); err != nil {
		t.Fatal(err)
	}
	got := scrapeReg(t, reg)
	expect(t, "after a pass", got, map[string]float64{
		"bbs_lrps_desired":                            7,
		"bbs_lrps_unclaimed":                          2, // web's index 1 replacement and index 3
		"bbs_lrps_claimed":                            1,
		"bbs_lrps_running":                            3, // web 0, shrink 0 and its extra 1 (until its cell stops it)
		"bbs_crashed_actual_lrps":                     2,
		"bbs_crashing_desired_lrps":                   1,
		"bbs_suspect_running_actual_lrps":             1,
		"bbs_lrps_missing":                            1,
		"bbs_lrps_extra":                              1,
		"bbs_suspect_cells":                           1,
		"bbs_present_cells":                           1,
		`bbs_domain_fresh{domain="cf-apps"}`:          1,
		`bbs_domain_fresh{domain="old"}`:              0,
		"bbs_tasks_pending":                           1,
		"bbs_tasks_running":                           0,
		"bbs_tasks_completed":                         1,
		"bbs_tasks_resolving":                         0,
		"bbs_task_callbacks_pending":                  1,
		`bbs_rollouts_in_progress{state="active"}`:    1,
		`bbs_rollouts_in_progress{state="paused"}`:    0,
		`bbs_rollouts_in_progress{state="canceling"}`: 0,
		"bbs_convergence_lrp_duration_seconds_count":  1,
		"bbs_convergence_task_duration_seconds_count": 1,
	})
	if got["bbs_convergence_last_pass_timestamp_seconds"] <= 0 {
		t.Error("bbs_convergence_last_pass_timestamp_seconds is not set")
	}

	// The next pass finds what is left: the suspect's cell is still gone, nothing missing.
	if _, err := c.Converge(context.Background(), activities.ConvergeInput{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "after a second pass", scrapeReg(t, reg), map[string]float64{"bbs_lrps_missing": 0, "bbs_suspect_cells": 1,
		"bbs_lrps_extra": 1, "bbs_convergence_lrp_duration_seconds_count": 2})
}

// expect checks that got serves each series of want with its value.
func expect(t *testing.T, when string, got, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s: %s = %v (served: %v), want %v", when, series, g, ok, v)
		}
	}
}
