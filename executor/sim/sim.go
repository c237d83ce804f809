// Package sim is an executor.Backend whose instances run no processes: their behaviour is
// scripted per definition through its environment, so that a cell can host thousands of
// instances and tests can produce every kind of start, crash and health outcome.
//
// Variables read from the instance's environment (all optional):
//
//	SIM_START_DELAY_MS       setup plus start takes this many milliseconds (default 0)
//	SIM_FAIL_START           probability 0..1 that Start returns an error (default 0)
//	SIM_CRASH_AFTER_MS       the action exits non-zero this long after it started
//	SIM_EXIT_AFTER_MS        the action exits with status 0 this long after it started
//	                         (when both are set, whichever comes first happens; a tie crashes)
//	SIM_MONITOR              how the health check behaves, when the definition has a monitor
//	                         action or check definition:
//	                           "pass" (default)     always healthy
//	                           "fail"               never healthy
//	                           "pass-after:<ms>"    unhealthy until <ms> after start
//	                           "fail-after:<ms>"    healthy until <ms> after start
//	SIM_READINESS            how the readiness checks behave, when the definition has any;
//	                         the same values as SIM_MONITOR (default "pass")
//	SIM_HEALTHY_PROBABILITY  probability 0..1, drawn once per instance at start, that its
//	                         health check can ever pass (default 1), for flaky definitions
//	SIM_RESULT               what a task's result file holds (default empty)
//	SIM_LAST_OUTPUT          the output the instance wrote last, which its crash reasons
//	                         quote as a process's would (default none)
//
// A task whose script neither crashes nor exits exits with status 0 at once.
//
// An unparsable value makes Start fail with a reason naming the variable. Random draws come
// from a math/rand/v2 source seeded by the backend's seed and the instance guid, so a run with
// the same seed and guids behaves the same. Instances use timers only: no goroutines and no
// processes of their own.
package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
)

// Backend starts simulated instances.
type Backend struct {
	seed int64
	// dir, when set, records the running instances so that they outlive their cell agent,
	// as processes do (adopt.go).
	dir string
}

// New returns a Backend whose random draws are derived from seed.
func New(seed int64) *Backend { return &Backend{seed: seed} }

var _ executor.Backend = (*Backend)(nil)

// script is an instance's parsed SIM_* variables.
type script struct {
	startDelay  time.Duration
	failStart   float64
	crashAfter  time.Duration // <0: never
	exitAfter   time.Duration // <0: never
	monitor     probe
	readiness   probe
	healthyProb float64
	result      string
	lastOutput  string
}

// Start simulates setup and the start of the action.
func (b *Backend) Start(ctx context.Context, spec executor.StartSpec) (executor.Instance, error) {
	sc, err := parseScript(spec.Env)
	if err != nil {
		return nil, err
	}
	failDraw, healthyDraw := b.draws(spec.Guid)

	if sc.startDelay > 0 {
		t := time.NewTimer(sc.startDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("start cancelled: %w", ctx.Err())
		case <-t.C:
		}
	}
	if failDraw < sc.failStart {
		return nil, errors.New("simulated start failure (SIM_FAIL_START)")
	}

	if spec.TaskGUID != "" && sc.crashAfter < 0 && sc.exitAfter < 0 {
		sc.exitAfter = 0
	}
	in := b.run(spec, sc, healthyDraw, time.Now())
	b.record(spec, in)
	return in, nil
}

// draws are an instance's random draws, from the backend's seed and its guid. Both happen on
// every start, in a fixed order, so changing one probability does not shift the other's
// outcome.
func (b *Backend) draws(guid string) (failDraw, healthyDraw float64) {
	// A PCG source: math/rand's default one costs ~10 µs to seed, 1.6 % of all the CPU of
	// make bench-scale's run when a thousand sim cells start 250,000 instances.
	h := fnv.New64a()
	h.Write([]byte(guid))
	rng := rand.New(rand.NewPCG(uint64(b.seed), h.Sum64()))
	return rng.Float64(), rng.Float64()
}

// run makes the running instance of spec, started at started: its crash or exit comes that
// long after started.
func (b *Backend) run(spec executor.StartSpec, sc script, healthyDraw float64, started time.Time) *instance {
	in := &instance{
		started:      started,
		done:         make(chan struct{}),
		hasMonitor:   executor.HasHealthCheck(spec.Definition),
		hasReadiness: executor.HasReadinessCheck(spec.Definition),
		sc:           sc,
		canBeHealthy: healthyDraw < sc.healthyProb,
	}
	left := func(d time.Duration) time.Duration { return max(0, d-time.Since(started)) }
	switch {
	case sc.crashAfter >= 0 && (sc.exitAfter < 0 || sc.crashAfter <= sc.exitAfter):
		in.timer = time.AfterFunc(left(sc.crashAfter), func() {
			in.exit(fmt.Errorf("simulated crash after %dms (SIM_CRASH_AFTER_MS)", sc.crashAfter.Milliseconds()))
		})
	case sc.exitAfter >= 0:
		in.timer = time.AfterFunc(left(sc.exitAfter), func() { in.exit(nil) })
	}
	return in
}

// instance is one simulated instance.
type instance struct {
	started      time.Time
	hasMonitor   bool
	hasReadiness bool
	sc           script
	canBeHealthy bool

	mu    sync.Mutex
	timer *time.Timer
	done  chan struct{}
	err   error
	// record is the file that lets a restarted agent adopt it (adopt.go); "" for none.
	record string
}

var (
	_ executor.Instance     = (*instance)(nil)
	_ executor.OutputTailer = (*instance)(nil)
)

func (in *instance) exit(err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-in.done:
	default:
		in.err = err
		close(in.done)
		if in.record != "" {
			os.Remove(in.record)
		}
	}
}

// ReadResultFile returns SIM_RESULT, whatever the path: a simulated task writes no files.
func (in *instance) ReadResultFile(_ string, limit int) ([]byte, bool, error) {
	if len(in.sc.result) > limit {
		return []byte(in.sc.result[:limit]), true, nil
	}
	return []byte(in.sc.result), false, nil
}

// OutputTail returns the end of SIM_LAST_OUTPUT: a simulated instance writes nothing.
func (in *instance) OutputTail() []byte {
	out := in.sc.lastOutput
	return []byte(out[max(0, len(out)-executor.OutputTailBytes):])
}

// Done is closed when the simulated action exits.
func (in *instance) Done() <-chan struct{} { return in.done }

// Err tells how the simulated action exited.
func (in *instance) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// HasMonitor mirrors whether the definition has a monitor action or check definition.
func (in *instance) HasMonitor() bool { return in.hasMonitor }

// Check answers from the script and the time since start.
func (in *instance) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !in.canBeHealthy {
		return errors.New("simulated unhealthy instance (SIM_HEALTHY_PROBABILITY)")
	}
	return in.sc.monitor.check(time.Since(in.started), "SIM_MONITOR", "health check")
}

// CheckReadiness answers from SIM_READINESS and the time since start; an instance whose
// definition has no readiness checks is always ready.
func (in *instance) CheckReadiness(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !in.hasReadiness {
		return nil
	}
	return in.sc.readiness.check(time.Since(in.started), "SIM_READINESS", "readiness check")
}

// probe is a scripted check: SIM_MONITOR's or SIM_READINESS's value.
type probe struct {
	mode  string // "pass", "fail", "pass-after", "fail-after"
	after time.Duration
}

func (p probe) check(elapsed time.Duration, variable, what string) error {
	switch p.mode {
	case "fail":
		return fmt.Errorf("simulated %s failure (%s=fail)", what, variable)
	case "pass-after":
		if elapsed < p.after {
			return fmt.Errorf("simulated: %s not passing before %dms (%s)", what, p.after.Milliseconds(), variable)
		}
	case "fail-after":
		if elapsed >= p.after {
			return fmt.Errorf("simulated %s failure after %dms (%s)", what, p.after.Milliseconds(), variable)
		}
	}
	return nil
}

func parseProbe(name, v string) (probe, error) {
	mode, arg, hasArg := strings.Cut(strings.TrimSpace(v), ":")
	switch {
	case (mode == "pass" || mode == "fail") && !hasArg:
		return probe{mode: mode}, nil
	case (mode == "pass-after" || mode == "fail-after") && hasArg:
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 0 {
			return probe{}, fmt.Errorf("%s=%q: want a non-negative number of milliseconds after %q", name, v, mode+":")
		}
		return probe{mode: mode, after: time.Duration(n) * time.Millisecond}, nil
	}
	return probe{}, fmt.Errorf("%s=%q: want pass, fail, pass-after:<ms> or fail-after:<ms>", name, v)
}

// Stop ends the simulated action at once; the grace period is not needed.
func (in *instance) Stop(time.Duration) {
	in.mu.Lock()
	if in.timer != nil {
		in.timer.Stop()
	}
	in.mu.Unlock()
	in.exit(errors.New("stopped"))
}

func parseScript(env []model.EnvironmentVariable) (script, error) {
	sc := script{crashAfter: -1, exitAfter: -1, monitor: probe{mode: "pass"}, readiness: probe{mode: "pass"}, healthyProb: 1}
	var vars map[string]string // most instances have none: no map to make
	for _, v := range env {
		if strings.HasPrefix(v.Name, "SIM_") {
			if vars == nil {
				vars = map[string]string{}
			}
			vars[v.Name] = v.Value // later entries win, as in a process environment
		}
	}
	var err error
	ms := func(name string, dst *time.Duration) {
		v, ok := vars[name]
		if !ok || err != nil {
			return
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if perr != nil || n < 0 {
			err = fmt.Errorf("%s=%q: want a non-negative number of milliseconds", name, v)
			return
		}
		*dst = time.Duration(n) * time.Millisecond
	}
	prob := func(name string, dst *float64) {
		v, ok := vars[name]
		if !ok || err != nil {
			return
		}
		f, perr := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if perr != nil || f < 0 || f > 1 {
			err = fmt.Errorf("%s=%q: want a probability between 0 and 1", name, v)
			return
		}
		*dst = f
	}
	ms("SIM_START_DELAY_MS", &sc.startDelay)
	prob("SIM_FAIL_START", &sc.failStart)
	ms("SIM_CRASH_AFTER_MS", &sc.crashAfter)
	ms("SIM_EXIT_AFTER_MS", &sc.exitAfter)
	prob("SIM_HEALTHY_PROBABILITY", &sc.healthyProb)
	sc.result, sc.lastOutput = vars["SIM_RESULT"], vars["SIM_LAST_OUTPUT"]
	if err != nil {
		return script{}, err
	}
	for _, p := range []struct {
		name string
		dst  *probe
	}{{"SIM_MONITOR", &sc.monitor}, {"SIM_READINESS", &sc.readiness}} {
		if v, ok := vars[p.name]; ok {
			if *p.dst, err = parseProbe(p.name, v); err != nil {
				return script{}, err
			}
		}
	}
	return sc, nil
}
