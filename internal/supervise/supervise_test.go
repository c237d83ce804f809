package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// fake is a child that dies when told to.
type fake struct {
	pid     int
	done    chan struct{}
	once    sync.Once
	err     error
	stopped bool
}

func newFake(pid int) *fake { return &fake{pid: pid, done: make(chan struct{})} }

func (f *fake) Done() <-chan struct{} { return f.done }
func (f *fake) Err() error            { return f.err }
func (f *fake) PID() int              { return f.pid }
func (f *fake) die(err error)         { f.once.Do(func() { f.err = err; close(f.done) }) }
func (f *fake) Stop() error {
	f.stopped = true
	f.die(nil)
	return nil
}

// starter starts fakes, failing the starts fail says should.
type starter struct {
	mu       sync.Mutex
	started  []*fake
	attempts int
	fail     func(attempt int) bool
}

func (s *starter) start(ctx context.Context) (Child, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.fail != nil && s.fail(s.attempts) {
		return nil, fmt.Errorf("attempt %d failed", s.attempts)
	}
	f := newFake(100 + s.attempts)
	s.started = append(s.started, f)
	return f, nil
}

func (s *starter) last() *fake {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.started) == 0 {
		return nil
	}
	return s.started[len(s.started)-1]
}

func (s *starter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.started)
}

var quick = Policy{MinDelay: 5 * time.Millisecond, MaxDelay: 40 * time.Millisecond, Burst: 3, Window: time.Minute}

func TestRestartsADeadChildAndLogsIt(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	st := &starter{}
	first := newFake(1)
	s := Watch("Temporal dev server", first, st.start, quick, zap.New(core))

	first.die(errors.New("signal: killed"))
	testwait.Until(t, 5*time.Second, time.Millisecond, "a restart", func() bool { return st.count() == 1 })
	if logs.FilterMessage("Temporal dev server exited: signal: killed; restarting").Len() != 1 {
		t.Fatalf("log: %v", logs.All())
	}
	testwait.Until(t, 5*time.Second, time.Millisecond, "the restart to be logged", func() bool {
		return logs.FilterMessage("Temporal dev server restarted").Len() == 1
	})
	// And again: supervision goes on with the new child.
	st.last().die(errors.New("exit status 1"))
	testwait.Until(t, 5*time.Second, time.Millisecond, "a second restart", func() bool { return st.count() == 2 })

	second := st.last()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !second.stopped {
		t.Fatal("Stop did not stop the running child")
	}
	select {
	case <-s.Failed():
		t.Fatal("the supervisor gave up")
	default:
	}
	if st.count() != 2 {
		t.Fatalf("a child stopped by Stop was restarted (%d starts)", st.count())
	}
}

func TestRetriesFailedStartsWithBackoffThenGivesUp(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	st := &starter{fail: func(int) bool { return true }}
	first := newFake(1)
	s := Watch("PostgreSQL", first, st.start, quick, zap.New(core))
	first.die(errors.New("postmaster gone"))
	select {
	case <-s.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor never gave up on a child that cannot start")
	}
	// One death and three failed starts fill the burst of 3; the fourth failure gives up.
	if st.attempts != 3 || !strings.Contains(s.Err().Error(), "PostgreSQL died or failed to start 4 times") {
		t.Fatalf("attempts %d, error %v", st.attempts, s.Err())
	}
	var delays []string
	for _, e := range logs.All() {
		if strings.HasPrefix(e.Message, "restarting PostgreSQL in ") {
			delays = append(delays, strings.TrimPrefix(e.Message, "restarting PostgreSQL in "))
		}
	}
	if strings.Join(delays, " ") != "5ms 10ms 20ms" {
		t.Fatalf("back-off = %v, want 5ms 10ms 20ms", delays)
	}
	if logs.FilterMessageSnippet("giving up").Len() != 1 {
		t.Fatalf("log: %v", logs.All())
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAStartThatFailsOnceIsRetried(t *testing.T) {
	st := &starter{fail: func(n int) bool { return n == 1 }}
	first := newFake(1)
	s := Watch("PostgreSQL", first, st.start, quick, zap.NewNop())
	defer s.Stop()
	first.die(errors.New("postmaster gone"))
	testwait.Until(t, 5*time.Second, time.Millisecond, "the second attempt to start it", func() bool { return st.count() == 1 })
	select {
	case <-s.Failed():
		t.Fatal("gave up")
	default:
	}
}

func TestBackoffIsCapped(t *testing.T) {
	p := Policy{MinDelay: time.Second, MaxDelay: 30 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 60: 30 * time.Second} {
		if got := backoff(p, n); got != want {
			t.Errorf("backoff after %d failures = %s, want %s", n, got, want)
		}
	}
}

func TestStopDuringTheBackoffStartsNothing(t *testing.T) {
	st := &starter{}
	first := newFake(1)
	s := Watch("PostgreSQL", first, st.start, Policy{MinDelay: time.Hour, MaxDelay: time.Hour, Burst: 3, Window: time.Minute}, zap.NewNop())
	first.die(errors.New("gone"))
	time.Sleep(20 * time.Millisecond)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if st.count() != 0 {
		t.Fatal("a child was started after Stop")
	}
}
