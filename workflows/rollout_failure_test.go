package workflows_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// withPolicy is input() with a failure policy.
func withPolicy(onFailure string, maxFailed int32) workflows.RolloutInput {
	in := input()
	in.IndexDeadline = 2 * time.Minute
	in.Failure = &workflows.FailurePolicy{OnFailure: onFailure, MaxCrashes: 3, MaxFailedIndices: maxFailed}
	return in
}

// crashLoopAt answers AwaitRunning: def's instance at index bad crash-loops (given up with a
// failure), every other runs.
func (w *world) crashLoopAt(def string, bad int32) {
	w.onAwait(anyAwait, time.Minute)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		if in.DefinitionID == def && in.Index == bad {
			return activities.AwaitRunningOutput{GivenUp: true, Reason: "crash loop", Failure: &model.RolloutFailure{
				Reason: model.FailureCrashLoop, Index: &in.Index, DefinitionID: def, Kind: model.FailureApp,
				Detail: `3 crashes; last: exit status 1; last output: "boom"`}}, nil
		}
		w.mu.Lock()
		w.healthy = in.DefinitionID
		w.mu.Unlock()
		return activities.AwaitRunningOutput{Running: true}, nil
	}
}

func lastProgress(w *world) model.RolloutProgress {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.progress[len(w.progress)-1].Progress
}

// A crash loop at index 0 with on_failure revert: the new instance is retired, no old one was
// retired, and the rollout ends reverted with the failure recorded — every wait was told the
// policy, with a deadline from the first index.
func TestRolloutCrashLoopAtIndexZeroReverts(t *testing.T) {
	w := newWorld(t, 3)
	w.crashLoopAt("def2", 0)
	out := w.run(withPolicy(model.OnFailureRevert, 1))
	assertWalk(t, w, []string{"desire def2 0", "await def2 0", "retire def2 0"})
	if out.State != model.RolloutReverted || !w.has("begin-cancel r1") || !w.has("finish r1 reverted") || !w.has("prune def2") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	if a := w.awaits[0]; !a.Failures || a.MaxCrashes != 3 || a.Deadline != 2*time.Minute {
		t.Fatalf("await input %+v", a)
	}
	if f := lastProgress(w).Failure; f == nil || f.Reason != model.FailureCrashLoop || *f.Index != 0 {
		t.Fatalf("recorded failure %+v", f)
	}
}

// A failure at index 3 of 6: indices 0–2, updated, walk back to def1 (last first), each new
// instance started before the old one is retired.
func TestRolloutFailureAtIndexThreeWalksBack(t *testing.T) {
	w := newWorld(t, 6)
	w.crashLoopAt("def2", 3)
	out := w.run(withPolicy(model.OnFailureRevert, 1))
	assertWalk(t, w, forward("def2", 0, 1, 2), []string{"desire def2 3", "await def2 3", "retire def2 3"}, forward("def1", 2, 1, 0))
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
}

// on_failure pause: the walk holds at the failure (paused, the failure shown) until a resume,
// after which it walks on past the failed index.
func TestRolloutFailurePausesUntilResumed(t *testing.T) {
	w := newWorld(t, 3)
	w.crashLoopAt("def2", 1)
	var paused workflows.RolloutProgress
	w.env.RegisterDelayedCallback(func() { paused = w.query() }, time.Hour)
	w.signal(2*time.Hour, workflows.SignalResume, nil)
	out := w.run(withPolicy(model.OnFailurePause, 1))
	if paused.State != model.RolloutPaused || len(paused.InFlight) != 0 {
		t.Fatalf("progress an hour in: %+v", paused)
	}
	if at := w.at["desire def2 2"]; at < 2*time.Hour {
		t.Fatalf("index 2 started at %v, while paused", at)
	}
	if out.State != model.RolloutCompleted || !slices.Equal(out.GivenUp, []int32{1}) {
		t.Fatalf("output %+v", out)
	}
	if f := lastProgress(w).Failure; f == nil || f.Reason != model.FailureCrashLoop {
		t.Fatalf("failure not recorded: %+v", lastProgress(w))
	}
}

// on_failure continue, and max_failed_indices 2 with revert: one failure walks on; the second
// reverts.
func TestRolloutFailureCountAndContinue(t *testing.T) {
	w := newWorld(t, 3)
	w.crashLoopAt("def2", 1)
	if out := w.run(withPolicy(model.OnFailureContinue, 1)); out.State != model.RolloutCompleted || !slices.Equal(out.GivenUp, []int32{1}) {
		t.Fatalf("continue: output %+v", out)
	}
	w = newWorld(t, 3)
	w.crashLoopAt("def2", 1)
	if out := w.run(withPolicy(model.OnFailureRevert, 2)); out.State != model.RolloutCompleted {
		t.Fatalf("one failure of two allowed: output %+v", out)
	}
}

// A deadline passing is an app failure too, with its reason.
func TestRolloutIndexDeadlineIsAFailure(t *testing.T) {
	w := newWorld(t, 2)
	w.onAwait(anyAwait, 0)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		return activities.AwaitRunningOutput{GivenUp: true, Reason: "not running", Failure: &model.RolloutFailure{
			Reason: model.FailureNotReady, Index: &in.Index, DefinitionID: in.DefinitionID, Kind: model.FailureApp}}, nil
	}
	out := w.run(withPolicy(model.OnFailureRevert, 1))
	if out.State != model.RolloutReverted || lastProgress(w).Failure.Reason != model.FailureNotReady {
		t.Fatalf("output %+v, progress %+v", out, lastProgress(w))
	}
}

// An operator's abort mid-walk reverts, with an operator failure; a second abort changes
// nothing. It works without a failure policy too.
func TestRolloutAbortReverts(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(25*time.Minute, workflows.SignalAbort, workflows.AbortSignal{Reason: "latency doubled"})
	w.signal(26*time.Minute, workflows.SignalAbort, workflows.AbortSignal{Reason: "again"})
	out := w.run(input())
	if out.State != model.RolloutReverted || !w.has("finish r1 reverted") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	f := lastProgress(w).Failure
	if f == nil || f.Reason != model.FailureAborted || f.Kind != model.FailureOperator || f.Detail != "latency doubled" {
		t.Fatalf("failure %+v", f)
	}
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def1", 1, 0))
}

// A revert whose own step fails (the old definition no longer starts) pauses with both
// failures recorded; it never loops. A resume tries the walk back again.
func TestRolloutFailingRevertPauses(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, time.Minute)
	backFails := true
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		switch {
		case in.DefinitionID == "def2" && in.Index == 1:
			return activities.AwaitRunningOutput{GivenUp: true, Failure: &model.RolloutFailure{Reason: model.FailureCrashLoop,
				Index: &in.Index, DefinitionID: "def2", Kind: model.FailureApp}}, nil
		case in.DefinitionID == "def1" && backFails:
			return activities.AwaitRunningOutput{GivenUp: true, Failure: &model.RolloutFailure{Reason: model.FailureIndexDeadline,
				Index: &in.Index, DefinitionID: "def1", Kind: model.FailureApp, Detail: "droplet gone"}}, nil
		}
		w.mu.Lock()
		w.healthy = in.DefinitionID
		w.mu.Unlock()
		return activities.AwaitRunningOutput{Running: true}, nil
	}
	var held workflows.RolloutProgress
	w.env.RegisterDelayedCallback(func() {
		held = w.query()
		backFails = false
		w.env.SignalWorkflow(workflows.SignalResume, nil)
	}, 5*time.Hour)
	out := w.run(withPolicy(model.OnFailureRevert, 1))
	if held.State != model.RolloutCanceling || len(held.InFlight) != 0 {
		t.Fatalf("progress while the revert is held: %+v", held)
	}
	var both bool
	for _, p := range w.progress {
		if p.Progress.Failure != nil && p.Progress.RevertFailure != nil && p.Progress.RevertFailure.Detail == "droplet gone" {
			both = true
		}
	}
	if !both || out.State != model.RolloutReverted {
		t.Fatalf("output %+v; both failures recorded: %v", out, both)
	}
	if n := strings.Count(strings.Join(w.calls, "\n"), "desire def1 0"); n != 2 {
		t.Fatalf("the walk back at index 0 was tried %d times, want 2 (once, then after the resume): %q", n, w.calls)
	}
}

// A new definition during a revert supersedes it (seed 000): the walk goes to the new target
// from index 0, and the failure of the reverted one is not carried to the new rollout.
func TestRolloutSupersedeDuringRevert(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		if in.DefinitionID == "def2" && in.Index == 2 {
			return activities.AwaitRunningOutput{GivenUp: true, Failure: &model.RolloutFailure{Reason: model.FailureCrashLoop,
				Index: &in.Index, DefinitionID: "def2", Kind: model.FailureApp}}, nil
		}
		w.mu.Lock()
		w.healthy = in.DefinitionID
		w.mu.Unlock()
		return activities.AwaitRunningOutput{Running: true}, nil
	}
	// def2 fails at index 2 (30 min in); the revert walks index 1 back (30–40 min); def3
	// comes during it.
	w.signal(35*time.Minute, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3",
		Failure: &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}})
	out := w.run(withPolicy(model.OnFailureRevert, 1))
	if out.State != model.RolloutCompleted || out.RolloutID != "r2" || !slices.Equal(out.Updated, []int32{0, 1, 2, 3}) {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	if !w.has("begin-cancel r1") || !w.has("desire def3 3") {
		t.Fatalf("calls %q", w.calls)
	}
	if f := lastProgress(w).Failure; f != nil {
		t.Fatalf("the new rollout carries the old one's failure: %+v", f)
	}
}

// min_ready goes with every forward wait, never with a walk back's (a revert restores
// service as fast as it can).
func TestRolloutMinReadyIsForwardOnly(t *testing.T) {
	w := newWorld(t, 4)
	w.crashLoopAt("def2", 2)
	in := withPolicy(model.OnFailureRevert, 1)
	in.MinReady = 30 * time.Second
	if out := w.run(in); out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	for _, a := range w.awaits {
		if forward := a.DefinitionID == "def2"; (a.MinReady == in.MinReady) != forward {
			t.Errorf("await %s %d has min_ready %v", a.DefinitionID, a.Index, a.MinReady)
		}
	}
}

// A rollout not complete at its progress deadline fails (progress_deadline) and reverts: the
// index in flight is interrupted and the updated ones walk back.
func TestRolloutProgressDeadlineReverts(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	in := withPolicy(model.OnFailureRevert, 1)
	in.IndexDeadline, in.ProgressDeadline = time.Hour, 25*time.Minute
	out := w.run(in)
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	f := lastProgress(w).Failure
	if f == nil || f.Reason != model.FailureProgressDeadline {
		t.Fatalf("failure %+v", f)
	}
	if at := w.at["begin-cancel r1"]; at != 25*time.Minute {
		t.Fatalf("the revert began at %v, want at the deadline (25m)", at)
	}
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def1", 1, 0))
	// Without a deadline the same walk completes.
	w = newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	in.ProgressDeadline = 0
	if out := w.run(in); out.State != model.RolloutCompleted {
		t.Fatalf("without a deadline: %+v", out)
	}
}
