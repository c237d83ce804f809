package model_test

import (
	"math"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// t0 is an arbitrary crash time; the policy only looks at differences.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestDefaultRestartPolicy(t *testing.T) {
	want := model.RestartPolicy{
		ImmediateRestarts: 3,
		MaxRestarts:       200,
		BaseDelay:         30 * time.Second,
		MaxDelay:          16 * time.Minute,
		ResetAfter:        5 * time.Minute,
	}
	if got := model.DefaultRestartPolicy(); got != want {
		t.Errorf("DefaultRestartPolicy() = %+v, want %+v", got, want)
	}
}

func TestRestartDelay(t *testing.T) {
	p := model.DefaultRestartPolicy()
	for _, c := range []struct {
		name  string
		count int32
		delay time.Duration
		ok    bool
	}{
		{"negative count needs no wait", -1, 0, true},
		{"never crashed", 0, 0, true},
		{"first crash restarts at once", 1, 0, true},
		{"second crash restarts at once", 2, 0, true},
		{"third crash is the last immediate one", 3, 0, true},
		{"fourth crash waits the base delay", 4, 30 * time.Second, true},
		{"then doubles", 5, time.Minute, true},
		{"count 6", 6, 2 * time.Minute, true},
		{"count 7", 7, 4 * time.Minute, true},
		{"count 8", 8, 8 * time.Minute, true},
		{"count 9 reaches the 16 min cap exactly", 9, 16 * time.Minute, true},
		{"count 10 stays at the cap", 10, 16 * time.Minute, true},
		{"count 100 stays at the cap without overflowing", 100, 16 * time.Minute, true},
		{"count 199", 199, 16 * time.Minute, true},
		{"count 200 is the last one restarted", 200, 16 * time.Minute, true},
		{"count 201 is never restarted", 201, 0, false},
		{"largest count is never restarted", math.MaxInt32, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			delay, ok := p.RestartDelay(c.count)
			if delay != c.delay || ok != c.ok {
				t.Errorf("RestartDelay(%d) = %v, %v; want %v, %v", c.count, delay, ok, c.delay, c.ok)
			}
		})
	}
}

func TestRestartDelayOtherPolicies(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     model.RestartPolicy
		count int32
		delay time.Duration
		ok    bool
	}{
		{"a cap that is not a power-of-two multiple is still the cap",
			model.RestartPolicy{ImmediateRestarts: 0, MaxRestarts: 10, BaseDelay: 10 * time.Second, MaxDelay: 25 * time.Second}, 3, 25 * time.Second, true},
		{"below that cap the delay doubles",
			model.RestartPolicy{ImmediateRestarts: 0, MaxRestarts: 10, BaseDelay: 10 * time.Second, MaxDelay: 25 * time.Second}, 2, 20 * time.Second, true},
		{"no cap saturates instead of overflowing",
			model.RestartPolicy{ImmediateRestarts: 0, MaxRestarts: math.MaxInt32, BaseDelay: time.Second}, math.MaxInt32, math.MaxInt64, true},
		{"a zero base delay restarts without waiting",
			model.RestartPolicy{ImmediateRestarts: 0, MaxRestarts: 10, MaxDelay: time.Minute}, 5, 0, true},
		{"MaxRestarts wins over ImmediateRestarts",
			model.RestartPolicy{ImmediateRestarts: 3, MaxRestarts: 2}, 3, 0, false},
		{"the zero policy never restarts a crash",
			model.RestartPolicy{}, 1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			delay, ok := c.p.RestartDelay(c.count)
			if delay != c.delay || ok != c.ok {
				t.Errorf("RestartDelay(%d) = %v, %v; want %v, %v", c.count, delay, ok, c.delay, c.ok)
			}
		})
	}
}

func TestCrashDance(t *testing.T) {
	p := model.DefaultRestartPolicy()
	var never time.Time
	for _, c := range []struct {
		name         string
		count        int32
		runningSince time.Time
		now          time.Time
		newCount     int32
		restartNow   bool
	}{
		{"first crash restarts at once", 0, never, t0, 1, true},
		{"second crash restarts at once", 1, never, t0, 2, true},
		{"third crash restarts at once", 2, never, t0, 3, true},
		{"fourth crash goes to CRASHED", 3, never, t0, 4, false},
		{"a crash at the cap goes to CRASHED", 10, never, t0, 11, false},
		{"200th crash goes to CRASHED (and is still restarted later)", 199, never, t0, 200, false},
		{"201st crash goes to CRASHED for good", 200, never, t0, 201, false},
		{"a negative stored count counts as none", -5, never, t0, 1, true},
		{"the largest count saturates instead of wrapping", math.MaxInt32, never, t0, math.MaxInt32, false},

		{"running exactly ResetAfter resets the count", 50, t0.Add(-5 * time.Minute), t0, 1, true},
		{"running longer resets the count", 50, t0.Add(-time.Hour), t0, 1, true},
		{"running a nanosecond less does not reset", 50, t0.Add(-5*time.Minute + time.Nanosecond), t0, 51, false},
		{"a reset also rescues an instance past MaxRestarts", 500, t0.Add(-5 * time.Minute), t0, 1, true},
		{"a short run keeps an immediate count immediate", 1, t0.Add(-time.Second), t0, 2, true},

		{"zero runningSince (never ran) does not reset", 50, never, t0, 51, false},
		{"zero now does not reset", 50, t0.Add(-time.Hour), never, 51, false},
		{"both zero do not reset", 50, never, never, 51, false},
		{"runningSince after now (clock skew) does not reset", 50, t0.Add(time.Hour), t0, 51, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, r := p.CrashDance(c.count, c.runningSince, c.now)
			if n != c.newCount || r != c.restartNow {
				t.Errorf("CrashDance(%d, %v, %v) = %d, %v; want %d, %v", c.count, c.runningSince, c.now, n, r, c.newCount, c.restartNow)
			}
		})
	}
}

// TestCrashDanceLoop follows an instance that crashes as soon as it starts: the rep restarts
// the first three crashes itself, and every later one is left to the converger.
func TestCrashDanceLoop(t *testing.T) {
	p := model.DefaultRestartPolicy()
	var count int32
	for crash := 1; crash <= 205; crash++ {
		var now bool
		count, now = p.CrashDance(count, time.Time{}, t0)
		if count != int32(crash) {
			t.Fatalf("crash %d: count %d", crash, count)
		}
		if want := crash <= 3; now != want {
			t.Errorf("crash %d: restartNow %v, want %v", crash, now, want)
		}
		if _, ok := p.RestartDelay(count); ok != (crash <= 200) {
			t.Errorf("crash %d: restartable %v", crash, ok)
		}
	}
}

func TestShouldRestart(t *testing.T) {
	p := model.DefaultRestartPolicy()
	var never time.Time
	for _, c := range []struct {
		name      string
		count     int32
		crashedAt time.Time
		now       time.Time
		want      bool
	}{
		{"an immediate count needs no wait", 3, t0, t0, true},
		{"count 4 just before 30 s", 4, t0, t0.Add(30*time.Second - time.Nanosecond), false},
		{"count 4 at exactly 30 s", 4, t0, t0.Add(30 * time.Second), true},
		{"count 5 at 30 s is too early", 5, t0, t0.Add(30 * time.Second), false},
		{"count 5 at 60 s", 5, t0, t0.Add(time.Minute), true},
		{"count 9 just before 16 min", 9, t0, t0.Add(16*time.Minute - time.Nanosecond), false},
		{"count 9 at 16 min", 9, t0, t0.Add(16 * time.Minute), true},
		{"count 12 is capped at 16 min", 12, t0, t0.Add(16 * time.Minute), true},
		{"count 200 at 16 min", 200, t0, t0.Add(16 * time.Minute), true},
		{"count 201 never, even a year later", 201, t0, t0.Add(365 * 24 * time.Hour), false},
		{"now before the crash (clock skew) waits", 4, t0, t0.Add(-time.Minute), false},

		{"zero crashedAt counts as long ago", 9, never, t0, true},
		{"zero crashedAt does not revive count 201", 201, never, t0, false},
		{"zero now is too early for a delayed count", 4, t0, never, false},
		{"both zero is too early for a delayed count", 4, never, never, false},
		{"zero now still allows an immediate count", 1, t0, never, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := p.ShouldRestart(c.count, c.crashedAt, c.now); got != c.want {
				t.Errorf("ShouldRestart(%d, %v, %v) = %v, want %v", c.count, c.crashedAt, c.now, got, c.want)
			}
		})
	}
}

// TestShouldRestartAgreesWithRestartDelay checks every count of the default policy: the
// converger restarts exactly when the delay has passed.
func TestShouldRestartAgreesWithRestartDelay(t *testing.T) {
	p := model.DefaultRestartPolicy()
	for count := int32(0); count <= 202; count++ {
		delay, ok := p.RestartDelay(count)
		for _, after := range []time.Duration{delay - time.Nanosecond, delay, delay + time.Nanosecond} {
			want := ok && (delay == 0 || after >= delay)
			if got := p.ShouldRestart(count, t0, t0.Add(after)); got != want {
				t.Errorf("count %d, %v after the crash: got %v, want %v", count, after, got, want)
			}
		}
	}
}
