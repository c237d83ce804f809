package workflows

import (
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/workflow"
)

// Failures and automatic revert (ROLLOUTS-NEXT.md section 4). With a failure policy
// (RolloutInput.Failure) every index has a deadline from the start, a new instance that
// crash-loops is given up at its max_crashes-th crash, and each index so given up is an app
// failure (a wait for placement is a platform failure: retried, never counted). Once
// max_failed_indices have failed, the policy decides: revert walks every replaced index back
// to the definition the rollout started from — the cancel's walk back, start before stop,
// at the rollout's pace — and ends reverted; pause holds the walk with the failure shown;
// continue walks on. A walk back whose own step fails pauses with both failures shown, so a
// revert never loops.

// failures says whether the rollout has a failure policy.
func (r *rollout) failures() bool { return r.in.Failure != nil }

// awaitFailures is what a wait is told of the policy: whether to tell app failures from
// platform ones, and the crash count that gives an instance up.
func (r *rollout) awaitFailures() (bool, int32) {
	if r.in.Failure == nil {
		return false, 0
	}
	return true, r.in.Failure.MaxCrashes
}

// onIndexFailed counts a forward index given up as an app failure and, once the policy's
// count is reached, acts on it.
func (r *rollout) onIndexFailed(index int32, def string, f *model.RolloutFailure) {
	if f == nil {
		f = &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &index, DefinitionID: def, Kind: model.FailureApp}
	}
	r.walked.Failed = insert(r.walked.Failed, index)
	if r.walked.Failure == nil {
		r.walked.Failure = f
	}
	limit := max(r.in.Failure.MaxFailedIndices, 1)
	workflow.GetLogger(r.ctx).Warn("index failed", "index", index, "definition_id", def, "reason", f.Reason,
		"detail", f.Detail, "failed", len(r.walked.Failed), "max_failed_indices", limit)
	if int32(len(r.walked.Failed)) < limit {
		return
	}
	switch r.in.Failure.OnFailure {
	case model.OnFailureRevert:
		r.revert()
	case model.OnFailurePause:
		r.phase = phaseOf(false, true)
	}
}

// onRevertFailed holds a walk back whose step failed — the definition it returns to no
// longer starts — with both failures shown, for a human: retrying on its own could loop.
func (r *rollout) onRevertFailed(index int32, f *model.RolloutFailure) {
	if f == nil {
		f = &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &index, DefinitionID: r.in.FromDefinitionID, Kind: model.FailureApp}
	}
	if r.walked.RevertFailure == nil {
		r.walked.RevertFailure = f
	}
	workflow.GetLogger(r.ctx).Error("walk back failed: paused", "index", index, "reason", f.Reason, "detail", f.Detail)
	r.phase = phaseOf(true, true)
}

// revert turns the walk into a revert: the cancel's walk back, ending reverted.
func (r *rollout) revert() {
	r.walked.Reverting = true
	r.onCancel()
}

// onAbort is an operator's revert: the failure says who and why. Repeated, or once the walk
// goes back anyway, it changes nothing.
func (r *rollout) onAbort(sig AbortSignal) bool {
	if r.phase.back() {
		return false
	}
	if r.walked.Failure == nil {
		detail := sig.Reason
		if detail == "" {
			detail = "aborted by an operator"
		}
		r.walked.Failure = &model.RolloutFailure{Reason: model.FailureAborted, Kind: model.FailureOperator, Detail: detail}
	}
	r.revert()
	return true
}

// failureText is a failure for the Web UI's details.
func failureText(f *model.RolloutFailure) string {
	if f == nil {
		return ""
	}
	at := ""
	if f.Index != nil {
		at = fmt.Sprintf(" at index %d", *f.Index)
	}
	return fmt.Sprintf("%s failure %s%s: %s", f.Kind, f.Reason, at, f.Detail)
}

// addProgressDeadline makes sel fire at the rollout's progress deadline while the walk goes
// forward and nothing has failed yet; the timer is made once per run, at the time the first
// run fixed. It counts the whole rollout, pauses included, but does not fail a rollout an
// operator holds: that one fails when resumed, should the deadline have passed meanwhile.
func (r *rollout) addProgressDeadline(sel workflow.Selector, changed *bool) {
	if r.in.ProgressDeadline <= 0 || !r.failures() || r.phase.back() || r.phase.held() || r.walked.Failure != nil ||
		r.walked.ProgressDeadlineAt < 0 {
		return
	}
	if r.walked.ProgressDeadlineAt == 0 {
		r.walked.ProgressDeadlineAt = workflow.Now(r.ctx).Add(r.in.ProgressDeadline).UnixNano()
	}
	if r.progressTimer == nil {
		left := time.Unix(0, r.walked.ProgressDeadlineAt).Sub(workflow.Now(r.ctx))
		r.progressTimer = workflow.NewTimer(r.ctx, max(left, time.Millisecond))
	}
	sel.AddFuture(r.progressTimer, func(workflow.Future) {
		r.progressTimer = nil
		*changed = r.onProgressDeadline() || *changed
	})
}

// onProgressDeadline fails a rollout still walking forward at its progress deadline, as an
// index failure does once max_failed_indices is reached.
func (r *rollout) onProgressDeadline() bool {
	if r.phase.back() || r.walked.Failure != nil {
		return false
	}
	r.walked.ProgressDeadlineAt = -1 // passed: no timer again in this rollout
	r.walked.Failure = &model.RolloutFailure{Reason: model.FailureProgressDeadline, Kind: model.FailureApp,
		DefinitionID: r.in.ToDefinitionID, Detail: fmt.Sprintf("not complete within %v", r.in.ProgressDeadline)}
	workflow.GetLogger(r.ctx).Warn("progress deadline passed", "definition_id", r.in.ToDefinitionID, "deadline", r.in.ProgressDeadline)
	switch r.in.Failure.OnFailure {
	case model.OnFailureRevert:
		r.revert()
	case model.OnFailurePause:
		r.phase = phaseOf(false, true)
	}
	return true
}
