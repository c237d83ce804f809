package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

func TestMonitorAction(t *testing.T) {
	f := newFixture(t)
	d := def(sh("exec sleep 30"))
	d.Monitor = sh("test -f ready")
	in := f.mustStart("g1", d)
	if !in.HasMonitor() {
		t.Fatal("HasMonitor = false with a monitor action")
	}
	ctx := context.Background()
	if err := in.Check(ctx); err == nil {
		t.Fatal("check passed before the file exists")
	}
	if err := os.WriteFile(filepath.Join(instanceDir(t, f, "g1"), "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := in.Check(ctx); err != nil {
		t.Fatalf("check after the file exists: %v", err)
	}

	d.Monitor = &model.Action{Timeout: &model.TimeoutAction{TimeoutMs: 100, Action: sh("exec sleep 30")}}
	in = f.mustStart("g2", d)
	if err := in.Check(ctx); err == nil || err.Error() != "timed out after 100ms" {
		t.Fatalf("hanging monitor: err = %v", err)
	}
}

func TestNoMonitor(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(sh("exec sleep 30")))
	if in.HasMonitor() {
		t.Fatal("HasMonitor = true without monitor")
	}
}

func TestChecks(t *testing.T) {
	f := newFixture(t)
	d := def(run(httpServer))
	d.Ports = []uint32{8080}
	check := func(c model.Check) error {
		d := d
		d.CheckDefinition = &model.CheckDefinition{Checks: []model.Check{c}}
		in := f.mustStart("g-"+strconv.Itoa(int(time.Now().UnixNano())), d)
		var err error
		eventually(t, "the server to answer", func() bool {
			err = in.Check(context.Background())
			return err == nil || !strings.Contains(err.Error(), "refused")
		})
		return err
	}
	if err := check(model.Check{TCPCheck: &model.TCPCheck{Port: 8080}}); err != nil {
		t.Errorf("tcp_check: %v", err)
	}
	if err := check(model.Check{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}); err != nil {
		t.Errorf("http_check /health: %v", err)
	}
	if err := check(model.Check{HTTPCheck: &model.HTTPCheck{Port: 8080}}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("http_check / (404): err = %v", err)
	}
	if err := check(model.Check{TCPCheck: &model.TCPCheck{Port: 9999}}); err == nil || !strings.Contains(err.Error(), "not mapped") {
		t.Errorf("unmapped port: err = %v", err)
	}
}

// Readiness checks are run as liveness checks are, against the instance's own ports, and only
// they: a failing readiness check says not ready, not unhealthy.
func TestReadinessChecks(t *testing.T) {
	f := newFixture(t)
	d := def(run(httpServer))
	d.Ports = []uint32{8080}
	d.CheckDefinition = &model.CheckDefinition{
		Checks:          []model.Check{{TCPCheck: &model.TCPCheck{Port: 8080}}},
		ReadinessChecks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}},
	}
	in := f.mustStart("g-ready", d)
	var err error
	eventually(t, "the server to answer", func() bool {
		err = in.CheckReadiness(context.Background())
		return err == nil || !strings.Contains(err.Error(), "refused")
	})
	if err != nil {
		t.Fatalf("readiness /health: %v", err)
	}
	d.CheckDefinition.ReadinessChecks = []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/not-there"}}}
	in = f.mustStart("g-unready", d)
	eventually(t, "the server to answer", func() bool { return in.Check(context.Background()) == nil })
	if err := in.CheckReadiness(context.Background()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("readiness /not-there: err = %v, want a 404", err)
	}
}
