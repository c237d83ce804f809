package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
)

// --- chaos: per-index scripting and real crashes on top of the sim backend ---

// chaos scripts what the sim's environment cannot: start failures by index (the sim's
// SIM_HEALTHY_PROBABILITY is drawn per random instance guid) and crashes on demand, which the
// executor sees as the action exiting — a real crash that the cell reports, not a fake report
// through the API while the container keeps running.
type chaos struct {
	mu     sync.Mutex
	live   map[string]*chaosInstance // by instance guid
	hung   map[string]chan struct{}  // starts held by startHangs, by instance guid
	tries  map[slotKeyGUID]int
	script func(key model.ActualLRPKey, attempt int) startOutcome
}

// startOutcome is what a scripted start does.
type startOutcome int

const (
	startNormally startOutcome = iota // as the sim's environment says
	startFails                        // fails after 20 ms, as a crash on startup
	startHangs                        // never returns until release (a crash) or a stop
)

type slotKeyGUID struct {
	guid, def string
	index     int32
}

func newChaos() *chaos {
	return &chaos{live: map[string]*chaosInstance{}, hung: map[string]chan struct{}{}, tries: map[slotKeyGUID]int{}}
}

// backend is a chaos backend around the sim one (testcluster.Options.Backend).
func (ch *chaos) backend(seed int64) executor.Backend {
	return &chaosBackend{inner: sim.New(seed), ch: ch}
}

func (ch *chaos) setScript(f func(key model.ActualLRPKey, attempt int) startOutcome) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.script = f
}

// release makes a start held by startHangs fail now; it reports whether there was one.
func (ch *chaos) release(instanceGUID string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	hold, ok := ch.hung[instanceGUID]
	if ok {
		close(hold)
		delete(ch.hung, instanceGUID)
	}
	return ok
}

func (ch *chaos) attempts(guid, def string, index int32) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.tries[slotKeyGUID{guid, def, index}]
}

// crash makes the instance's action exit with an error now.
func (ch *chaos) crash(instanceGUID string) bool {
	ch.mu.Lock()
	ci := ch.live[instanceGUID]
	delete(ch.live, instanceGUID)
	ch.mu.Unlock()
	if ci == nil {
		return false
	}
	ci.crash(errors.New("scripted crash (scenario chaos)"))
	return true
}

type chaosBackend struct {
	inner executor.Backend
	ch    *chaos
}

func (b *chaosBackend) Start(ctx context.Context, spec executor.StartSpec) (executor.Instance, error) {
	k := slotKeyGUID{spec.Key.ProcessGUID, spec.Key.DefinitionID, spec.Key.Index}
	b.ch.mu.Lock()
	b.ch.tries[k]++
	attempt, script := b.ch.tries[k], b.ch.script
	out := startNormally
	if script != nil {
		out = script(spec.Key, attempt)
	}
	hold := make(chan struct{})
	if out == startHangs {
		b.ch.hung[spec.Guid] = hold
	}
	b.ch.mu.Unlock()
	switch out {
	case startFails:
		select { // as long as a quick start takes, so that a failing index does not spin
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, fmt.Errorf("scripted start failure at index %d (attempt %d)", spec.Key.Index, attempt)
	case startHangs:
		select {
		case <-ctx.Done():
			b.ch.release(spec.Guid)
		case <-hold:
		}
		return nil, fmt.Errorf("scripted start failure after a hang at index %d (attempt %d)", spec.Key.Index, attempt)
	}
	inst, err := b.inner.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	ci := &chaosInstance{Instance: inst, done: make(chan struct{}), crashed: make(chan struct{})}
	go ci.watch()
	b.ch.mu.Lock()
	b.ch.live[spec.Guid] = ci
	b.ch.mu.Unlock()
	return ci, nil
}

// chaosInstance is a sim instance whose action can be made to exit with an error.
type chaosInstance struct {
	executor.Instance
	done    chan struct{}
	crashed chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error
}

func (ci *chaosInstance) watch() {
	select {
	case <-ci.Instance.Done():
	case <-ci.crashed:
	}
	close(ci.done)
}

func (ci *chaosInstance) crash(err error) {
	ci.once.Do(func() {
		ci.mu.Lock()
		ci.err = err
		ci.mu.Unlock()
		close(ci.crashed)
	})
}

func (ci *chaosInstance) Done() <-chan struct{} { return ci.done }

func (ci *chaosInstance) Err() error {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.err != nil {
		return ci.err
	}
	return ci.Instance.Err()
}

func (ci *chaosInstance) Check(ctx context.Context) error {
	select {
	case <-ci.crashed:
		return ci.Err()
	default:
	}
	return ci.Instance.Check(ctx)
}
