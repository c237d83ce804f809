package workflows

import (
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/workflow"
)

// The gate (ROLLOUTS-NEXT.md section 6, "Windows and freezes"): besides an operator's pause,
// two things hold a rollout's forward walk at its next index boundary — the fleet's freeze
// (phase frozen) and, when its strategy names one, a rollout window that is closed (phase
// waiting_for_window) — and the walk goes on by itself once neither does. The hold is the
// pause's: the run in flight is drained (runLimit 0: the indices in flight finish, none
// starts), and no new index or canary hold begins. A walk back (a cancel, a revert) is never
// held: it restores service.
//
// The workflow never reads a clock or a zone database for it. What holds it is read by a
// local activity, at workflow.Now, whose answer the history records: at each run's begin
// (with the rollout's load, LoadRolloutOutput.Gate, so that a run started after a freeze's
// signals went out holds too) and again (RolloutGate) when the window's next transition
// passes — a durable timer on the instant the read gave — or when the API signals that the
// window or the rollout changed. A freeze or unfreeze comes as SignalFreeze, carrying the
// freeze's generation, so that two signals that cross keep the later.
//
// Runs recorded before the gate take none of this: the first time a run would act on it, it
// asks workflow.GetVersion("rollout-gate") (only then — a rollout no freeze or window ever
// touches records no marker), and a history without the marker replays as it was recorded.

// SignalFreeze carries a FreezeSignal: the fleet was frozen or unfrozen.
const SignalFreeze = "freeze"

// SignalWindowChanged says the window the rollout names was upserted: read it again.
const SignalWindowChanged = "window_changed"

// FreezeSignal is the payload of SignalFreeze: the freeze as it stands after a change.
type FreezeSignal struct {
	Frozen     bool   `json:"frozen"`
	Reason     string `json:"reason,omitempty"`
	Generation int64  `json:"generation"`
}

// gate is what the run knows of its gate.
type gate struct {
	model.RolloutGate
	// asked says the run asked GetVersion; on that it acts on the gate.
	asked, on bool
	// stale says the window must be read again before the walk goes on.
	stale bool
	// timer fires at NextTransition (nil: none set); cancelTimer drops it.
	timer       workflow.Future
	cancelTimer workflow.CancelFunc
}

// gateVersioned says whether the run acts on the gate, asking workflow.GetVersion the first
// time it would.
func (r *rollout) gateVersioned() bool {
	if !r.gate.asked {
		r.gate.asked = true
		r.gate.on = workflow.GetVersion(r.ctx, "rollout-gate", workflow.DefaultVersion, 1) == 1
	}
	return r.gate.on
}

// gateMatters asks for the version once the gate holds the rollout or a window is named
// (whose timer then runs), and says whether the run acts on it.
func (r *rollout) gateMatters() bool {
	if r.gate.Phase() == "" && r.gate.Window == "" {
		return r.gate.on
	}
	return r.gateVersioned()
}

// takeGate keeps the gate a read returned (nil: the read did not ask for one, as in every
// history from before the gate).
func (r *rollout) takeGate(g *model.RolloutGate) {
	if g == nil {
		return
	}
	freeze := r.gate.Freeze
	r.dropGateTimer()
	r.gate.RolloutGate = *g
	if freeze.Generation > g.Freeze.Generation {
		r.gate.Freeze = freeze // a signal newer than the read
	}
	r.gate.stale = false
	r.gateMatters()
}

// held says whether the walk may start no new index: an operator's pause, or the gate.
func (r *rollout) held() bool {
	return r.phase.held() || r.gateClosed()
}

// gateClosed says the gate holds the forward walk.
func (r *rollout) gateClosed() bool {
	return r.gate.on && !r.phase.back() && r.gate.Phase() != ""
}

// gateHeldAtTheEnd says the gate holds a forward walk that has nothing left to start: it
// ends, as it would have had the gate let it look for a next index — a freeze or a window
// holds what is still to do, not the end of what is done.
func (r *rollout) gateHeldAtTheEnd() bool {
	return r.gateClosed() && !r.phase.held() && len(r.inFlight) == 0 && r.stop == stopNone && r.counted &&
		!r.canaryActive() && r.walked.NextIndex >= r.instances
}

// gatePhase is the phase the gate shows (model.PhaseFrozen, PhaseWaitingForWindow), or ""
// when it does not hold the walk or an operator's pause does (which shows as paused).
func (r *rollout) gatePhase() string {
	if !r.gateClosed() || r.phase.held() {
		return ""
	}
	return r.gate.Phase()
}

// onFreeze takes a freeze or an unfreeze; an older generation than the one known changes
// nothing.
func (r *rollout) onFreeze(sig FreezeSignal) bool {
	if sig.Generation <= r.gate.Freeze.Generation {
		return false
	}
	r.gate.Freeze = model.RolloutFreeze{Frozen: sig.Frozen, Reason: sig.Reason, Generation: sig.Generation}
	return r.gateMatters()
}

// onWindowChanged marks the window for a read before the walk goes on.
func (r *rollout) onWindowChanged() bool {
	if r.gate.Window == "" || !r.gateVersioned() {
		return false
	}
	r.gate.stale = true
	return true
}

// onSupersedeGate takes the new rollout's window and break glass (a signal from before the
// gate carries neither, and keeps the run's): a window is read before the walk goes on.
func (r *rollout) onSupersedeGate(sig SupersedeSignal) {
	if sig.Window == r.gate.Window && sig.BreakGlass == r.gate.BreakGlass {
		return
	}
	r.dropGateTimer()
	r.gate.Window, r.gate.BreakGlass = sig.Window, sig.BreakGlass
	r.gate.WindowOpen, r.gate.WindowMissing, r.gate.NextTransition = false, false, 0
	if r.gateMatters() && sig.Window != "" {
		r.gate.stale = true
	}
}

// refreshGate reads the gate again when it is stale (a window's transition passed, or it
// changed).
func (r *rollout) refreshGate() {
	if !r.gate.stale || !r.gate.on {
		return
	}
	in := activities.RolloutGateInput{RolloutID: r.in.RolloutID, At: workflow.Now(r.ctx)}
	var g model.RolloutGate
	if err := r.local(r.ctx, in, acts.RolloutGate, &g); err != nil {
		r.gate.stale = false
		r.abort(err)
		return
	}
	r.takeGate(&g)
}

// addGateTimer wakes the walk at the window's next transition, to read it again.
func (r *rollout) addGateTimer(sel workflow.Selector, changed *bool) {
	if !r.gate.on || r.gate.Window == "" || r.gate.NextTransition == 0 || r.gate.stale {
		return
	}
	if r.gate.timer == nil {
		left := time.Unix(0, r.gate.NextTransition).Sub(workflow.Now(r.ctx))
		tctx, cancel := workflow.WithCancel(r.ctx)
		r.gate.timer, r.gate.cancelTimer = workflow.NewTimer(tctx, max(left, time.Millisecond)), cancel
	}
	sel.AddFuture(r.gate.timer, func(f workflow.Future) {
		r.gate.timer, r.gate.cancelTimer = nil, nil
		if f.Get(r.ctx, nil) == nil {
			r.gate.stale = true
			*changed = true
		}
	})
}

// dropGateTimer cancels the window's timer, if one is set.
func (r *rollout) dropGateTimer() {
	if r.gate.cancelTimer != nil {
		r.gate.cancelTimer()
	}
	r.gate.timer, r.gate.cancelTimer = nil, nil
}

// gateText is the gate in the Web UI's details ("" when it does not hold the walk).
func (r *rollout) gateText() string {
	switch r.gatePhase() {
	case model.PhaseFrozen:
		return fmt.Sprintf("\n\nfrozen (%s): holds at the next index boundary until an unfreeze", r.gate.Freeze.Reason)
	case model.PhaseWaitingForWindow:
		if r.gate.NextTransition == 0 {
			return fmt.Sprintf("\n\nwaiting for window `%s`, which does not open", r.gate.Window)
		}
		return fmt.Sprintf("\n\nwaiting for window `%s`, which opens at %s", r.gate.Window,
			time.Unix(0, r.gate.NextTransition).UTC().Format(time.RFC3339))
	}
	return ""
}
