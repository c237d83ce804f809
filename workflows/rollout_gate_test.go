package workflows_test

import (
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// monday is 30 November 2026, 07:00 UTC.
var monday = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)

// windowGate is the gate of a rollout naming w, with freeze, at an instant: as the store's
// activities compute it (activities.Rollouts.RolloutGate).
func windowGate(w *model.RolloutWindow, freeze *model.RolloutFreeze) func(time.Time) *model.RolloutGate {
	return func(at time.Time) *model.RolloutGate {
		g := &model.RolloutGate{Window: w.Name, Freeze: *freeze}
		g.WindowOpen, g.NextTransition = w.GateAt(at)
		return g
	}
}

// recordedPhases are the phases the rollout recorded, each change once.
func recordedPhases(w *world) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.progress {
		if n := len(out); n == 0 || out[n-1] != p.Progress.Phase {
			out = append(out, p.Progress.Phase)
		}
	}
	return out
}

// A window that is closed at the start, opens, closes mid-walk and opens again: every index
// starts inside it, the one in flight at the close finishes, and the walk waits as
// waiting_for_window in between, on durable timers (the test clock skips the nights).
func TestRolloutWalksOnlyInsideItsWindow(t *testing.T) {
	w := newWorld(t, 5)
	w.startAt(monday)
	window := &model.RolloutWindow{Name: "morning", Schedule: []model.WindowSpan{
		{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "08:00", End: "08:12", TimeZone: "UTC"}}}
	if err := window.Validate(); err != nil {
		t.Fatal(err)
	}
	w.gate = windowGate(window, &model.RolloutFreeze{})
	w.onAwait(anyAwait, 5*time.Minute)
	w.env.RegisterDelayedCallback(func() {
		if p := w.query(); p.Phase != model.PhaseWaitingForWindow || len(p.InFlight) != 0 || len(p.Updated) != 0 {
			t.Errorf("progress before the window opened = %+v", p)
		}
	}, 30*time.Minute)
	out := w.run(input())
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	assertWalk(t, w, forward("def2", 0, 1, 2, 3, 4))
	for i := range 5 {
		at := monday.Add(w.at[fmtDesire(i)])
		if !window.OpenAt(at) {
			t.Errorf("index %d started at %s, outside the window", i, at)
		}
	}
	// 08:00, 08:05, 08:10 (in flight at 08:12, it finishes), then the next morning.
	if day := monday.Add(w.at[fmtDesire(3)]); day.Day() != 1 || day.Hour() != 8 || day.Minute() != 0 {
		t.Errorf("index 3 started at %s, want Tuesday's opening", day)
	}
	if got := recordedPhases(w); !slices.Contains(got, model.PhaseWaitingForWindow) || got[len(got)-1] != "" {
		t.Errorf("recorded phases %q", got)
	}
	if !w.has("gate") {
		t.Error("the window was never read again at a transition")
	}
}

// startAt starts the workflow clock at t.
func (w *world) startAt(t time.Time) {
	w.env.SetStartTime(t)
	w.start = t
}

func fmtDesire(i int) string { return "desire def2 " + string(rune('0'+i)) }

// A freeze drains the walk at its next index boundary (phase frozen), a stale signal changes
// nothing, and an unfreeze lets it walk on by itself.
func TestRolloutFreezeAndUnfreeze(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(15*time.Minute, workflows.SignalFreeze, workflows.FreezeSignal{Frozen: true, Reason: "incident 42", Generation: 2})
	w.signal(20*time.Minute, workflows.SignalFreeze, workflows.FreezeSignal{Frozen: false, Generation: 1})
	w.env.RegisterDelayedCallback(func() {
		if p := w.query(); p.Phase != model.PhaseFrozen || !slices.Equal(p.Updated, []int32{0, 1}) || len(p.InFlight) != 0 {
			t.Errorf("progress while frozen = %+v", p)
		}
		w.env.SignalWorkflow(workflows.SignalFreeze, workflows.FreezeSignal{Frozen: false, Generation: 3})
	}, 5*time.Hour)
	out := w.run(input())
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	assertWalk(t, w, forward("def2", 0, 1, 2, 3))
	if at := w.at["desire def2 2"]; at < 5*time.Hour {
		t.Fatalf("index 2 started at %v, while frozen", at)
	}
	if got := recordedPhases(w); !slices.Contains(got, model.PhaseFrozen) {
		t.Errorf("recorded phases %q", got)
	}
}

// A run that begins while the fleet is frozen (its workflow started after the freeze's
// signals went out) holds before its first index; a rollout that broke the glass does not.
func TestRolloutFrozenAtItsStart(t *testing.T) {
	for _, breakGlass := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "break glass"}[breakGlass], func(t *testing.T) {
			w := newWorld(t, 2)
			w.onAwait(anyAwait, time.Minute)
			w.gate = func(time.Time) *model.RolloutGate {
				return &model.RolloutGate{Freeze: model.RolloutFreeze{Frozen: true, Reason: "holidays", Generation: 7}, BreakGlass: breakGlass}
			}
			w.signal(3*time.Hour, workflows.SignalFreeze, workflows.FreezeSignal{Frozen: false, Generation: 8})
			out := w.run(input())
			if out.State != model.RolloutCompleted {
				t.Fatalf("output %+v", out)
			}
			at := w.at["desire def2 0"]
			if !breakGlass && at < 3*time.Hour {
				t.Fatalf("index 0 started at %v, while frozen", at)
			}
			if breakGlass && at != 0 {
				t.Fatalf("index 0 of a rollout that broke the glass started at %v", at)
			}
		})
	}
}

// A freeze never holds a walk back: a cancel while frozen restores the from definition.
func TestRolloutFreezeDoesNotHoldACancel(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(15*time.Minute, workflows.SignalFreeze, workflows.FreezeSignal{Frozen: true, Reason: "incident", Generation: 1})
	w.signal(time.Hour, workflows.SignalCancel, nil)
	out := w.run(input())
	if out.State != model.RolloutCanceled {
		t.Fatalf("output %+v", out)
	}
	if !w.has("desire def1 1") || !w.has("desire def1 0") {
		t.Fatalf("the walk back did not run: %q", w.walk())
	}
}

// A window upserted while the rollout waits is read again at once (SignalWindowChanged).
func TestRolloutReadsItsWindowAgainWhenUpserted(t *testing.T) {
	w := newWorld(t, 2)
	w.startAt(monday)
	w.onAwait(anyAwait, time.Minute)
	closed := &model.RolloutWindow{Name: "w", Schedule: []model.WindowSpan{{Days: []string{"sat"}, Start: "10:00", End: "11:00", TimeZone: "UTC"}}}
	open := &model.RolloutWindow{Name: "w", Schedule: []model.WindowSpan{{Days: []string{"mon"}, Start: "06:00", End: "18:00", TimeZone: "UTC"}}}
	current := closed
	w.gate = func(at time.Time) *model.RolloutGate { return windowGate(current, &model.RolloutFreeze{})(at) }
	w.env.RegisterDelayedCallback(func() {
		current = open
		w.env.SignalWorkflow(workflows.SignalWindowChanged, nil)
	}, time.Hour)
	out := w.run(input())
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	if at := w.at["desire def2 0"]; at != time.Hour {
		t.Fatalf("index 0 started at %v, want at the upsert (1h)", at)
	}
}
