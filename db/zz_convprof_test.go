package db

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

func TestZZConvProf(t *testing.T) {
	url := os.Getenv("CONVPROF_URL")
	if url == "" {
		t.Skip()
	}
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CONVPROF_LOAD") != "" {
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		s.db.MustExec(`INSERT INTO domains VALUES ('cf-apps', NULL)`)
		s.db.MustExec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
SELECT 'cell-'||c, 'z1', 'x', 65536, 65536, 1000, now() + CASE WHEN c = 0 THEN interval '-1 minute' ELSE interval '10 hour' END
FROM generate_series(0, 999) AS c`)
		tx := s.db.MustBegin()
		tx.MustExec(`INSERT INTO desired_lrps (process_guid, domain, instances, active_definition_id, healthy_definition_id, modification_epoch)
SELECT 'lrp-'||g, 'cf-apps', 5, 'v1', 'v1', 'e' FROM generate_series(1, 50000) AS g`)
		tx.MustExec(`INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info)
SELECT 'lrp-'||g, 'v1', 'docker:///busybox', 64, 64, '{}' FROM generate_series(1, 50000) AS g`)
		tx.MustExec(`INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state,
    instance_guid, cell_id, since, modification_epoch)
SELECT 'lrp-'||g, 'v1', i, 'cf-apps', 'RUNNING', 'ig-'||g||'-'||i, 'cell-'||((g * 5 + i) % 1000), 1, 'e'
FROM generate_series(1, 50000) AS g, generate_series(0, 4) AS i
WHERE (g * 5 + i) % 100 <> 7`)
		tx.Commit()
	}
	if os.Getenv("CONVPROF_ANALYZE") != "" {
		s.db.MustExec(`ANALYZE`)
	}
	res := &ConvergeResult{}
	p := model.DefaultRestartPolicy()
	for name, f := range map[string]func() error{
		"suspects": func() error { return s.removeResolvedSuspects(ctx, res) },
		"extras":   func() error { return s.removeExtras(ctx, res) },
		"missingcells": func() error { return s.reapMissingCells(ctx, res) },
		"indices":  func() error { return s.createMissingIndices(ctx, res) },
		"crashed":  func() error { return s.restartCrashed(ctx, res, p) },
		"stale":    func() error { return s.countStaleUnclaimed(ctx, res, 30*time.Second) },
		"prune":    func() error { return s.pruneDefinitions(ctx, res, 10) },
	} {
		st := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v", name, time.Since(st))
	}
}
