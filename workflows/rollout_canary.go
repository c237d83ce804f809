package workflows

import (
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/workflow"
)

// Canary steps by instances (ROLLOUTS-NEXT.md section 1): the forward walk goes up to each
// step's cumulative count of indices, and once they all run the new definition (nothing in
// flight) it holds there — for the step's pause, on a durable timer, or until a promote —
// before it walks on to the next step, and after the last one to every remaining index. A
// step changes nothing else: the same steps, failures and revert as the plain walk.

// canaryActive says whether the forward walk still has a canary step ahead of it or holds
// at one.
func (r *rollout) canaryActive() bool {
	return !r.phase.back() && r.walked.Step < len(r.in.Canary)
}

// atStep says whether the forward walk has reached its current step's count: no index
// beyond it starts until the step is left.
func (r *rollout) atStep() bool {
	return r.canaryActive() && r.walked.NextIndex >= r.stepTarget()
}

// stepLimit bounds the indices an index run from index from may decide: up to the current
// step's count.
func (r *rollout) stepLimit(from int32) int {
	if !r.canaryActive() {
		return int(^uint(0) >> 1)
	}
	return max(int(r.stepTarget()-from), 1)
}

// holdAtStep begins the hold of a step the walk has reached with nothing in flight. on says
// the walk may go on at once (a step with neither a pause nor a manual promote); began, that
// a hold began now (to be recorded).
func (r *rollout) holdAtStep() (on, began bool) {
	if r.walked.StepHold != "" {
		return false, false
	}
	st := r.in.Canary[r.walked.Step]
	if st.Weight != nil && !r.weightAcked() {
		return false, r.setStepWeight(*st.Weight)
	}
	if st.Analysis && !r.stepAnalyzed() {
		return false, r.beginStepAnalysis(st)
	}
	switch {
	case st.Manual:
		r.walked.StepHold = "manual"
	case st.Pause > 0 && !st.Analysis: // a step's analysis took its pause
		r.walked.StepHold = "pause"
		r.walked.StepUntil = workflow.Now(r.ctx).Add(st.Pause).UnixNano()
	default:
		r.leaveStep(false)
		return true, false
	}
	workflow.GetLogger(r.ctx).Info("canary step reached", "step", r.walked.Step, "instances", st.Instances, "hold", r.walked.StepHold)
	return false, true
}

// leaveStep ends the hold: on to the next step, or past every one (full).
func (r *rollout) leaveStep(full bool) {
	r.walked.Step++
	if full {
		r.walked.Step = len(r.in.Canary)
	}
	r.walked.StepHold, r.walked.StepUntil, r.stepTimer, r.trafficWait = "", 0, nil, nil
	r.analysisTimer, r.analysisDue = nil, false
}

// addStepTimer makes sel end a timed step's pause when it is over.
func (r *rollout) addStepTimer(sel workflow.Selector, changed *bool) {
	if r.walked.StepHold != "pause" || !r.canaryActive() {
		return
	}
	if r.stepTimer == nil {
		left := time.Unix(0, r.walked.StepUntil).Sub(workflow.Now(r.ctx))
		r.stepTimer = workflow.NewTimer(r.ctx, max(left, time.Millisecond))
	}
	sel.AddFuture(r.stepTimer, func(workflow.Future) {
		if r.walked.StepHold == "pause" {
			r.leaveStep(false)
			*changed = true
		}
	})
}

// onPromote leaves the step the walk holds at, or walks to (a promote during the step skips
// its pause); full skips every remaining step. Outside the canary steps it changes nothing
// (the API refuses it there).
func (r *rollout) onPromote(sig PromoteSignal) bool {
	if !r.canaryActive() {
		return false
	}
	r.leaveStep(sig.Full)
	return true
}

// canaryPhase is the contract's phase of a rollout walking forward: canary during the steps,
// awaiting_promotion at a manual one, walking after the last (or without any); "" for a
// rollout without canary steps, whose phase its state says.
func (r *rollout) canaryPhase() string {
	switch {
	case len(r.in.Canary) == 0 || r.phase != phaseWalking:
		return ""
	case r.walked.StepHold == "manual":
		return model.PhaseAwaitingPromotion
	case r.walked.StepHold == "analysis":
		return model.PhaseAnalyzing
	case r.canaryActive():
		return model.PhaseCanary
	}
	return model.PhaseWalking
}
