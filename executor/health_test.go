package executor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
)

// Seed 002's health rules, one test each.

func TestNoMonitorIsRunningAsSoonAsTheActionStarts(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", simDef())
	c := waitState(t, e, "g1", executor.StateRunning)
	if c.Result != (executor.Result{}) {
		t.Fatalf("result of a running container = %+v", c.Result)
	}
}

func TestMonitorKeepsContainerCreatedUntilTheCheckPasses(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	waitState(t, e, "g1", executor.StateCreated)
	// Several failing polls must leave it CREATED.
	eventually(t, "five checks", func() bool { return in.checks.Load() >= 5 })
	if c, _ := e.Get("g1"); c.State != executor.StateCreated {
		t.Fatalf("state with a failing check = %s, want CREATED", c.State)
	}
	in.setHealth(nil)
	waitState(t, e, "g1", executor.StateRunning)
}

func TestMonitorPollsSlowerOnceHealthy(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, func(c *executor.Config) {
		c.MonitorInterval = 5 * time.Millisecond
		c.HealthyMonitorInterval = time.Hour
	})
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.setHealth(nil)
	waitState(t, e, "g1", executor.StateRunning)
	n := in.checks.Load()
	time.Sleep(100 * time.Millisecond)
	if got := in.checks.Load(); got != n {
		t.Fatalf("checks went from %d to %d within 100ms although the healthy interval is an hour", n, got)
	}
}

func TestSimPassAfterBecomesRunning(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", withMonitor(simDef("SIM_MONITOR", "pass-after:100")))
	waitState(t, e, "g1", executor.StateRunning)
}

func TestFailingCheckAfterRunningIsACrash(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.setHealth(nil)
	waitState(t, e, "g1", executor.StateRunning)
	in.setHealth(errors.New("connection refused"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	want := executor.Result{Failed: true, FailureReason: "health check failed, instance stopped: connection refused"}
	if c.Result != want {
		t.Fatalf("result = %+v, want %+v", c.Result, want)
	}
	eventually(t, "the crashed instance to be stopped", in.wasStopped)
}

func TestSimFailAfterIsACrash(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", withMonitor(simDef("SIM_MONITOR", "fail-after:100")))
	waitState(t, e, "g1", executor.StateRunning)
	c := waitState(t, e, "g1", executor.StateCompleted)
	if !c.Result.Failed || c.Result.Stopped || !strings.HasPrefix(c.Result.FailureReason, "health check failed, instance stopped: ") {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestNotHealthyWithinStartTimeoutIsACrash(t *testing.T) {
	for _, tc := range []struct {
		name       string
		timeoutMs  int64
		defaultTO  time.Duration
		wantReason string
	}{
		{"definition timeout", 150, time.Hour, "instance did not become healthy within 150ms"},
		{"default timeout", 0, time.Second, "instance did not become healthy within 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExecutor(t, sim.New(1), func(c *executor.Config) { c.DefaultStartTimeout = tc.defaultTO })
			d := withMonitor(simDef("SIM_MONITOR", "fail"))
			d.StartTimeoutMs = tc.timeoutMs
			reserveAndRun(t, e, "g1", d)
			c := waitState(t, e, "g1", executor.StateCompleted)
			want := executor.Result{Failed: true, FailureReason: tc.wantReason}
			if c.Result != want {
				t.Fatalf("result = %+v, want %+v", c.Result, want)
			}
		})
	}
}

func TestStartTimeoutAppliesEvenWhenThePollIntervalIsLonger(t *testing.T) {
	e := newExecutor(t, sim.New(1), func(c *executor.Config) { c.MonitorInterval = time.Hour })
	d := withMonitor(simDef("SIM_MONITOR", "fail"))
	d.StartTimeoutMs = 50
	reserveAndRun(t, e, "g1", d)
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result.FailureReason != "instance did not become healthy within 50ms" {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestActionExitingZeroWithMonitorIsADaemon(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.setHealth(nil)
	waitState(t, e, "g1", executor.StateRunning)
	in.exit(nil)
	n := in.checks.Load()
	eventually(t, "monitoring to go on after the action exited", func() bool { return in.checks.Load() >= n+3 })
	if c, _ := e.Get("g1"); c.State != executor.StateRunning {
		t.Fatalf("daemon state = %s %+v, want RUNNING", c.State, c.Result)
	}
	in.setHealth(errors.New("gone"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result.FailureReason != "health check failed, instance stopped: gone" {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestSimDaemonStaysRunning(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", withMonitor(simDef("SIM_EXIT_AFTER_MS", "20")))
	waitState(t, e, "g1", executor.StateRunning)
	time.Sleep(200 * time.Millisecond)
	if c, _ := e.Get("g1"); c.State != executor.StateRunning {
		t.Fatalf("state = %s %+v, want RUNNING", c.State, c.Result)
	}
}

func TestActionExitingNonZeroIsACrash(t *testing.T) {
	for _, monitored := range []bool{true, false} {
		t.Run(map[bool]string{true: "monitored", false: "unmonitored"}[monitored], func(t *testing.T) {
			e := newExecutor(t, sim.New(1), nil)
			d := simDef("SIM_CRASH_AFTER_MS", "100")
			if monitored {
				d = withMonitor(d)
			}
			reserveAndRun(t, e, "g1", d)
			waitState(t, e, "g1", executor.StateRunning)
			c := waitState(t, e, "g1", executor.StateCompleted)
			want := executor.Result{Failed: true, FailureReason: "simulated crash after 100ms (SIM_CRASH_AFTER_MS)"}
			if c.Result != want {
				t.Fatalf("result = %+v, want %+v", c.Result, want)
			}
		})
	}
}

func TestCrashWhileNotYetHealthyReportsTheExit(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.exit(errors.New("exit status 2"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result != (executor.Result{Failed: true, FailureReason: "exit status 2"}) {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestActionExitingWithoutMonitorIsACrash(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", simDef("SIM_EXIT_AFTER_MS", "50"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result != (executor.Result{Failed: true, FailureReason: "action exited (status 0)"}) {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestStartErrorIsACrash(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", simDef("SIM_FAIL_START", "1"))
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result != (executor.Result{Failed: true, FailureReason: "simulated start failure (SIM_FAIL_START)"}) {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestPortsStayAllocatedAfterACrashUntilDelete(t *testing.T) {
	f := newFakeBackend(false)
	port := freeRange(t, 62100, 1)
	e := newExecutor(t, f, func(c *executor.Config) { c.PortRangeStart, c.PortRangeEnd = port, port })
	d := simDef()
	d.Ports = []uint32{8080}
	reserveAndRun(t, e, "g1", d)
	f.instance(t, "g1").exit(errors.New("exit status 1"))
	waitState(t, e, "g1", executor.StateCompleted)
	if _, err := e.Reserve(spec("g2", d)); !errors.Is(err, executor.ErrNoFreePorts) {
		t.Fatalf("reserve while the crashed container holds the only port: err = %v", err)
	}
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reserve(spec("g2", d)); err != nil {
		t.Fatalf("reserve after delete: %v", err)
	}
}
