package workflows_test

import (
	"slices"
	"strings"
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

func weight(w int32) *int32 { return &w }

// callsMatching are the recorded calls that start with one of the prefixes, in order.
func callsMatching(w *world, prefixes ...string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Weighted steps: the walk reaches the step's count — raised to what its weight needs (3 of
// 10 for 50 %) —, sets the weight and holds only once the routers acknowledged it; after
// the last step the LRP routes by instances again before the rest of the walk.
func TestRolloutCanaryWeightedSteps(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, 10*time.Minute)
	out := w.run(withSteps(workflows.CanaryStep{Instances: 1, Weight: weight(10), Pause: time.Hour},
		workflows.CanaryStep{Instances: 1, Weight: weight(50), Pause: time.Hour}))
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	got := callsMatching(w, "traffic", "acked", "desire def2 1", "desire def2 3")
	want := []string{"traffic def2 10", "acked 1", "desire def2 1", "traffic def2 50", "acked 2", "traffic clear", "desire def2 3"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q\nwant  %q", got, want)
	}
	// The second step holds at 3 indices: desired at 70 and 80 min, RUNNING 10 min later.
	if at := w.at["desire def2 3"]; at != 70*time.Minute+20*time.Minute+time.Hour {
		t.Errorf("the walk went on past the 50 %% step at %v", at)
	}
}

// An abort at a weighted step takes the new definition's weight to 0 — acknowledged —
// before the walk back touches an instance.
func TestRolloutCanaryAbortZeroesTheWeightFirst(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(time.Hour, workflows.SignalAbort, workflows.AbortSignal{Reason: "errors"})
	out := w.run(withSteps(workflows.CanaryStep{Instances: 2, Weight: weight(20), Manual: true}))
	if out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	got := callsMatching(w, "traffic", "acked", "desire def1", "others", "retire")
	back := slices.Index(got, "traffic def2 0")
	first := slices.IndexFunc(got, func(c string) bool { return strings.HasPrefix(c, "desire def1") || strings.HasPrefix(c, "retire") })
	if back < 0 || first < 0 || back > first || got[back+1] != "acked 2" {
		t.Fatalf("calls %q: the weight did not go to 0 before the walk back", got)
	}
}

// A weight the capacity guard refuses pauses the rollout with a platform failure.
func TestRolloutCanaryRefusedWeightPauses(t *testing.T) {
	w := newWorld(t, 10)
	w.onAwait(anyAwait, 10*time.Minute)
	w.refuseWeight = true
	w.signal(2*time.Hour, workflows.SignalCancel, nil)
	out := w.run(withSteps(workflows.CanaryStep{Instances: 1, Weight: weight(10), Pause: time.Hour}))
	if out.State != model.RolloutCanceled {
		t.Fatalf("output %+v", out)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	paused := false
	for _, p := range w.progress {
		if p.Progress.State == model.RolloutPaused && p.Progress.Failure != nil && p.Progress.Failure.Reason == model.FailureCapacity {
			paused = true
		}
	}
	if !paused {
		t.Fatal("the refused weight did not pause the rollout with a capacity failure")
	}
}
