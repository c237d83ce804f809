package activities

import (
	"fmt"

	"github.com/updatable-lrps/bbs/model"
)

// crashLoop gives up a new instance at its max_crashes-th crash: an app failure whose detail
// is what the cell said of the last crash (its exit status and last line of output).
func crashLoop(in AwaitRunningInput, a *model.ActualLRP) AwaitRunningOutput {
	reason := fmt.Sprintf("instance %d of %q crashed %d times (max_crashes %d): %s", in.Index, in.DefinitionID,
		a.CrashCount, in.MaxCrashes, a.CrashReason)
	return AwaitRunningOutput{GivenUp: true, Reason: reason, Failure: &model.RolloutFailure{
		Reason: model.FailureCrashLoop, Index: &in.Index, InstanceGUID: a.InstanceGUID, DefinitionID: in.DefinitionID,
		Kind: model.FailureApp, Detail: fmt.Sprintf("%d crashes; last: %s", a.CrashCount, a.CrashReason)}}
}

// deadlinePassed gives up a new instance whose deadline passed: with a failure policy, an
// app failure — not_ready when it runs but its readiness checks do not pass, else
// index_deadline.
func deadlinePassed(in AwaitRunningInput, l look) AwaitRunningOutput {
	out := AwaitRunningOutput{GivenUp: true, Reason: fmt.Sprintf(
		"instance %d of %q not RUNNING %v after it was desired (last state %s)", in.Index, in.DefinitionID, in.Deadline, l.state)}
	if !in.Failures {
		return out
	}
	f := &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &in.Index, DefinitionID: in.DefinitionID,
		Kind: model.FailureApp, Detail: fmt.Sprintf("not RUNNING and ready within %v; last state %s", in.Deadline, l.state)}
	if l.notReady {
		f.Reason = model.FailureNotReady
	}
	if l.instance != nil {
		f.InstanceGUID = l.instance.InstanceGUID
	}
	out.Failure = f
	return out
}
