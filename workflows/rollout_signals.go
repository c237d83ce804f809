package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// Signal handlers only move the phase, change the walk's target and end the walk (stopWith);
// the main loop performs the consequences. That keeps them usable when signals are drained
// before a continue-as-new, where no activity may start: the next run acts on the state it
// is handed.

// signal is one received signal; a Temporal cancellation arrives as SignalCancel.
type signal struct {
	name      string
	supersede SupersedeSignal
	rollback  RollbackSignal
	pace      SetPaceSignal
	abort     AbortSignal
	promote   PromoteSignal
	freeze    FreezeSignal
}

// newRollout reports whether the signal starts a new rollout: all that counts once the
// rollout is finished.
func (s signal) newRollout() bool {
	return s.name == SignalSupersede || (s.name == SignalRollback && s.rollback.DefinitionID != "")
}

// apply acts on a signal and reports whether it changed anything.
func (r *rollout) apply(s signal) bool {
	switch s.name {
	case SignalCancel:
		return r.onCancel()
	case SignalPause:
		return r.onPause(true)
	case SignalResume:
		return r.onPause(false)
	case SignalSupersede:
		return r.onSupersede(s.supersede)
	case SignalRollback:
		return r.onRollback(s.rollback)
	case SignalSetPace:
		return r.onSetPace(s.pace)
	case SignalAbort:
		return r.onAbort(s.abort)
	case SignalPromote:
		return r.onPromote(s.promote)
	case SignalFreeze:
		return r.onFreeze(s.freeze)
	case SignalWindowChanged:
		return r.onWindowChanged()
	}
	return false
}

// payloadChannel is a signal that carries a payload: its channel, its name, and where in a
// signal the payload goes.
type payloadChannel struct {
	ch   workflow.ReceiveChannel
	name string
	into func(*signal) any
}

// payloads are the signals with a payload, in the fixed order they are taken in.
func (r *rollout) payloads() []payloadChannel {
	return []payloadChannel{
		{r.supersedeCh, SignalSupersede, func(s *signal) any { return &s.supersede }},
		{r.rollbackCh, SignalRollback, func(s *signal) any { return &s.rollback }},
		{r.setPaceCh, SignalSetPace, func(s *signal) any { return &s.pace }},
		{r.abortCh, SignalAbort, func(s *signal) any { return &s.abort }},
		{r.promoteCh, SignalPromote, func(s *signal) any { return &s.promote }},
		{r.freezeCh, SignalFreeze, func(s *signal) any { return &s.freeze }},
	}
}

// addSignals makes sel apply whichever signal comes, noting in changed whether it did
// anything.
func (r *rollout) addSignals(sel workflow.Selector, changed *bool) {
	add := func(ch workflow.ReceiveChannel, receive func(workflow.ReceiveChannel) signal) {
		sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
			*changed = r.apply(receive(c)) || *changed
		})
	}
	bare := func(name string) func(workflow.ReceiveChannel) signal {
		return func(c workflow.ReceiveChannel) signal {
			c.Receive(r.ctx, nil)
			return signal{name: name}
		}
	}
	add(r.cancelCh, bare(SignalCancel))
	add(r.temporalCancel, bare(SignalCancel))
	add(r.pauseCh, bare(SignalPause))
	add(r.resumeCh, bare(SignalResume))
	add(r.windowCh, bare(SignalWindowChanged))
	for _, p := range r.payloads() {
		add(p.ch, func(c workflow.ReceiveChannel) signal {
			s := signal{name: p.name}
			c.Receive(r.ctx, p.into(&s))
			return s
		})
	}
}

// pending receives, without blocking, at most one signal of each kind, in a fixed order.
func (r *rollout) pending() []signal {
	var out []signal
	if r.cancelCh.ReceiveAsync(nil) || r.temporalCancel.ReceiveAsync(nil) {
		out = append(out, signal{name: SignalCancel})
	}
	if r.pauseCh.ReceiveAsync(nil) {
		out = append(out, signal{name: SignalPause})
	}
	if r.resumeCh.ReceiveAsync(nil) {
		out = append(out, signal{name: SignalResume})
	}
	if r.windowCh.ReceiveAsync(nil) {
		out = append(out, signal{name: SignalWindowChanged})
	}
	for _, p := range r.payloads() {
		if s := (signal{name: p.name}); p.ch.ReceiveAsync(p.into(&s)) {
			out = append(out, s)
		}
	}
	return out
}

// takeSignals applies every pending signal and reports whether one ended the walk (a
// cancel, a supersede, a rollback).
func (r *rollout) takeSignals() bool {
	r.stop = stopNone
	for sigs := r.pending(); len(sigs) > 0; sigs = r.pending() {
		for _, s := range sigs {
			r.apply(s)
		}
	}
	return r.stop != stopNone
}

// takeNewRollout drains the signals that came while the rollout finished: only a new
// rollout means anything now (a cancel, pause or resume is dropped). It reports whether one
// came.
func (r *rollout) takeNewRollout() bool {
	r.stop = stopNone
	for sigs := r.pending(); len(sigs) > 0; sigs = r.pending() {
		for _, s := range sigs {
			if s.newRollout() {
				r.apply(s)
			}
		}
	}
	return r.stop != stopNone || r.walked.PendingRollback != ""
}

// onCancel starts the walk back (seed 001's CancelUpdateDesiredLRP): no new index starts,
// in-flight ones retire their new instance, the main loop records the cancel (BeginCancel),
// then the replaced indices walk back.
func (r *rollout) onCancel() bool {
	if r.phase.back() {
		return false
	}
	r.phase = phaseCanceling // a cancel is a request to act, even on a paused rollout
	r.interrupt(stopCanceled, nil)
	return true
}

// onSetPace changes how many indices are replaced at once, from the next index on: steps in
// flight finish as they are, and an index run in flight is stopped (stopIndexRuns), its
// index finishing as a step, since only a pace of one walks in runs. A pace below one is
// ignored (the API refuses it).
func (r *rollout) onSetPace(sig SetPaceSignal) bool {
	if sig.MaxInFlight < 1 || sig.MaxInFlight == r.in.MaxInFlight {
		return false
	}
	r.in.MaxInFlight = sig.MaxInFlight
	return true
}

// onPause holds (or, paused false, releases) the walk, whichever way it goes.
func (r *rollout) onPause(paused bool) bool {
	next := phaseOf(r.phase.back(), paused)
	if next == r.phase {
		return false
	}
	r.phase = next
	return true
}

// onSupersede switches to a new target during the walk (seed 000): the not-yet-RUNNING
// in-flight instance of the old target retires, and the walk restarts at index 0, where
// RetireOthers replaces instances of both the old and the superseded definitions. The from
// definition stays: it is the last one fully in place, what a cancel returns to.
func (r *rollout) onSupersede(sig SupersedeSignal) bool {
	if sig.ToDefinitionID == "" || (sig.RolloutID == r.in.RolloutID && sig.ToDefinitionID == r.in.ToDefinitionID) {
		return false // a repeat, or the signal that started this very run
	}
	old := r.in.ToDefinitionID
	if old != r.in.FromDefinitionID && old != sig.ToDefinitionID && !slices.Contains(r.walked.Superseded, old) {
		r.walked.Superseded = append(r.walked.Superseded, old)
	}
	r.walked.Superseded = slices.DeleteFunc(r.walked.Superseded, func(d string) bool { return d == sig.ToDefinitionID })
	r.in.RolloutID = sig.RolloutID
	if sig.FromDefinitionID != "" {
		r.in.FromDefinitionID = sig.FromDefinitionID
	}
	r.in.ToDefinitionID = sig.ToDefinitionID
	if sig.Kind != "" {
		r.in.Kind = sig.Kind
	}
	if sig.MaxInFlight > 0 {
		r.in.MaxInFlight = sig.MaxInFlight
	}
	if sig.IndexDeadline > 0 {
		r.in.IndexDeadline = sig.IndexDeadline
	}
	if sig.Failure != nil {
		r.in.Failure, r.in.MinReady, r.in.ProgressDeadline, r.in.Canary = sig.Failure, sig.MinReady, sig.ProgressDeadline, sig.Canary
		r.in.Analysis = sig.Analysis
		r.onSupersedeGate(sig)
	}
	r.walked.Step, r.walked.StepHold, r.walked.StepUntil, r.stepTimer = 0, "", 0, nil
	// The supersede's start gave the LRP back to routing by instances.
	r.walked.Traffic, r.trafficWait = nil, nil
	r.walked.Analysis, r.walked.Background, r.analysisTimer, r.backgroundTimer = nil, nil, nil, nil
	r.analysisDue, r.backgroundDue = false, false
	// Failures and the progress deadline belong to the rollout the supersede ended.
	r.walked.Failed, r.walked.Failure, r.walked.RevertFailure, r.walked.Reverting = nil, nil, nil, false
	r.walked.ProgressDeadlineAt, r.progressTimer = 0, nil
	r.walked.NextIndex = 0
	r.walked.Updated = nil
	r.walked.GivenUp = nil
	r.walked.Healthy = false
	r.phase = phaseWalking
	r.interrupt(stopSuperseded, nil)
	return true
}

// onRollback notes a rollback an operator signalled; the main loop records it as a new
// rollout (an activity, which a signal handler may not run) and switches the walk to it.
func (r *rollout) onRollback(sig RollbackSignal) bool {
	if sig.DefinitionID == "" {
		// Without a definition (`--name rollback` and no input) an operator asks to undo
		// this rollout: the walk back of a cancel. Runs started before this was understood
		// ignored such a signal, and replay keeps them so.
		if !r.versioned("rollback-without-definition") {
			return false
		}
		return r.onCancel()
	}
	r.walked.PendingRollback = sig.DefinitionID
	// Where the forward walk must resume should the rollback be refused: the lowest index
	// being replaced now, whose step the interruption abandons.
	r.resumeAt = -1
	for _, s := range r.inFlight {
		if !s.back && (r.resumeAt < 0 || s.index < r.resumeAt) {
			r.resumeAt = s.index
		}
	}
	r.interrupt(stopRollback, nil)
	return true
}
