package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap/zaptest"
)

// setInstance stores a as the instance of its definition and index.
func (f *fakeRolloutStore) setInstance(a model.ActualLRP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.ProcessGUID = "app"
	f.lrps[key(a.DefinitionID, a.Index)] = &a
}

// At its max_crashes-th crash a new instance is given up at once, as a crash loop with what the
// cell said; below it, the wait goes on.
func TestAwaitRunningGivesUpACrashLoop(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.setInstance(model.ActualLRP{ActualLRPKey: model.ActualLRPKey{DefinitionID: "def2", Index: 0}, State: model.StateCrashed,
		CrashCount: 3, CrashReason: `exit status 1; last output: "boom"`})
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: time.Hour}
	in := def2At0
	in.Failures, in.MaxCrashes, in.Deadline = true, 3, time.Hour
	start := time.Now()
	res := await(t, r, in, nil)
	f := res.out.Failure
	if res.err != nil || !res.out.GivenUp || f == nil || f.Reason != model.FailureCrashLoop || f.Kind != model.FailureApp ||
		*f.Index != 0 || f.DefinitionID != "def2" || !strings.Contains(f.Detail, `"boom"`) {
		t.Fatalf("got %+v (failure %+v)", res, f)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("a crash loop took %v to see", time.Since(start))
	}
	in.MaxCrashes = 4
	in.Deadline = 100 * time.Millisecond
	if res := await(t, r, in, nil); res.out.Failure == nil || res.out.Failure.Reason != model.FailureIndexDeadline {
		t.Fatalf("three crashes of four allowed, then the deadline: %+v", res.out)
	}
}

// Past the deadline, RUNNING but never ready is not_ready; without a failure policy a wait
// given up carries no failure (the seeds' walk).
func TestAwaitRunningNotReadyFailure(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.setInstance(model.ActualLRP{ActualLRPKey: model.ActualLRPKey{DefinitionID: "def2", Index: 0}, State: model.StateRunning, NotReady: true})
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: 20 * time.Millisecond}
	in := def2At0
	in.Deadline = 100 * time.Millisecond
	if res := await(t, r, in, nil); !res.out.GivenUp || res.out.Failure != nil {
		t.Fatalf("without a policy: %+v", res.out)
	}
	in.Failures = true
	if res := await(t, r, in, nil); res.out.Failure == nil || res.out.Failure.Reason != model.FailureNotReady {
		t.Fatalf("with a policy: %+v", res.out)
	}
}

// An instance waiting to be placed (UNCLAIMED, never crashed: no capacity) is a platform
// failure: its deadline does not pass while it waits; once placed it counts from then.
func TestAwaitRunningDoesNotFailAnInstanceWaitingForPlacement(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateUnclaimed)
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: 20 * time.Millisecond}
	in := def2At0
	in.Failures, in.Deadline = true, 150*time.Millisecond
	go func() {
		time.Sleep(400 * time.Millisecond) // well past the deadline
		s.set("def2", 0, model.StateClaimed)
	}()
	start := time.Now()
	res := await(t, r, in, nil)
	if res.err != nil || res.out.Failure == nil || res.out.Failure.Reason != model.FailureIndexDeadline {
		t.Fatalf("got %+v", res.out)
	}
	// A lower bound (a slow machine only makes it later): the last look that saw it waiting
	// for placement was at most a safety tick before it was placed.
	if d := time.Since(start); d < 400*time.Millisecond+in.Deadline-r.SafetyTick {
		t.Fatalf("failed after %v: the wait for placement counted", d)
	}
	// Without a policy the seeds' deadline counts from the desire, placed or not.
	s.set("def2", 0, model.StateUnclaimed)
	in.Failures = false
	start = time.Now()
	if res := await(t, r, in, nil); !res.out.GivenUp || time.Since(start) > 350*time.Millisecond {
		t.Fatalf("without a policy: %+v after %v", res.out, time.Since(start))
	}
}

// With MinReady the wait says RUNNING only once the instance has been ready that long without
// a break: a readiness that falls over restarts the count.
func TestAwaitRunningWaitsForMinReady(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateRunning)
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: 10 * time.Millisecond}
	in := def2At0
	in.MinReady = 300 * time.Millisecond
	go func() {
		time.Sleep(150 * time.Millisecond)
		s.setInstance(model.ActualLRP{ActualLRPKey: model.ActualLRPKey{DefinitionID: "def2", Index: 0}, State: model.StateRunning, NotReady: true})
		time.Sleep(50 * time.Millisecond)
		s.set("def2", 0, model.StateRunning) // ready again: the count starts over
	}()
	start := time.Now()
	res := await(t, r, in, nil)
	if res.err != nil || !res.out.Running {
		t.Fatalf("got %+v", res)
	}
	// A lower bound only (a slow machine makes it later): ready again at 200 ms, then 300 ms.
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("RUNNING after %v: min_ready counted across the break", d)
	}
}
