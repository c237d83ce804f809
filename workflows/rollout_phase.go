package workflows

import "github.com/updatable-lrps/bbs/model"

// phase is where a rollout's walk stands: which way it goes and whether it may start a new
// index. Exactly one holds at a time. Signals move it (rollout_signals.go), a fresh start
// takes it from the row, a continued run from the run before (RolloutCarried).
//
//	walking ──pause──▶ paused              cancel: walking, paused ──▶ canceling
//	   ▲ ◀──resume───┘                     supersede, or a rollback recorded: any ──▶ walking
//	canceling ──pause──▶ cancelingPaused
//	   ▲ ◀────resume──────┘
//
// Beginning and finishing are steps of RolloutWorkflow, not phases: the run never waits in
// them for a signal, and what comes meanwhile is taken once they are done.
type phase int

const (
	// phaseWalking goes forward to the target definition, index by index (state active).
	phaseWalking phase = iota
	// phasePaused starts no new forward step; the steps in flight finish (state paused).
	phasePaused
	// phaseCanceling walks the replaced indices back to the from definition, the last one
	// first (seed 001's CancelUpdateDesiredLRP; state canceling).
	phaseCanceling
	// phaseCancelingPaused starts no new step of the walk back: an operator's pause during a
	// cancel. The API still shows canceling.
	phaseCancelingPaused
)

// phaseOf is the phase that walks back (or forward), held by a pause or not.
func phaseOf(back, held bool) phase {
	switch {
	case back && held:
		return phaseCancelingPaused
	case back:
		return phaseCanceling
	case held:
		return phasePaused
	}
	return phaseWalking
}

// back reports whether the walk goes back to the from definition.
func (p phase) back() bool { return p == phaseCanceling || p == phaseCancelingPaused }

// held reports whether a pause keeps the walk from starting a new index.
func (p phase) held() bool { return p == phasePaused || p == phaseCancelingPaused }

// state is the rollout state the API and the RolloutState search attribute show.
func (p phase) state() string {
	switch p {
	case phasePaused:
		return model.RolloutPaused
	case phaseCanceling, phaseCancelingPaused:
		return model.RolloutCanceling
	}
	return model.RolloutActive
}

// stopCause is why a walk ended, which decides what the rollout does next.
type stopCause int

const (
	// stopNone: the walk goes on.
	stopNone stopCause = iota
	// stopWalked: every index of the walk is done; the rollout finishes, as completed or,
	// after a walk back, canceled.
	stopWalked
	// stopContinueAsNew: this run has taken enough steps; the next one carries on.
	stopContinueAsNew
	// stopSuperseded: a new target came (seed 000); the next walk goes to it from index 0.
	stopSuperseded
	// stopRollback: an operator signalled a rollback to a stored definition; it is recorded
	// as a new rollout and then walked as a supersede (or, refused, changes nothing).
	stopRollback
	// stopCanceled: a cancel came; it is recorded on the row (BeginCancel), then walked back.
	stopCanceled
	// stopNotFound: something the walk needs is gone: the LRP, or a definition under it.
	stopNotFound
	// stopFailed: an activity failed for good.
	stopFailed
)

// stopWith records why the walk ends (err goes with stopNotFound and stopFailed). Errors
// outrank signals, a failure outranks a not-found, and the first of each is kept: it is the
// one reported. Of the signals, the latest cancel or supersede decides; a rollback leaves
// either in place (the rollback itself waits in RolloutWalk.PendingRollback, recorded before
// a cancel is), so that a refused one still lets the cancel be recorded.
func (r *rollout) stopWith(c stopCause, err error) {
	switch {
	case r.stop == stopFailed:
	case c == stopFailed, c == stopNotFound && r.stop != stopNotFound:
		r.stop, r.stopErr = c, err
	case r.stop == stopNotFound:
	case c == stopRollback && r.stop != stopNone:
	default:
		r.stop = c
	}
}

// interrupt ends the walk for c: the steps in flight are retired, then walk returns.
func (r *rollout) interrupt(c stopCause, err error) {
	r.stopWith(c, err)
	for _, s := range r.inFlight {
		s.cancel()
	}
}

// abort ends the walk after an activity failed for good.
func (r *rollout) abort(err error) {
	if isNotFound(err) {
		r.interrupt(stopNotFound, err)
	} else {
		r.interrupt(stopFailed, err)
	}
}
