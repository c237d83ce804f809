package db_test

import (
	"context"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

var ctx = context.Background()

func newLRP(guid string, instances int32) *model.DesiredLRP {
	return &model.DesiredLRP{
		ProcessGUID: guid,
		Domain:      "cf-apps",
		Instances:   instances,
		Routes:      model.Routes{"cf-router": []byte(`[{"hostnames":["a.example.com"],"port":8080}]`)},
		Annotation:  "v1",
		LRPDefinition: model.LRPDefinition{
			RootFS:   "docker:///busybox",
			MemoryMB: 128,
			DiskMB:   256,
			Ports:    []uint32{8080},
			Action:   &model.Action{Run: &model.RunAction{Path: "/bin/sh", Args: []string{"-c", "exec sleep 1000"}}},
			Env:      []model.EnvironmentVariable{{Name: "A", Value: "1"}},
		},
	}
}

func desire(t *testing.T, s *db.Store, d *model.DesiredLRP) *model.DesiredLRP {
	t.Helper()
	out, err := s.DesireLRP(ctx, d)
	if err != nil {
		t.Fatalf("DesireLRP(%s): %v", d.ProcessGUID, err)
	}
	return out
}

func count(t *testing.T, s *db.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().GetContext(ctx, &n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func exec(t *testing.T, s *db.Store, query string, args ...any) {
	t.Helper()
	if _, err := s.DB().ExecContext(ctx, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func wantType(t *testing.T, err error, typ model.ErrorType) {
	t.Helper()
	if model.TypeOf(err) != typ || err == nil {
		t.Fatalf("error = %v, want type %s", err, typ)
	}
}

// addDefinition stores a further live definition of an LRP, as a rollout will.
func addDefinition(t *testing.T, s *db.Store, guid, id string) {
	t.Helper()
	exec(t, s, `INSERT INTO lrp_definitions (process_guid, definition_id, rootfs, memory_mb, disk_mb, run_info)
VALUES ($1, $2, 'docker:///busybox', 64, 64, '{"action":{"run":{"path":"/bin/true"}}}')`, guid, id)
}

// makeRunning puts an instance on a cell, as a cell's start report will.
func makeRunning(t *testing.T, s *db.Store, guid, def string, index int) {
	t.Helper()
	exec(t, s, `UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-1', instance_guid = 'ig-'||instance_index,
    address = '10.0.0.1', ports = '[{"container_port":8080,"host_port":61000}]'
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3`, guid, def, index)
}
