package executor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"

	"go.uber.org/zap/zaptest"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
)

// deadline bounds every wait; it is generous because -race and busy CI machines are slow, and
// no test relies on anything happening quickly, only on it happening.
const deadline = 15 * time.Second

func newExecutor(t *testing.T, b executor.Backend, mod func(*executor.Config)) *executor.Executor {
	t.Helper()
	cfg := executor.Config{
		MonitorInterval:        10 * time.Millisecond,
		HealthyMonitorInterval: 50 * time.Millisecond,
		StopGracePeriod:        time.Second,
		DefaultStartTimeout:    5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	e := executor.New(b, cfg, zaptest.NewLogger(t))
	t.Cleanup(e.Close)
	return e
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, deadline, 5*time.Millisecond, what, cond)
}

func waitState(t *testing.T, e *executor.Executor, guid string, s executor.State) executor.Container {
	t.Helper()
	var c executor.Container
	eventually(t, guid+" to be "+string(s), func() bool {
		var ok bool
		c, ok = e.Get(guid)
		if ok && c.State == executor.StateCompleted && s != executor.StateCompleted {
			t.Fatalf("%s completed while waiting for %s: %+v", guid, s, c.Result)
		}
		return ok && c.State == s
	})
	return c
}

func simDef(env ...string) model.LRPDefinition {
	d := model.LRPDefinition{
		DefinitionID: "d1",
		RootFS:       "preloaded:sim",
		MemoryMB:     128,
		DiskMB:       256,
		Action:       &model.Action{Run: &model.RunAction{Path: "/bin/app"}},
	}
	for i := 0; i+1 < len(env); i += 2 {
		d.Env = append(d.Env, model.EnvironmentVariable{Name: env[i], Value: env[i+1]})
	}
	return d
}

func withMonitor(d model.LRPDefinition) model.LRPDefinition {
	d.Monitor = &model.Action{Run: &model.RunAction{Path: "/bin/check"}}
	return d
}

func spec(guid string, d model.LRPDefinition) executor.RunSpec {
	return executor.RunSpec{
		Guid:       guid,
		Key:        model.ActualLRPKey{ProcessGUID: "pg-" + guid, DefinitionID: d.DefinitionID, Index: 3, Domain: "dom"},
		Definition: d,
	}
}

func reserveAndRun(t *testing.T, e *executor.Executor, guid string, d model.LRPDefinition) {
	t.Helper()
	if _, err := e.Reserve(spec(guid, d)); err != nil {
		t.Fatalf("reserve %s: %v", guid, err)
	}
	if err := e.Run(guid); err != nil {
		t.Fatalf("run %s: %v", guid, err)
	}
}

// fakeBackend hands out fakeInstances the test controls directly.
type fakeBackend struct {
	mu        sync.Mutex
	specs     []executor.StartSpec
	instances map[string]*fakeInstance
	startErr  error
	// block, when set, holds Start until the context ends.
	block bool
	// monitor sets HasMonitor on new instances.
	monitor bool
}

func newFakeBackend(monitor bool) *fakeBackend {
	return &fakeBackend{instances: map[string]*fakeInstance{}, monitor: monitor}
}

func (f *fakeBackend) Start(ctx context.Context, s executor.StartSpec) (executor.Instance, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	block, startErr := f.block, f.startErr
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if startErr != nil {
		return nil, startErr
	}
	in := &fakeInstance{done: make(chan struct{}), monitor: f.monitor, stopped: make(chan struct{})}
	in.checkErr.Store(errHolder{errors.New("not yet")})
	f.mu.Lock()
	f.instances[s.Guid] = in
	f.mu.Unlock()
	return in, nil
}

func (f *fakeBackend) instance(t *testing.T, guid string) *fakeInstance {
	t.Helper()
	var in *fakeInstance
	eventually(t, "instance "+guid+" to start", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		in = f.instances[guid]
		return in != nil
	})
	return in
}

type errHolder struct{ err error }

// fakeInstance exits non-zero when stopped, as a process killed by SIGTERM does.
type fakeInstance struct {
	monitor   bool
	checkErr  atomic.Value // errHolder
	checks    atomic.Int64
	stopDelay time.Duration

	mu       sync.Mutex
	done     chan struct{}
	err      error
	stopped  chan struct{}
	stopOnce sync.Once
}

func (f *fakeInstance) setHealth(err error) { f.checkErr.Store(errHolder{err}) }

func (f *fakeInstance) exit(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.done:
	default:
		f.err = err
		close(f.done)
	}
}

func (f *fakeInstance) Done() <-chan struct{} { return f.done }

func (f *fakeInstance) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeInstance) HasMonitor() bool { return f.monitor }

func (f *fakeInstance) Check(ctx context.Context) error {
	f.checks.Add(1)
	return f.checkErr.Load().(errHolder).err
}

func (f *fakeInstance) CheckReadiness(context.Context) error { return nil }

func (f *fakeInstance) Stop(time.Duration) {
	f.stopOnce.Do(func() {
		time.Sleep(f.stopDelay)
		f.exit(errors.New("signal: terminated"))
		close(f.stopped)
	})
}

func (f *fakeInstance) wasStopped() bool {
	select {
	case <-f.stopped:
		return true
	default:
		return false
	}
}
