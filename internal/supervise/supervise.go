// Package supervise keeps the dev mode's child processes (PostgreSQL, the Temporal dev
// server) running: it notices when one dies, says so in the log, starts it again with the
// same configuration — and so the same state — after a back-off, and gives up when it keeps
// dying, as an init system's restart limit does, rather than restarting it in a tight loop.
package supervise

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Child is a running process.
type Child interface {
	// Done is closed once the process has gone away.
	Done() <-chan struct{}
	// Err says why, once Done is closed.
	Err() error
	// PID identifies the process in the log.
	PID() int
	// Stop ends the process and waits for it.
	Stop() error
}

// Policy paces restarts. A failure is a death or a failed start: the wait before the next
// start is MinDelay after one failure within Window and doubles with each further one, up to
// MaxDelay; one failure more than Burst within Window and the supervisor gives up. A child
// that ran at least MinUptime (when set) before it died was not crash-looping: its death
// clears the failures counted so far, so that a process killed now and then from outside (an
// operator, a fault injector, the OOM killer) is restarted, after MinDelay, every time.
type Policy struct {
	MinDelay, MaxDelay time.Duration
	Burst              int
	Window             time.Duration
	MinUptime          time.Duration
}

// DefaultPolicy waits 1 s, 2 s, 4 s, 8 s, 16 s, and gives up after a sixth failure within
// two minutes, each death within 10 s of its start: a process that cannot run is not
// hammered, one that runs and is killed is always restarted.
var DefaultPolicy = Policy{MinDelay: time.Second, MaxDelay: 30 * time.Second, Burst: 5, Window: 2 * time.Minute,
	MinUptime: 10 * time.Second}

// Supervisor keeps one child running.
type Supervisor struct {
	name   string
	start  func(context.Context) (Child, error)
	policy Policy
	log    *zap.Logger
	cancel context.CancelFunc
	ended  chan struct{} // the loop returned

	mu     sync.Mutex
	cur    Child
	failed chan struct{} // closed when the supervisor gave up; err says why
	err    error
}

// Watch supervises first, which start started, and restarts it with start whenever it
// dies, until Stop. name is how the log calls it ("PostgreSQL").
func Watch(name string, first Child, start func(context.Context) (Child, error), p Policy, log *zap.Logger) *Supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{name: name, start: start, policy: p, log: log, cancel: cancel,
		ended: make(chan struct{}), cur: first, failed: make(chan struct{})}
	go s.run(ctx, first)
	return s
}

// Failed is closed when the supervisor has given up on the child; Err says why.
func (s *Supervisor) Failed() <-chan struct{} { return s.failed }

// Err says why the supervisor gave up, once Failed is closed.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stop ends the supervision, then stops the child that runs now (if any).
func (s *Supervisor) Stop() error {
	s.cancel()
	<-s.ended
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	return cur.Stop()
}

func (s *Supervisor) run(ctx context.Context, child Child) {
	defer close(s.ended)
	var failures []time.Time
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-child.Done():
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn(fmt.Sprintf("%s exited: %v; restarting", s.name, child.Err()), zap.Int("pid", child.PID()))
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		if s.policy.MinUptime > 0 && time.Since(started) >= s.policy.MinUptime {
			failures = nil
		}
		failures = append(failures, time.Now())
		for {
			failures = within(failures, s.policy.Window)
			if len(failures) > s.policy.Burst {
				s.giveUp(fmt.Errorf("%s died or failed to start %d times within %s; giving up", s.name, len(failures), s.policy.Window))
				return
			}
			delay := backoff(s.policy, len(failures))
			s.log.Info(fmt.Sprintf("restarting %s in %s", s.name, delay))
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			next, err := s.start(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn(fmt.Sprintf("%s did not start again: %v", s.name, err))
				failures = append(failures, time.Now())
				continue
			}
			s.mu.Lock()
			s.cur = next
			s.mu.Unlock()
			s.log.Info(fmt.Sprintf("%s restarted", s.name), zap.Int("pid", next.PID()))
			child, started = next, time.Now()
			break
		}
	}
}

func (s *Supervisor) giveUp(err error) {
	s.log.Error(err.Error())
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.failed)
}

// within keeps the times of the last window.
func within(ts []time.Time, window time.Duration) []time.Time {
	cut := time.Now().Add(-window)
	i := 0
	for i < len(ts) && ts[i].Before(cut) {
		i++
	}
	return ts[i:]
}

// backoff is the wait before a start that follows n recent failures.
func backoff(p Policy, n int) time.Duration {
	d := p.MinDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}
