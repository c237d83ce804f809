// Package process is an executor.Backend that runs a definition's actions as local OS
// processes, for a cell on a developer machine or a test host.
//
// There is no container: every instance gets a working directory <workDir>/<instance guid>
// (removed when it stops), shares the host's network (so it must listen on $PORT, a host
// port), and runs as the cell's own user. Run actions execute with an environment made of
// PATH (the cell's), HOME (the instance directory), the instance's environment and then the
// run action's own env. Every process is the leader of its own process group, so stopping an
// instance reaches whatever its processes spawned (a `sh -c` and its children).
//
// Supported actions: run, serial, parallel, codependent, timeout, try and emit_progress.
// Download and upload make Start fail with a clear reason; a run action's user and
// resource_limits are ignored (there is no isolation to apply them to).
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/internal/procs"
	"github.com/updatable-lrps/bbs/model"
)

// interruptGrace is how long a process told to stop by its own definition (a codependent
// sibling exited, a timeout or health check expired) gets before it is killed. Stopping the
// whole instance uses the grace period the executor passes instead.
const interruptGrace = 5 * time.Second

// Backend starts instances as local processes.
type Backend struct {
	workDir string
	log     *zap.Logger
}

var _ executor.Backend = (*Backend)(nil)

// New returns a Backend that keeps instance directories under workDir.
func New(workDir string, log *zap.Logger) *Backend {
	if log == nil {
		log = zap.NewNop()
	}
	return &Backend{workDir: workDir, log: log}
}

// instance is one running instance: its directory, its process groups and its action.
type instance struct {
	backend *Backend
	spec    executor.StartSpec
	dir     string
	env     []string
	log     *zap.Logger
	out     *output

	mu sync.Mutex
	// groups holds the process groups that may still have members; stop signals each.
	groups   map[int]struct{}
	stopping bool

	mainStarted bool
	done        chan struct{}
	err         error

	stopOnce sync.Once
	stopped  chan struct{}
}

var (
	_ executor.Instance     = (*instance)(nil)
	_ executor.OutputTailer = (*instance)(nil)
)

// Start checks that every action is supported, creates the instance directory, runs setup to
// completion and then starts the action in the background.
func (b *Backend) Start(ctx context.Context, spec executor.StartSpec) (executor.Instance, error) {
	def := spec.Definition
	if spec.Guid == "" || spec.Guid != filepath.Base(spec.Guid) || spec.Guid == "." || spec.Guid == ".." {
		// The guid names a directory we later remove; it must not point elsewhere.
		return nil, fmt.Errorf("instance guid %q cannot name a directory", spec.Guid)
	}
	if def.Action == nil {
		return nil, errors.New("definition has no action")
	}
	for _, a := range []*model.Action{def.Setup, def.Action, def.Monitor} {
		if err := supported(a); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(b.workDir, spec.Guid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create instance directory: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("instance directory: %w", err)
	}
	log := b.log.With(zap.String("guid", spec.Guid), zap.String("process_guid", spec.Key.ProcessGUID),
		zap.Int32("index", spec.Key.Index))
	if err := os.MkdirAll(b.stateDir(), 0o755); err != nil {
		os.RemoveAll(absDir)
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	out, err := newOutput(spec.Log, prefix(spec), b.outputFile(spec.Guid))
	if err != nil {
		os.RemoveAll(absDir)
		return nil, err
	}
	in := &instance{
		backend: b,
		spec:    spec,
		dir:     absDir,
		env:     baseEnv(absDir, spec.Env),
		log:     log,
		out:     out,
		groups:  map[int]struct{}{},
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if users := runUsers(def.Setup, def.Action, def.Monitor); len(users) > 0 {
		log.Info("ignoring the user of run actions: the process executor does not switch users",
			zap.Strings("users", users))
	}

	if def.Setup != nil {
		err := in.runAction(ctx, def.Setup)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			// Read before Stop removes the output: the setup's last line says why it failed.
			reason := executor.WithLastOutput("setup failed: "+err.Error(), in.OutputTail())
			in.Stop(interruptGrace)
			return nil, errors.New(reason)
		}
	}
	in.mu.Lock()
	in.mainStarted = true
	in.mu.Unlock()
	b.record(in)
	go func() {
		err := in.runAction(context.Background(), def.Action)
		in.mu.Lock()
		in.err = err
		in.mu.Unlock()
		close(in.done)
	}()
	return in, nil
}

// ReadResultFile reads a task's result file. The path is taken inside the instance
// directory (the container's root): an absolute path such as /tmp/result.json names
// <dir>/tmp/result.json, and no path leads outside it.
func (in *instance) ReadResultFile(path string, limit int) ([]byte, bool, error) {
	f, err := os.Open(filepath.Join(in.dir, filepath.Clean("/"+path)))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// Done is closed when the action exits.
func (in *instance) Done() <-chan struct{} { return in.done }

// Err tells how the action exited: nil for success.
func (in *instance) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// HasMonitor reports whether the definition has a monitor action or check definition.
func (in *instance) HasMonitor() bool { return executor.HasHealthCheck(in.spec.Definition) }

// Stop sends SIGTERM to every process group of the instance, SIGKILL to what is left after
// grace, waits for the action to end and removes the instance directory. Concurrent calls all
// wait for the first to finish.
func (in *instance) Stop(grace time.Duration) {
	in.stopOnce.Do(func() {
		defer close(in.stopped)
		in.mu.Lock()
		in.stopping = true
		mainStarted := in.mainStarted
		in.mu.Unlock()

		in.signalAll(syscall.SIGTERM)
		if !in.waitGone(mainStarted, time.Now().Add(grace)) {
			in.signalAll(syscall.SIGKILL)
			// SIGKILL cannot be ignored; the bound only covers zombies nobody reaps, which
			// still count as group members.
			in.waitGone(mainStarted, time.Now().Add(2*time.Second))
		}
		if mainStarted {
			<-in.done
		}
		in.out.close()
		if err := in.backend.forget(in.spec.Guid); err != nil {
			in.log.Warn("could not remove instance directory", zap.Error(err))
		}
	})
	<-in.stopped
}

func (in *instance) isStopping() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopping
}

func (in *instance) signalAll(sig syscall.Signal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for g := range in.groups {
		if err := syscall.Kill(-g, sig); errors.Is(err, syscall.ESRCH) {
			delete(in.groups, g)
		}
	}
}

// waitGone waits until the action has ended (when it was started) and every process group is
// empty, or until the deadline; it reports whether everything is gone.
func (in *instance) waitGone(mainStarted bool, deadline time.Time) bool {
	for {
		in.mu.Lock()
		for g := range in.groups {
			if !groupAlive(g) {
				delete(in.groups, g)
			}
		}
		empty := len(in.groups) == 0
		in.mu.Unlock()
		mainDone := true
		if mainStarted {
			select {
			case <-in.done:
			default:
				mainDone = false
			}
		}
		if empty && mainDone {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether a process group has a member that is not a zombie (a group of
// zombies has nothing left to stop; see procs.GroupAlive).
func groupAlive(pgid int) bool { return procs.GroupAlive(pgid) }

// baseEnv is what every process of the instance sees before a run action's own env.
func baseEnv(dir string, env []model.EnvironmentVariable) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	out := []string{"PATH=" + path, "HOME=" + dir}
	return append(out, envStrings(env)...)
}

func envStrings(env []model.EnvironmentVariable) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func prefix(spec executor.StartSpec) string {
	g := spec.Guid
	if len(g) > 8 {
		g = g[:8]
	}
	if spec.TaskGUID != "" {
		return fmt.Sprintf("[task %s %s] ", spec.TaskGUID, g)
	}
	return fmt.Sprintf("[%s/%d %s] ", spec.Key.ProcessGUID, spec.Key.Index, g)
}

// supported rejects the actions this backend cannot run, before anything starts, so the
// crash reason names the real problem rather than a half-run setup.
func supported(a *model.Action) error {
	if a == nil {
		return nil
	}
	switch {
	case a.Download != nil:
		return errors.New("download actions are not supported by the process executor")
	case a.Upload != nil:
		return errors.New("upload actions are not supported by the process executor")
	}
	for _, c := range children(a) {
		if err := supported(c); err != nil {
			return err
		}
	}
	return nil
}

func runUsers(actions ...*model.Action) []string {
	var users []string
	var walk func(a *model.Action)
	walk = func(a *model.Action) {
		if a == nil {
			return
		}
		if a.Run != nil && a.Run.User != "" {
			users = append(users, a.Run.User)
		}
		for _, c := range children(a) {
			walk(c)
		}
	}
	for _, a := range actions {
		walk(a)
	}
	return users
}

func children(a *model.Action) []*model.Action {
	switch {
	case a.Serial != nil:
		return a.Serial.Actions
	case a.Parallel != nil:
		return a.Parallel.Actions
	case a.Codependent != nil:
		return a.Codependent.Actions
	case a.Timeout != nil:
		return []*model.Action{a.Timeout.Action}
	case a.Try != nil:
		return []*model.Action{a.Try.Action}
	case a.EmitProgress != nil:
		return []*model.Action{a.EmitProgress.Action}
	}
	return nil
}
