package workflows_test

import (
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

func withAnalysis(in workflows.RolloutInput, background bool) workflows.RolloutInput {
	p := (&model.RolloutAnalysis{}).Policy()
	p.Interval = (10 * time.Minute).Milliseconds()
	p.Background = background
	in.Analysis = &p
	return in
}

// A step with analysis judges a window every interval for its pause, then the whole step,
// in phase analyzing; passing, the walk goes on.
func TestRolloutAnalysisStepPasses(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, time.Minute)
	out := w.run(withAnalysis(withSteps(workflows.CanaryStep{Instances: 1, Weight: weight(10), Pause: 30 * time.Minute, Analysis: true}), false))
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	got := callsMatching(w, "mark", "judge", "traffic")
	want := []string{"traffic def2 10", "mark step-0/0", "judge step-0/1 pass", "judge step-0/2 pass", "judge step-0/3 pass",
		"judge step-0 pass", "traffic clear"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q\nwant  %q", got, want)
	}
	if !slices.Contains(phases(w), "analyzing/0") {
		t.Errorf("phases %q never analyzing", phases(w))
	}
	if at := w.at["desire def2 1"]; at != time.Minute+30*time.Minute {
		t.Errorf("the walk went on at %v, not when the step's analysis ended", at)
	}
}

// A window that fails reverts at once — the weight to 0 before anything else — with the
// analysis failure.
func TestRolloutAnalysisFailureReverts(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, time.Minute)
	w.verdicts = map[string]string{"step-0/2": model.VerdictFail}
	out := w.run(withAnalysis(withSteps(workflows.CanaryStep{Instances: 1, Weight: weight(10), Pause: time.Hour, Analysis: true}), false))
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	got := callsMatching(w, "judge", "traffic", "desire def1")
	want := []string{"traffic def2 10", "judge step-0/1 pass", "judge step-0/2 fail", "traffic def2 0", "desire def1 0"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q\nwant  %q", got, want)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.progress[len(w.progress)-1].Progress
	if last.Failure == nil || last.Failure.Reason != model.FailureAnalysis || last.Failure.Kind != model.FailureApp {
		t.Fatalf("failure %+v", last.Failure)
	}
}

// An inconclusive step pauses for a human (on_inconclusive pause); a resume goes on.
func TestRolloutAnalysisInconclusivePauses(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, time.Minute)
	w.verdicts = map[string]string{"step-0/1": model.VerdictInconclusive}
	w.signal(3*time.Hour, workflows.SignalResume, nil)
	out := w.run(withAnalysis(withSteps(workflows.CanaryStep{Instances: 1, Analysis: true}), false))
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	w.mu.Lock()
	paused := slices.ContainsFunc(w.progress, func(p activities.RecordProgressInput) bool { return p.Progress.State == model.RolloutPaused })
	w.mu.Unlock()
	if !paused {
		t.Error("an inconclusive step did not pause")
	}
	if at := w.at["desire def2 1"]; at != 3*time.Hour {
		t.Errorf("the walk went on at %v, not at the resume", at)
	}
}

// A background analysis judges every interval during the plain walk; a failed window
// reverts.
func TestRolloutBackgroundAnalysisReverts(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, 8*time.Minute)
	w.verdicts = map[string]string{"background/2": model.VerdictFail}
	in := withPolicy(model.OnFailureRevert, 1)
	in.IndexDeadline = time.Hour
	out := w.run(withAnalysis(in, true))
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	if got := callsMatching(w, "judge"); !slices.Equal(got, []string{"judge background/1 pass", "judge background/2 fail"}) {
		t.Fatalf("judged %q", got)
	}
}
