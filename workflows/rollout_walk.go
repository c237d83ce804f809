package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// step is one index being replaced: desire def's instance, wait for it, retire the others.
type step struct {
	index  int32
	def    string
	back   bool // a walk-back step (cancel) rather than a forward one
	cancel workflow.CancelFunc
	// run says the step is an index run (WalkRun) from index up, for rolloutID; pausing
	// says a pause stopped it, so that the index it left undecided finishes as a step.
	run       bool
	rolloutID string
	pausing   bool
	// fence is the run's (once opened) and limit the limit it was last given: how many
	// indices it may have in flight (0: drained by a pause). WalkByRuns only.
	fence int64
	limit int
}

type outcome int

const (
	outUpdated     outcome = iota // def runs at the index; the others are retired
	outGivenUp                    // the deadline passed; def's instance is retired
	outBeyond                     // the LRP was scaled below the index
	outInterrupted                // a cancel or supersede; def's instance is retired
	outGone                       // the LRP was removed
	outError                      // an activity failed for good
)

type stepResult struct {
	s      *step
	out    outcome
	reason string
	err    error
	// failure is why an index was given up, with a failure policy (outGivenUp).
	failure *model.RolloutFailure
	// run is what an index run decided (its out says how it ended: outUpdated when it
	// walked as far as it was asked, outInterrupted when a signal stopped it).
	run *activities.WalkRunOutput
}

// The database steps are local activities: they take milliseconds, and running them inside
// the workflow task saves a task-queue round trip each (about 45 ms on the dev server,
// ARCHITECTURE.md), which is most of a step's orchestration cost. They retry until the
// database answers; only errors no retry can fix stop them.
var localOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        200 * time.Millisecond,
		BackoffCoefficient:     2,
		MaximumInterval:        10 * time.Second,
		NonRetryableErrorTypes: []string{string(model.ErrInvalidRequest), string(model.ErrResourceNotFound)},
	},
}

// awaitOptions let AwaitRunning wait as long as a failing definition needs (seed 000 waits
// indefinitely): the heartbeat, not the start-to-close timeout, notices a dead worker.
var awaitOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 24 * time.Hour,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        30 * time.Second,
		NonRetryableErrorTypes: []string{string(model.ErrInvalidRequest), string(model.ErrResourceNotFound)},
	},
}

// local runs a store step; ctx must belong to the calling coroutine.
func (r *rollout) local(ctx workflow.Context, in, fn, out any) error {
	ctx = workflow.WithLocalActivityOptions(ctx, localOptions)
	return workflow.ExecuteLocalActivity(ctx, fn, in).Get(ctx, out)
}

func isNotFound(err error) bool { return hasType(err, model.ErrResourceNotFound) }

func hasType(err error, t model.ErrorType) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == string(t)
}

// load re-reads the rollout and the LRP; the instance count may have changed by scaling.
func (r *rollout) load() (activities.LoadRolloutOutput, error) {
	var out activities.LoadRolloutOutput
	err := r.local(r.ctx, activities.LoadRolloutInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID}, acts.LoadRollout, &out)
	if err == nil && out.Exists {
		r.instances = out.Instances
		r.counted = true
		if !r.phase.back() && out.HealthyDefinitionID == r.in.ToDefinitionID {
			r.walked.Healthy = true
		}
	}
	return out, err
}

// limit is how many steps may be in flight: one until the target has proven it can run.
func (r *rollout) limit() int {
	if !r.phase.back() && !r.walked.Healthy {
		return 1
	}
	return r.in.MaxInFlight
}

func (r *rollout) wantContinueAsNew() bool {
	return r.steps >= r.in.ContinueAsNewEvery || workflow.GetInfo(r.ctx).GetContinueAsNewSuggested()
}

// walk runs the current phase — forward to ToDefinitionID, or back to FromDefinitionID when
// canceling — until it is done or something ends it, and returns why it ended; it never
// returns with steps in flight.
func (r *rollout) walk() stopCause {
	r.stop = stopNone
	for {
		r.refreshGate()
		walkedAll := r.gateHeldAtTheEnd()
		r.beginBackground()
		r.steerTraffic()
		// An index run walks the indices after its own: nothing else starts beside it.
		for !r.held() && r.stop == stopNone && !r.wantContinueAsNew() && len(r.inFlight) < r.limit() && !r.runInFlight() && !r.atStep() {
			i, ok, err := r.nextIndex()
			if err != nil {
				r.abort(err)
				break
			}
			if !ok {
				walkedAll = true
				break
			}
			if r.inRuns() {
				r.startRun(i)
			} else {
				r.start(i)
			}
		}
		if len(r.inFlight) == 0 && r.stop == stopNone && !r.held() && r.atStep() {
			on, began := r.holdAtStep()
			if on {
				continue // a step without a hold: on to the next
			}
			if began {
				if err := r.report(); err != nil { // the hold shows as the rollout's phase
					r.abort(err)
				}
			}
		}
		if len(r.inFlight) == 0 {
			switch {
			case r.stop != stopNone:
				return r.stop
			case r.wantContinueAsNew():
				return stopContinueAsNew
			case walkedAll:
				return stopWalked
			}
			// Held with nothing in flight: only a signal moves the walk on.
		}
		changed := false
		sel := workflow.NewSelector(r.ctx)
		sel.AddReceive(r.done, func(c workflow.ReceiveChannel, _ bool) {
			var res stepResult
			c.Receive(r.ctx, &res)
			r.stepDone(res)
			changed = true
		})
		r.addSignals(sel, &changed)
		r.addProgressDeadline(sel, &changed)
		r.addStepTimer(sel, &changed)
		r.addTrafficWait(sel, &changed)
		r.addAnalysisTimers(sel, &changed)
		r.addGateTimer(sel, &changed)
		sel.Select(r.ctx)
		// Steps that ended together, and signals that came with them, are taken in one go.
		for sel.HasPending() {
			sel.Select(r.ctx)
		}
		r.refreshGate() // before the runs are steered: a window that closed drains them
		// A window's verdict may fail the rollout; a walk back then takes the new definition's
		// weight to 0 before any instance is touched.
		r.steerAnalysis()
		r.steerTraffic()
		r.steerRuns()
		// Once the walk is ending, the main loop records progress for the next one.
		if changed && r.stop == stopNone && !r.ranToEnd {
			if err := r.report(); err != nil {
				r.abort(err)
			}
		}
	}
}

// nextIndex picks the next index of the phase, re-reading the instance count first: a
// forward walk goes up from NextIndex; a walk back goes down the replaced indices.
func (r *rollout) nextIndex() (int32, bool, error) {
	if !r.inRuns() || !r.counted {
		load, err := r.load()
		if err != nil {
			return 0, false, err
		}
		if !load.Exists {
			return 0, false, temporal.NewNonRetryableApplicationError("the LRP was removed", string(model.ErrResourceNotFound), nil)
		}
	}
	if !r.phase.back() {
		if r.walked.NextIndex >= r.instances {
			return 0, false, nil
		}
		r.walked.NextIndex++
		return r.walked.NextIndex - 1, true, nil
	}
	for i := len(r.walked.Replaced) - 1; i >= 0; i-- {
		idx := r.walked.Replaced[i]
		if slices.ContainsFunc(r.inFlight, func(s *step) bool { return s.index == idx }) {
			continue
		}
		if idx >= r.instances {
			// Scaled away: the store retired every instance there already.
			r.walked.Replaced = slices.Delete(r.walked.Replaced, i, i+1)
			continue
		}
		return idx, true, nil
	}
	return 0, false, nil
}

// start and runStep are the step path: replay only since 2026-11-27 (rollouts started since
// walk by index runs, RolloutInput.WalkByRuns), kept for the runs started before; they go
// with the step activities (activities.Rollouts.DesireInstance says when).
func (r *rollout) start(i int32) {
	s := &step{index: i, def: r.in.ToDefinitionID, back: r.phase.back()}
	var deadline time.Duration
	if s.back {
		s.def = r.in.FromDefinitionID
		if r.failures() {
			deadline = r.in.IndexDeadline // a walk back that cannot start pauses (onRevertFailed)
		}
	} else if r.walked.Healthy || r.failures() {
		deadline = r.in.IndexDeadline
	}
	sctx, cancel := workflow.WithCancel(r.ctx)
	s.cancel = cancel
	r.inFlight = append(r.inFlight, s)
	workflow.Go(sctx, func(ctx workflow.Context) {
		res := r.runStep(ctx, s, deadline)
		res.s = s
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.done.Send(dctx, res)
	})
}

// runStep replaces one index. Only the wait is interruptible (ctx is the step's): the store
// steps run to completion, so an interrupt never leaves one half-known. Interrupted
// before def's instance was seen RUNNING, the step retires it, and the old instance at the
// index, never retired, keeps serving.
func (r *rollout) runStep(ctx workflow.Context, s *step, deadline time.Duration) stepResult {
	// The store steps must not be cut short by an interrupt, but must block in this
	// coroutine: a context disconnected from the step's own.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	in := activities.InstanceInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: s.def, Index: s.index}
	if err := r.local(dctx, in, acts.DesireInstance, nil); err != nil {
		return failed(err)
	}
	started := workflow.Now(ctx)
	failures, maxCrashes := r.awaitFailures()
	for {
		if ctx.Err() != nil {
			return r.retire(dctx, in, outInterrupted, "")
		}
		left := time.Duration(0)
		if deadline > 0 {
			if left = deadline - workflow.Now(ctx).Sub(started); left <= 0 {
				res := r.retire(dctx, in, outGivenUp, "deadline passed")
				if failures && res.out == outGivenUp {
					res.failure = &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &s.index, DefinitionID: s.def,
						Kind: model.FailureApp, Detail: fmt.Sprintf("not RUNNING and ready within %v", deadline)}
				}
				return res
			}
		}
		var out activities.AwaitRunningOutput
		actx := workflow.WithActivityOptions(ctx, awaitOptions)
		await := activities.AwaitRunningInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: s.def, Index: s.index, Deadline: left,
			Failures: failures, MaxCrashes: maxCrashes}
		if !s.back {
			await.MinReady = r.in.MinReady // a walk back restores service: no min_ready
		}
		err := workflow.ExecuteActivity(actx, acts.AwaitRunning, await).Get(ctx, &out)
		switch {
		case ctx.Err() != nil:
			return r.retire(dctx, in, outInterrupted, "")
		case err != nil:
			return failed(err)
		case out.Running:
			keep := activities.RetireOthersInput{ProcessGUID: r.in.ProcessGUID, Keep: s.def, Index: s.index}
			if err := r.local(dctx, keep, acts.RetireOthers, nil); err != nil {
				return failed(err)
			}
			return stepResult{out: outUpdated}
		case out.GivenUp:
			res := r.retire(dctx, in, outGivenUp, out.Reason)
			if res.out == outGivenUp {
				res.failure = out.Failure
			}
			return res
		case out.Beyond:
			return r.retire(dctx, in, outBeyond, "")
		case out.Missing:
			if err := r.local(dctx, in, acts.DesireInstance, nil); err != nil {
				return failed(err)
			}
			if failures {
				// Its cell removed it (a cell lost, evacuated): a platform failure, whose time
				// does not count against the instance.
				started = workflow.Now(ctx)
			}
		default:
			return failed(temporal.NewNonRetryableApplicationError("AwaitRunning returned no outcome", string(model.ErrUnknown), nil))
		}
	}
}

func (r *rollout) retire(ctx workflow.Context, in activities.InstanceInput, o outcome, reason string) stepResult {
	if err := r.local(ctx, in, acts.RetireInstance, nil); err != nil {
		return failed(err)
	}
	return stepResult{out: o, reason: reason}
}

func failed(err error) stepResult {
	if isNotFound(err) {
		return stepResult{out: outGone, err: err}
	}
	return stepResult{out: outError, err: err}
}

// stepDone applies a finished step to the walk.
func (r *rollout) stepDone(res stepResult) {
	s := res.s
	r.inFlight = slices.DeleteFunc(r.inFlight, func(x *step) bool { return x == s })
	if s.run {
		r.runDone(res)
		return
	}
	r.steps++
	switch res.out {
	case outUpdated:
		if s.back {
			r.walked.Replaced = remove(r.walked.Replaced, s.index)
			r.walked.Updated = remove(r.walked.Updated, s.index)
			break
		}
		r.walked.Replaced = insert(r.walked.Replaced, s.index)
		if s.def == r.in.ToDefinitionID {
			r.walked.Updated = insert(r.walked.Updated, s.index)
			r.walked.Healthy = true
		}
	case outGivenUp:
		if s.back && r.failures() {
			r.onRevertFailed(s.index, res.failure)
			break
		}
		if s.def == r.in.ToDefinitionID {
			r.walked.GivenUp = insert(r.walked.GivenUp, s.index)
			workflow.GetLogger(r.ctx).Warn("gave up an index", "index", s.index, "definition_id", s.def, "reason", res.reason)
			if r.failures() {
				r.onIndexFailed(s.index, s.def, res.failure)
			}
		}
	case outBeyond:
		if s.back {
			r.walked.Replaced = remove(r.walked.Replaced, s.index)
		}
	case outGone, outError:
		r.abort(res.err)
	}
}

func insert(xs []int32, x int32) []int32 {
	if i, found := slices.BinarySearch(xs, x); !found {
		xs = slices.Insert(xs, i, x)
	}
	return xs
}

func remove(xs []int32, x int32) []int32 {
	return slices.DeleteFunc(xs, func(y int32) bool { return y == x })
}
