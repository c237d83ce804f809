package executor_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
)

func TestStopIsNeverACrash(t *testing.T) {
	f := newFakeBackend(true)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.setHealth(nil)
	waitState(t, e, "g1", executor.StateRunning)
	// The fake exits non-zero when stopped, as a process killed by SIGTERM does.
	for i := 0; i < 2; i++ { // idempotent
		if err := e.Stop("g1"); err != nil {
			t.Fatal(err)
		}
	}
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result != (executor.Result{Stopped: true}) {
		t.Fatalf("result = %+v, want stopped and not failed", c.Result)
	}
	eventually(t, "instance stopped", in.wasStopped)
	time.Sleep(50 * time.Millisecond)
	if c, _ := e.Get("g1"); c.Result != (executor.Result{Stopped: true}) {
		t.Fatalf("result changed after the instance exited: %+v", c.Result)
	}
}

func TestStopReservedCompletesAtOnce(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	if _, err := e.Reserve(spec("g1", simDef())); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("g1"); err != nil {
		t.Fatal(err)
	}
	c, _ := e.Get("g1")
	if c.State != executor.StateCompleted || c.Result != (executor.Result{Stopped: true}) {
		t.Fatalf("container = %+v", c)
	}
	if err := e.Run("g1"); !errors.Is(err, executor.ErrInvalidState) {
		t.Fatalf("run after stop: err = %v", err)
	}
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
}

func TestStopWhileInitializing(t *testing.T) {
	f := newFakeBackend(false)
	f.block = true
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	waitState(t, e, "g1", executor.StateInitializing)
	if err := e.Stop("g1"); err != nil {
		t.Fatal(err)
	}
	c := waitState(t, e, "g1", executor.StateCompleted)
	if c.Result != (executor.Result{Stopped: true}) {
		t.Fatalf("result = %+v", c.Result)
	}
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
}

func TestStopKeepsACrashResult(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	reserveAndRun(t, e, "g1", simDef("SIM_FAIL_START", "1"))
	waitState(t, e, "g1", executor.StateCompleted)
	if err := e.Stop("g1"); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.Get("g1"); !c.Result.Failed || c.Result.Stopped {
		t.Fatalf("result after stopping a crashed container = %+v", c.Result)
	}
}

func TestDeleteWaitsForTheInstanceAndForgetsIt(t *testing.T) {
	f := newFakeBackend(false)
	e := newExecutor(t, f, nil)
	reserveAndRun(t, e, "g1", simDef())
	in := f.instance(t, "g1")
	in.stopDelay = 100 * time.Millisecond
	waitState(t, e, "g1", executor.StateRunning)
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
	if !in.wasStopped() {
		t.Fatal("Delete returned before the instance had stopped")
	}
	if _, ok := e.Get("g1"); ok {
		t.Fatal("deleted container is still listed")
	}
	if err := e.Delete("g1"); !errors.Is(err, executor.ErrContainerNotFound) {
		t.Fatalf("second delete: err = %v", err)
	}
	if err := e.Stop("g1"); !errors.Is(err, executor.ErrContainerNotFound) {
		t.Fatalf("stop after delete: err = %v", err)
	}
	// The guid can be used again.
	reserveAndRun(t, e, "g1", simDef())
	waitState(t, e, "g1", executor.StateRunning)
}

func TestReserveAndRunErrors(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	if _, err := e.Reserve(spec("g1", simDef())); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reserve(spec("g1", simDef())); !errors.Is(err, executor.ErrContainerExists) {
		t.Fatalf("duplicate reserve: err = %v", err)
	}
	if err := e.Run("nope"); !errors.Is(err, executor.ErrContainerNotFound) {
		t.Fatalf("run unknown: err = %v", err)
	}
	if err := e.Run("g1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Run("g1"); !errors.Is(err, executor.ErrInvalidState) {
		t.Fatalf("second run: err = %v", err)
	}
}

func TestReservedContainerDescribesItself(t *testing.T) {
	e := newExecutor(t, sim.New(1), func(c *executor.Config) { c.PortRangeStart, c.PortRangeEnd = 62200, 62299 })
	d := simDef()
	d.Ports = []uint32{8080, 2222}
	c, err := e.Reserve(spec("g1", d))
	if err != nil {
		t.Fatal(err)
	}
	if c.State != executor.StateReserved || c.Address != "127.0.0.1" || c.MemoryMB != 128 || c.DiskMB != 256 ||
		c.Key.ProcessGUID != "pg-g1" || len(c.Ports) != 2 || c.Ports[0].ContainerPort != 8080 ||
		c.Ports[1].ContainerPort != 2222 || c.Since.IsZero() {
		t.Fatalf("reserved container = %+v", c)
	}
}

func TestPortsAreDistinctFreeAndRecycled(t *testing.T) {
	// Something else on the host holds one port of the range; it must be skipped. The range
	// lies above Linux's ephemeral ports, so only this test's listener should occupy it.
	start := freeRange(t, 62400, 5)
	end, busy := start+4, start+2
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", busy))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	e := newExecutor(t, newFakeBackend(false), func(c *executor.Config) { c.PortRangeStart, c.PortRangeEnd = start, end })
	d := simDef()
	d.Ports = []uint32{8080, 9090}
	seen := map[uint32]bool{}
	for _, g := range []string{"a", "b"} {
		c, err := e.Reserve(spec(g, d))
		if err != nil {
			t.Fatalf("reserve %s: %v", g, err)
		}
		for _, p := range c.Ports {
			if p.HostPort == busy || p.HostPort < start || p.HostPort > end || seen[p.HostPort] {
				t.Fatalf("bad host port %d (busy %d, range %d-%d, seen %v)", p.HostPort, busy, start, end, seen)
			}
			seen[p.HostPort] = true
		}
	}
	if _, err := e.Reserve(spec("c", d)); !errors.Is(err, executor.ErrNoFreePorts) {
		t.Fatalf("reserve with the range exhausted: err = %v", err)
	}
	if _, ok := e.Get("c"); ok {
		t.Fatal("a failed reservation left a container behind")
	}
	if err := e.Delete("a"); err != nil {
		t.Fatal(err)
	}
	c, err := e.Reserve(spec("c", d))
	if err != nil {
		t.Fatalf("reserve after freeing ports: %v", err)
	}
	b, _ := e.Get("b")
	for _, p := range c.Ports {
		for _, q := range b.Ports {
			if p.HostPort == q.HostPort {
				t.Fatalf("port %d handed out twice", p.HostPort)
			}
		}
	}
}

func TestEnvironment(t *testing.T) {
	f := newFakeBackend(false)
	e := newExecutor(t, f, func(c *executor.Config) { c.PortRangeStart, c.PortRangeEnd = 62300, 62399 })
	d := simDef("FOO", "bar")
	d.Ports = []uint32{8080, 2222}
	reserveAndRun(t, e, "g1", d)
	c := waitState(t, e, "g1", executor.StateRunning)
	h0, h1 := c.Ports[0].HostPort, c.Ports[1].HostPort
	f.mu.Lock()
	s := f.specs[0]
	f.mu.Unlock()
	want := []model.EnvironmentVariable{
		{Name: "FOO", Value: "bar"},
		{Name: "PORT", Value: strconv.Itoa(int(h0))},
		{Name: "CF_INSTANCE_INDEX", Value: "3"},
		{Name: "CF_INSTANCE_GUID", Value: "g1"},
		{Name: "CF_INSTANCE_IP", Value: "127.0.0.1"},
		{Name: "CF_INSTANCE_INTERNAL_IP", Value: "127.0.0.1"},
		{Name: "CF_INSTANCE_PORT", Value: strconv.Itoa(int(h0))},
		{Name: "CF_INSTANCE_ADDR", Value: fmt.Sprintf("127.0.0.1:%d", h0)},
		{Name: "CF_INSTANCE_PORTS", Value: fmt.Sprintf(`[{"external":%d,"internal":8080},{"external":%d,"internal":2222}]`, h0, h1)},
		{Name: "INSTANCE_INDEX", Value: "3"},
		{Name: "INSTANCE_GUID", Value: "g1"},
	}
	if fmt.Sprint(s.Env) != fmt.Sprint(want) {
		t.Fatalf("env =\n%v\nwant\n%v", s.Env, want)
	}
	if s.Address != "127.0.0.1" || len(s.Ports) != 2 || s.Guid != "g1" || s.Key.Index != 3 || s.Log == nil {
		t.Fatalf("start spec = %+v", s)
	}
}

func TestEventsForRunningAndCompleted(t *testing.T) {
	e := newExecutor(t, sim.New(1), nil)
	events, unsubscribe := e.Subscribe()
	reserveAndRun(t, e, "g1", withMonitor(simDef()))
	waitState(t, e, "g1", executor.StateRunning)
	if err := e.Stop("g1"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		select {
		case ev := <-events:
			got = append(got, ev.Container.Guid+":"+string(ev.Container.State))
		case <-time.After(deadline):
			t.Fatalf("events so far: %v", got)
		}
	}
	if got[0] != "g1:RUNNING" || got[1] != "g1:COMPLETED" {
		t.Fatalf("events = %v", got)
	}
	unsubscribe()
	unsubscribe()
	if _, ok := <-events; ok {
		t.Fatal("channel still open after unsubscribe")
	}
}

func TestCloseStopsEverything(t *testing.T) {
	f := newFakeBackend(false)
	e := newExecutor(t, f, nil)
	events, _ := e.Subscribe()
	for _, g := range []string{"a", "b"} {
		reserveAndRun(t, e, g, simDef())
		waitState(t, e, g, executor.StateRunning)
	}
	e.Close()
	for _, g := range []string{"a", "b"} {
		if !f.instance(t, g).wasStopped() {
			t.Fatalf("%s not stopped by Close", g)
		}
		if c, _ := e.Get(g); c.Result != (executor.Result{Stopped: true}) {
			t.Fatalf("%s result = %+v", g, c.Result)
		}
	}
	if _, err := e.Reserve(spec("c", simDef())); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("reserve after close: err = %v", err)
	}
	for range events { // must end: Close closes subscriptions
	}
}

func TestTwoThousandSimContainers(t *testing.T) {
	const n = 2000
	e := newExecutor(t, sim.New(42), func(c *executor.Config) {
		c.PortRangeStart, c.PortRangeEnd = 20000, 29999
		c.SkipPortProbe = true
		c.HealthyMonitorInterval = time.Second
	})
	// A subscriber that never reads must not hold anything up.
	_, unsubscribe := e.Subscribe()
	defer unsubscribe()
	d := withMonitor(simDef("SIM_START_DELAY_MS", "20", "SIM_MONITOR", "pass-after:50"))
	d.Ports = []uint32{8080}
	for i := 0; i < n; i++ {
		reserveAndRun(t, e, fmt.Sprintf("g%04d", i), d)
	}
	eventually(t, "all containers RUNNING", func() bool {
		for _, c := range e.Containers() {
			if c.State == executor.StateCompleted {
				t.Fatalf("%s completed: %+v", c.Guid, c.Result)
			}
			if c.State != executor.StateRunning {
				return false
			}
		}
		return true
	})
	cs := e.Containers()
	if len(cs) != n || cs[0].Guid != "g0000" || cs[n-1].Guid != fmt.Sprintf("g%04d", n-1) {
		t.Fatalf("containers not sorted or incomplete: %d", len(cs))
	}
	ports := map[uint32]bool{}
	for _, c := range cs {
		if ports[c.Ports[0].HostPort] {
			t.Fatalf("host port %d handed out twice", c.Ports[0].HostPort)
		}
		ports[c.Ports[0].HostPort] = true
	}
	if e.DroppedEvents() == 0 {
		t.Fatalf("expected events dropped for the idle subscriber (buffer %d, %d events)", executor.SubscriberBuffer, n)
	}
}

// freeRange finds n consecutive bindable ports from base on.
func freeRange(t *testing.T, base uint32, n uint32) uint32 {
	t.Helper()
	for start := base; start < base+500; start += n {
		ok := true
		for p := start; p < start+n && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return start
		}
	}
	t.Fatalf("no %d free consecutive ports from %d", n, base)
	return 0
}
