package workflows

import (
	"slices"

	"github.com/updatable-lrps/bbs/activities"
	"go.temporal.io/sdk/workflow"
)

// Signal handlers only change the carried state and interrupt steps; the walk performs the
// consequences. That keeps them usable when signals are drained before a continue-as-new,
// where no activity may start: the next run acts on the state it is handed.

func (r *rollout) addSignals(sel workflow.Selector, changed *bool) {
	onCancel := func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(r.ctx, nil)
		*changed = r.onCancel() || *changed
	}
	sel.AddReceive(r.cancelCh, onCancel)
	sel.AddReceive(r.temporalCancel, onCancel)
	sel.AddReceive(r.pauseCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(r.ctx, nil)
		*changed = r.onPause(true) || *changed
	})
	sel.AddReceive(r.resumeCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(r.ctx, nil)
		*changed = r.onPause(false) || *changed
	})
	sel.AddReceive(r.supersedeCh, func(c workflow.ReceiveChannel, _ bool) {
		var sig SupersedeSignal
		c.Receive(r.ctx, &sig)
		*changed = r.onSupersede(sig) || *changed
	})
	sel.AddReceive(r.rollbackCh, func(c workflow.ReceiveChannel, _ bool) {
		var sig RollbackSignal
		c.Receive(r.ctx, &sig)
		*changed = r.onRollback(sig) || *changed
	})
}

// onRollback notes a rollback an operator signalled; the main loop records it as a new
// rollout (an activity, which a signal handler may not run) and switches the walk to it.
func (r *rollout) onRollback(sig RollbackSignal) bool {
	if sig.DefinitionID == "" {
		// Without a definition (`--name rollback` and no input) an operator asks to undo
		// this rollout: the walk back of a cancel. Runs started before this was understood
		// ignored such a signal, and replay keeps them so.
		if workflow.GetVersion(r.ctx, "rollback-without-definition", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return false
		}
		return r.onCancel()
	}
	r.st.PendingRollback = sig.DefinitionID
	// Where the forward walk must resume should the rollback be refused: the lowest index
	// being replaced now, whose step the interruption abandons.
	r.resumeAt = -1
	for _, s := range r.inFlight {
		if !s.back && (r.resumeAt < 0 || s.index < r.resumeAt) {
			r.resumeAt = s.index
		}
	}
	r.interrupted = true
	r.interruptAll()
	return true
}

// startRollback records the pending rollback and switches the walk to it, as a supersede.
// A definition that cannot be rolled back to (never stored, or pruned) is logged and the
// walk goes on as it was.
func (r *rollout) startRollback() {
	in := activities.StartRollbackInput{ProcessGUID: r.st.ProcessGUID, DefinitionID: r.st.PendingRollback}
	r.st.PendingRollback = ""
	var out activities.StartRollbackOutput
	if err := r.local(r.ctx, in, acts.StartRollback, &out); err != nil {
		workflow.GetLogger(r.ctx).Warn("rollback refused", "definition_id", in.DefinitionID, "error", err)
		if r.resumeAt >= 0 && r.resumeAt < r.st.NextIndex && !r.st.Canceling {
			r.st.NextIndex = r.resumeAt
		}
		return
	}
	r.onSupersede(SupersedeSignal{RolloutID: out.RolloutID, ToDefinitionID: out.ToDefinitionID, Kind: out.Kind,
		FromDefinitionID: out.FromDefinitionID})
}

// drainSignals applies every pending signal without blocking and reports whether one
// interrupted the walk (a cancel or a supersede). Once the rollout is finished only a
// supersede means anything: it is a new rollout.
func (r *rollout) drainSignals(finished bool) bool {
	r.interrupted = false
	for {
		got := false
		if r.cancelCh.ReceiveAsync(nil) || r.temporalCancel.ReceiveAsync(nil) {
			got = true
			if !finished {
				r.onCancel()
			}
		}
		if r.pauseCh.ReceiveAsync(nil) {
			got = true
			if !finished {
				r.onPause(true)
			}
		}
		if r.resumeCh.ReceiveAsync(nil) {
			got = true
			if !finished {
				r.onPause(false)
			}
		}
		var sig SupersedeSignal
		if r.supersedeCh.ReceiveAsync(&sig) {
			got = true
			r.onSupersede(sig)
		}
		var rb RollbackSignal
		if r.rollbackCh.ReceiveAsync(&rb) {
			got = true
			if !finished || rb.DefinitionID != "" { // without a definition it is a cancel
				r.onRollback(rb)
			}
		}
		if !got {
			return r.interrupted
		}
	}
}

// onCancel starts the walk back (seed 001's CancelUpdateDesiredLRP): no new index starts,
// in-flight ones retire their new instance, then BeginCancel.
func (r *rollout) onCancel() bool {
	if r.st.Canceling {
		return false
	}
	r.st.Canceling = true
	r.st.Paused = false // a cancel is a request to act, even on a paused rollout
	r.needBegin = true
	r.interrupted = true
	r.interruptAll()
	return true
}

func (r *rollout) onPause(paused bool) bool {
	if r.st.Paused == paused {
		return false
	}
	r.st.Paused = paused
	return true
}

// onSupersede switches to a new target during the walk (seed 000): the not-yet-RUNNING
// in-flight instance of the old target retires, and the walk restarts at index 0, where
// RetireOthers replaces instances of both the old and the superseded definitions. The from
// definition stays: it is the last one fully in place, what a cancel returns to.
func (r *rollout) onSupersede(sig SupersedeSignal) bool {
	if sig.ToDefinitionID == "" || (sig.RolloutID == r.st.RolloutID && sig.ToDefinitionID == r.st.ToDefinitionID) {
		return false // a repeat, or the signal that started this very run
	}
	old := r.st.ToDefinitionID
	if old != r.st.FromDefinitionID && old != sig.ToDefinitionID && !slices.Contains(r.st.Superseded, old) {
		r.st.Superseded = append(r.st.Superseded, old)
	}
	r.st.Superseded = slices.DeleteFunc(r.st.Superseded, func(d string) bool { return d == sig.ToDefinitionID })
	r.st.RolloutID = sig.RolloutID
	if sig.FromDefinitionID != "" {
		r.st.FromDefinitionID = sig.FromDefinitionID
	}
	r.st.ToDefinitionID = sig.ToDefinitionID
	if sig.Kind != "" {
		r.st.Kind = sig.Kind
	}
	r.st.NextIndex = 0
	r.st.Updated = nil
	r.st.GivenUp = nil
	r.st.Healthy = false
	r.st.Canceling = false
	r.st.Paused = false
	r.needBegin = false
	r.interrupted = true
	r.interruptAll()
	return true
}
