package workflows_test

import (
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

func withSteps(steps ...workflows.CanaryStep) workflows.RolloutInput {
	in := withPolicy(model.OnFailureRevert, 1)
	in.IndexDeadline = time.Hour
	in.Canary = steps
	return in
}

// phases are the phases (and steps) the rollout recorded, in order, without repeats.
func phases(w *world) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.progress {
		s := p.Progress.Phase
		if p.Progress.Step != nil {
			s += "/" + string(rune('0'+*p.Progress.Step))
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// Timed steps: the walk holds once a step's count of indices runs the new definition, for
// the step's pause, then walks on; after the last step, every remaining index.
func TestRolloutCanaryTimedSteps(t *testing.T) {
	w := newWorld(t, 5)
	w.onAwait(anyAwait, 10*time.Minute)
	out := w.run(withSteps(workflows.CanaryStep{Instances: 1, Pause: time.Hour}, workflows.CanaryStep{Instances: 3, Pause: 30 * time.Minute}))
	if out.State != model.RolloutCompleted || !slices.Equal(out.Updated, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("output %+v", out)
	}
	want := map[string]time.Duration{"desire def2 0": 0, "desire def2 1": 70 * time.Minute, "desire def2 2": 80 * time.Minute,
		"desire def2 3": 120 * time.Minute, "desire def2 4": 130 * time.Minute}
	for call, at := range want {
		if w.at[call] != at {
			t.Errorf("%s at %v, want %v", call, w.at[call], at)
		}
	}
	if got := phases(w); !slices.Equal(got, []string{"canary/0", "canary/1", "walking/2"}) {
		t.Errorf("recorded phases %q", got)
	}
}

// A manual step holds (awaiting_promotion) until a promote; a promote full skips every
// remaining step.
func TestRolloutCanaryManualPromote(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(3*time.Hour, workflows.SignalPromote, workflows.PromoteSignal{})
	w.signal(5*time.Hour, workflows.SignalPromote, workflows.PromoteSignal{Full: true})
	out := w.run(withSteps(workflows.CanaryStep{Instances: 1, Manual: true}, workflows.CanaryStep{Instances: 2, Manual: true},
		workflows.CanaryStep{Instances: 3, Manual: true}))
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	want := map[string]time.Duration{"desire def2 1": 3 * time.Hour, "desire def2 2": 5 * time.Hour, "desire def2 3": 5*time.Hour + 10*time.Minute}
	for call, at := range want {
		if w.at[call] != at {
			t.Errorf("%s at %v, want %v", call, w.at[call], at)
		}
	}
	if got := phases(w); !slices.Equal(got, []string{"canary/0", "awaiting_promotion/0", "canary/1", "awaiting_promotion/1", "walking/3"}) {
		t.Errorf("recorded phases %q", got)
	}
}

// An abort during a step's hold reverts the indices of the step.
func TestRolloutCanaryAbortReverts(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(time.Hour, workflows.SignalAbort, workflows.AbortSignal{Reason: "canary looks bad"})
	out := w.run(withSteps(workflows.CanaryStep{Instances: 2, Manual: true}))
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	assertWalk(t, w, forward("def2", 0, 1), forward("def1", 1, 0))
}
