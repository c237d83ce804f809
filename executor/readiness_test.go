package executor_test

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
)

func withReadiness(d model.LRPDefinition) model.LRPDefinition {
	d.CheckDefinition = &model.CheckDefinition{ReadinessChecks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/ready"}}}}
	return d
}

// A definition with readiness checks runs not ready until they pass; each change of their
// outcome after that is an event, and a failing readiness check does not crash the instance.
func TestReadinessChecksDecideNotReady(t *testing.T) {
	e := newExecutor(t, sim.New(1), func(c *executor.Config) { c.ReadinessInterval = 10 * time.Millisecond })
	events, stop := e.Subscribe()
	defer stop()
	reserveAndRun(t, e, "g1", withReadiness(simDef("SIM_READINESS", "pass-after:150")))
	c := waitState(t, e, "g1", executor.StateRunning)
	if !c.NotReady {
		t.Fatal("RUNNING before its readiness check passed, yet not marked not ready")
	}
	eventually(t, "the instance to become ready", func() bool { c, _ := e.Get("g1"); return !c.NotReady })
	var seen []bool
	for len(seen) < 2 {
		select {
		case ev := <-events:
			if ev.Container.Guid == "g1" && ev.Container.State == executor.StateRunning {
				seen = append(seen, ev.Container.NotReady)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("events of g1 = %v, want RUNNING not ready, then ready", seen)
		}
	}
	if !seen[0] || seen[1] {
		t.Fatalf("events of g1 = %v (not ready?), want [true false]", seen)
	}

	reserveAndRun(t, e, "g2", withReadiness(simDef("SIM_READINESS", "fail-after:100")))
	waitState(t, e, "g2", executor.StateRunning)
	eventually(t, "g2 to become not ready", func() bool { c, _ := e.Get("g2"); return c.NotReady })
	time.Sleep(50 * time.Millisecond)
	if c, _ := e.Get("g2"); c.State != executor.StateRunning {
		t.Fatalf("a failing readiness check ended the instance: %+v", c)
	}

	reserveAndRun(t, e, "g3", simDef("SIM_READINESS", "fail")) // no readiness checks: ready
	if c := waitState(t, e, "g3", executor.StateRunning); c.NotReady {
		t.Fatal("an instance without readiness checks is not ready")
	}
}
