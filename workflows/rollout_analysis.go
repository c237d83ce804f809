package workflows

import (
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/workflow"
)

// Canary analysis (ROLLOUTS-NEXT.md sections 1 and 4). A step with analysis, once its
// instances run and its weight is acknowledged, judges the canary against the baseline every
// interval for the step's pause (one interval at least; phase analyzing): a window that
// fails fails the rollout at once, and at the end the whole step is judged — pass goes on (to
// a manual step's promotion, or the next step), fail fails, inconclusive does what
// on_inconclusive says. A background analysis judges every interval while the walk goes
// forward. A failed analysis is an app failure: the failure policy decides (revert by
// default). Windows are marks of the routers' counts in the store, named here, so that a
// retried activity measures the same window; every verdict is in the history and on the
// rollout.

// stepAnalyzed says the current step's analysis is done.
func (r *rollout) stepAnalyzed() bool {
	a := r.walked.Analysis
	return a != nil && a.Step == r.walked.Step && a.Done
}

func markName(step, window int) string {
	if step < 0 {
		return fmt.Sprintf("background/%d", window)
	}
	return fmt.Sprintf("step-%d/%d", step, window)
}

func (r *rollout) interval() time.Duration {
	return time.Duration(r.in.Analysis.Interval) * time.Millisecond
}

// mark takes the analysis mark of step (-1: background) and window.
func (r *rollout) mark(step, window int) error {
	in := activities.MarkAnalysisInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, Name: markName(step, window)}
	return r.local(r.ctx, in, acts.MarkAnalysis, nil)
}

// beginStepAnalysis starts the current step's analysis: its first mark, the end of its
// first window and of the whole (the step's pause, one interval at least). It says whether
// the rollout's report changed.
func (r *rollout) beginStepAnalysis(st CanaryStep) bool {
	if r.in.Analysis == nil {
		r.walked.Analysis = &WalkAnalysis{Step: r.walked.Step, Done: true} // nothing to judge by
		return false
	}
	if a := r.walked.Analysis; a == nil || a.Step != r.walked.Step {
		if err := r.mark(r.walked.Step, 0); err != nil {
			r.abort(err)
			return false
		}
		now := workflow.Now(r.ctx)
		r.walked.Analysis = &WalkAnalysis{Step: r.walked.Step, Next: now.Add(r.interval()).UnixNano(),
			Until: now.Add(max(st.Pause, r.interval())).UnixNano()}
	}
	r.walked.StepHold = "analysis"
	workflow.GetLogger(r.ctx).Info("canary analysis began", "step", r.walked.Step)
	return true
}

// beginBackground takes the background analysis's first mark once the walk goes forward.
func (r *rollout) beginBackground() {
	if !r.backgroundOn() || r.walked.Background != nil {
		return
	}
	if err := r.mark(-1, 0); err != nil {
		r.abort(err)
		return
	}
	r.walked.Background = &WalkAnalysis{Step: -1, Next: workflow.Now(r.ctx).Add(r.interval()).UnixNano()}
}

// backgroundOn says a background analysis judges now: asked for, walking forward.
func (r *rollout) backgroundOn() bool {
	return r.in.Analysis != nil && r.in.Analysis.Background && r.phase == phaseWalking && r.stop == stopNone
}

// addAnalysisTimers makes sel end the current windows when they are due.
func (r *rollout) addAnalysisTimers(sel workflow.Selector, changed *bool) {
	if a := r.walked.Analysis; a != nil && r.walked.StepHold == "analysis" && r.canaryActive() {
		if r.analysisTimer == nil {
			r.analysisTimer = r.timerUntil(min(a.Next, a.Until))
		}
		sel.AddFuture(r.analysisTimer, func(workflow.Future) {
			r.analysisTimer, r.analysisDue, *changed = nil, true, true
		})
	}
	if b := r.walked.Background; b != nil && r.backgroundOn() {
		if r.backgroundTimer == nil {
			r.backgroundTimer = r.timerUntil(b.Next)
		}
		sel.AddFuture(r.backgroundTimer, func(workflow.Future) {
			r.backgroundTimer, r.backgroundDue, *changed = nil, true, true
		})
	}
}

func (r *rollout) timerUntil(at int64) workflow.Future {
	return workflow.NewTimer(r.ctx, max(time.Unix(0, at).Sub(workflow.Now(r.ctx)), time.Millisecond))
}

// judge asks for the verdict on the window between two marks of step (-1: background).
func (r *rollout) judge(step, from, to int, window string) (model.AnalysisVerdict, error) {
	var s *int32
	if step >= 0 {
		n := int32(step)
		s = &n
	}
	in := activities.JudgeAnalysisInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, Canary: r.in.ToDefinitionID,
		Step: s, From: markName(step, from), To: markName(step, to), Window: window, Policy: *r.in.Analysis}
	var v model.AnalysisVerdict
	err := r.local(r.ctx, in, acts.JudgeAnalysis, &v)
	if err == nil {
		workflow.GetLogger(r.ctx).Info("canary analysis", "window", window, "verdict", v.Verdict, "reason", v.Reason)
	}
	return v, err
}

// steerAnalysis judges the windows that ended: the step's (and, at its end, the whole step)
// and the background's.
func (r *rollout) steerAnalysis() {
	if r.analysisDue {
		r.analysisDue = false
		if a := r.walked.Analysis; a != nil && r.walked.StepHold == "analysis" && r.stop == stopNone {
			r.judgeStep(a)
		}
	}
	if r.backgroundDue {
		r.backgroundDue = false
		if b := r.walked.Background; b != nil && r.backgroundOn() {
			b.Window++
			v, err := r.judge(-1, b.Window-1, b.Window, markName(-1, b.Window))
			if err != nil {
				r.abort(err)
				return
			}
			b.Next = workflow.Now(r.ctx).Add(r.interval()).UnixNano()
			if v.Verdict == model.VerdictFail {
				r.analysisFailed(v)
			}
		}
	}
}

// judgeStep judges the step's window that ended and, once the step's analysis is over, the
// whole step.
func (r *rollout) judgeStep(a *WalkAnalysis) {
	a.Window++
	v, err := r.judge(a.Step, a.Window-1, a.Window, markName(a.Step, a.Window))
	if err != nil {
		r.abort(err)
		return
	}
	if v.Verdict == model.VerdictFail {
		r.analysisFailed(v)
		return
	}
	now := workflow.Now(r.ctx).UnixNano()
	if now < a.Until {
		a.Next = min(now+r.interval().Nanoseconds(), a.Until)
		return
	}
	if a.Window > 1 {
		if v, err = r.judge(a.Step, 0, a.Window, fmt.Sprintf("step-%d", a.Step)); err != nil {
			r.abort(err)
			return
		}
	}
	switch {
	case v.Verdict == model.VerdictFail:
		r.analysisFailed(v)
		return
	case v.Verdict == model.VerdictInconclusive && r.in.Analysis.OnInconclusive == model.InconclusiveFail:
		r.analysisFailed(v)
		return
	case v.Verdict == model.VerdictInconclusive && r.in.Analysis.OnInconclusive == model.InconclusivePause:
		workflow.GetLogger(r.ctx).Warn("canary analysis inconclusive: paused for a human (resume goes on, abort reverts)", "step", a.Step)
		r.phase = phaseOf(false, true)
	}
	a.Done = true
	r.walked.StepHold = ""
}

// analysisFailed is a failed verdict: an app failure of the new definition, which the
// failure policy acts on at once (revert by default).
func (r *rollout) analysisFailed(v model.AnalysisVerdict) {
	f := &model.RolloutFailure{Reason: model.FailureAnalysis, Kind: model.FailureApp, DefinitionID: r.in.ToDefinitionID, Detail: v.Reason}
	if r.walked.Failure == nil {
		r.walked.Failure = f
	}
	if a := r.walked.Analysis; a != nil && r.walked.StepHold == "analysis" {
		a.Done = true
		r.walked.StepHold = ""
	}
	workflow.GetLogger(r.ctx).Warn("canary analysis failed", "window", v.Window, "reason", v.Reason)
	onFailure := model.OnFailureRevert
	if r.in.Failure != nil {
		onFailure = r.in.Failure.OnFailure
	}
	switch onFailure {
	case model.OnFailureRevert:
		r.revert()
	case model.OnFailurePause:
		r.phase = phaseOf(false, true)
	}
}
