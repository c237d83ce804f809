package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// WalkRunInput hands a stretch of a forward walk to one activity (an index run, db/rollout_run.go).
// The workflow decides where it starts, the health gate and the deadline; the run walks up
// from From one index at a time until the LRP's last index or MaxSteps indices.
type WalkRunInput struct {
	RolloutID    string `json:"rollout_id"`
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
	// Fence is what OpenRun answered: the run holds the rollout with it.
	Fence int64 `json:"fence"`
	From  int32 `json:"from"`
	// Before are the indices the walk updated before this run (for the row's count).
	Before []int32 `json:"before,omitempty"`
	// Healthy says an instance of the definition has run. Until one does, no deadline
	// applies (seed 000's failing definition waits at its first index for good).
	Healthy bool `json:"healthy,omitempty"`
	// Deadline is how long an index of a healthy definition may take to run.
	Deadline time.Duration `json:"deadline"`
	// MaxSteps bounds the indices the run decides, as the workflow's history budget does.
	MaxSteps int `json:"max_steps"`
	// RunID names the workflow run, for the rollout row.
	RunID string `json:"run_id,omitempty"`
	// Failures and MaxCrashes are the rollout's failure policy (AwaitRunningInput): with it,
	// the run ends at the first index it gives up, so that the workflow decides what the
	// failure means (revert, pause, or walk on).
	Failures   bool  `json:"failures,omitempty"`
	MaxCrashes int32 `json:"max_crashes,omitempty"`
	// MinReady is AwaitRunningInput.MinReady for every index of the run.
	MinReady time.Duration `json:"min_ready,omitempty"`
}

// WalkRunOutput is what a run did, over all its attempts.
type WalkRunOutput struct {
	// Fenced says the run was stopped before this attempt could act: nothing else is set.
	Fenced bool `json:"fenced,omitempty"`
	// Updated and GivenUp are the indices the run decided, as db.RunState.
	Updated []int32 `json:"updated,omitempty"`
	GivenUp []int32 `json:"given_up,omitempty"`
	// Next is the first index the run did not decide: the LRP's count when it walked to the
	// end, less when MaxSteps ended it.
	Next int32 `json:"next"`
	// Instances is the LRP's count as the run last read it.
	Instances int32 `json:"instances,omitempty"`
	// Failure is why the index the run ended at was given up (WalkRunInput.Failures).
	Failure *model.RolloutFailure `json:"failure,omitempty"`
}

// OpenRunOutput is the fence of a new index run.
type OpenRunOutput struct {
	Fence int64 `json:"fence"`
}

// StopRunOutput is what a stopped index run did: Index is the index it left desired and
// undecided, -1 for none.
type StopRunOutput struct {
	Updated []int32 `json:"updated,omitempty"`
	GivenUp []int32 `json:"given_up,omitempty"`
	Index   int32   `json:"index"`
}

// runDetails are WalkRun's heartbeat: where the run is (the Web UI shows them for the
// pending activity), and since when Index has been waited for, so that a retried attempt
// keeps its deadline.
type runDetails struct {
	Index   int32  `json:"index"`
	Since   int64  `json:"since"`
	State   string `json:"state,omitempty"`
	Updated int    `json:"updated"`
	GivenUp int    `json:"given_up"`
}

// OpenRun opens an index run of the rollout (fencing out any earlier one) and returns its fence.
func (r *Rollouts) OpenRun(ctx context.Context, in RolloutIDInput) (OpenRunOutput, error) {
	fence, err := r.Store.OpenRun(ctx, in.RolloutID)
	return OpenRunOutput{Fence: fence}, nonRetryable(err)
}

// StopRun fences out the rollout's index run and returns what it did: once it has returned,
// the run changes nothing more.
func (r *Rollouts) StopRun(ctx context.Context, in RolloutIDInput) (StopRunOutput, error) {
	st, err := r.Store.StopRun(ctx, in.RolloutID)
	return StopRunOutput{Updated: st.Updated, GivenUp: st.GivenUp, Index: st.Index}, nonRetryable(err)
}

// WalkRun walks the indices from in.From as the stepwise walk does — desire the definition's
// instance, wait until it is RUNNING and ready, retire the others there — with one
// transaction per index and no Temporal round trip between indices: an index's decision and
// the next index's desire commit together (db.Store.AdvanceRun). An index that does not run
// within the deadline (once the definition is healthy) is given up and its instance retired;
// an index the LRP was scaled below ends the run. Every write is fenced: a run the workflow
// stopped (a signal) or an attempt a later one took over ends without another write, and a
// retried attempt resumes where the last one was. Progress shows on the rollout row (with a
// rollout_changed event per index) and in the heartbeat details.
func (r *Rollouts) WalkRun(ctx context.Context, in WalkRunInput) (WalkRunOutput, error) {
	h := db.RunHold{RolloutID: in.RolloutID, Fence: in.Fence, Attempt: activity.GetInfo(ctx).Attempt}
	run, err := r.Store.TakeRun(ctx, h)
	if errors.Is(err, db.ErrRunFenced) {
		return WalkRunOutput{Fenced: true}, nil
	}
	if err != nil {
		return WalkRunOutput{}, nonRetryable(err)
	}
	w := &runWalk{r: r, in: in, hold: h, run: run, healthy: in.Healthy || len(run.Updated) > 0}
	changes, stop := r.changes(ctx, in.ProcessGUID)
	defer stop()
	err = w.walk(ctx, changes)
	w.stops.Wait()
	if errors.Is(err, db.ErrRunFenced) {
		err = nil // stopped by the workflow: it learns what the run did from StopRun
	}
	return w.output(), nonRetryable(err)
}

// stopTimeout bounds the stop requests of an index: a cell that does not answer stops its
// retiring instances at its own next reconciliation.
const stopTimeout = 10 * time.Second

// runWalk is one attempt of an index run.
type runWalk struct {
	r       *Rollouts
	in      WalkRunInput
	hold    db.RunHold
	run     db.RunState
	healthy bool
	next    int32 // the index being walked
	// instances is the LRP's count as the last step read it.
	instances int32
	details   runDetails
	// stops are the stop requests on their way to the cells: sent while the run walks on,
	// waited for before it returns.
	stops sync.WaitGroup
	// failure is why the run gave its last index up (WalkRunInput.Failures).
	failure *model.RolloutFailure
}

func (w *runWalk) output() WalkRunOutput {
	return WalkRunOutput{Updated: w.run.Updated, GivenUp: w.run.GivenUp, Next: w.next, Instances: w.instances, Failure: w.failure}
}

func (w *runWalk) steps() int { return len(w.run.Updated) + len(w.run.GivenUp) }

// walk resumes where the run is (an earlier attempt's index, or after its last decision) and
// walks on until the end, MaxSteps, an error or the fence.
func (w *runWalk) walk(ctx context.Context, changes <-chan struct{}) error {
	w.next = w.in.From
	if w.run.Index >= 0 {
		w.next = w.run.Index
	} else if decided := slices.Concat(w.run.Updated, w.run.GivenUp); len(decided) > 0 {
		w.next = slices.Max(decided) + 1
	}
	if w.steps() >= w.in.MaxSteps {
		return nil
	}
	if w.in.Failures && len(w.run.GivenUp) > 0 {
		// An earlier attempt gave an index up and ended there, its worker lost before the
		// workflow heard why: the run ends where it did, with what is known.
		i := slices.Max(w.run.GivenUp)
		w.failure = &model.RolloutFailure{Reason: model.FailureIndexDeadline, Index: &i, DefinitionID: w.in.DefinitionID,
			Kind: model.FailureApp, Detail: "given up by an earlier attempt of the index run, whose worker was lost"}
		return nil
	}
	w.details = runDetails{Index: w.next, Since: time.Now().UnixNano()}
	if activity.HasHeartbeatDetails(ctx) {
		var prev runDetails
		if err := activity.GetHeartbeatDetails(ctx, &prev); err == nil && prev.Index == w.next && prev.Since != 0 {
			w.details.Since = prev.Since
		}
	}
	adv, err := w.advance(ctx, -1, "", w.next)
	for err == nil {
		if w.next >= adv.Instances {
			return nil // walked to the end (or the LRP was scaled below the index)
		}
		var out AwaitRunningOutput
		out, err = w.wait(ctx, changes)
		if err != nil {
			return err
		}
		outcome := model.StepUpdated
		switch {
		case out.Missing:
			// Its cell removed it: desire it again (fenced, so an abandoned run cannot).
			adv, err = w.advance(ctx, -1, "", w.next)
			continue
		case out.Beyond:
			outcome = model.StepScaledAway
		case out.GivenUp:
			outcome = model.StepGivenUp
			w.failure = out.Failure
			w.r.log().Warn("gave up an index", zap.String("process_guid", w.in.ProcessGUID),
				zap.String("definition_id", w.in.DefinitionID), zap.Int32("index", w.next), zap.String("reason", out.Reason))
		}
		w.r.waitEnded(out, w.details.Since)
		next := w.next + 1
		if outcome == model.StepScaledAway || w.steps()+1 >= w.in.MaxSteps || w.failure != nil {
			next = -1
		}
		done := w.next
		if adv, err = w.advance(ctx, done, outcome, next); err != nil {
			return err
		}
		if outcome == model.StepUpdated {
			w.healthy = true
		}
		w.next = done + 1
		w.details = runDetails{Index: w.next, Since: time.Now().UnixNano(), Updated: len(w.run.Updated), GivenUp: len(w.run.GivenUp)}
		activity.RecordHeartbeat(ctx, w.details)
		if next < 0 {
			if outcome == model.StepScaledAway {
				w.next = adv.Instances
			}
			return nil
		}
	}
	return err
}

// advance decides index done (if not -1) and desires index next (if not -1) in one
// transaction, then asks the cells to stop what it retired.
func (w *runWalk) advance(ctx context.Context, done int32, outcome string, next int32) (*db.RunAdvanced, error) {
	adv, err := w.r.Store.AdvanceRun(ctx, w.hold, db.RunAdvance{ProcessGUID: w.in.ProcessGUID, DefinitionID: w.in.DefinitionID,
		Done: done, Outcome: outcome, Next: next, Before: w.in.Before, RunID: w.in.RunID})
	if err != nil {
		return nil, err
	}
	if !adv.Exists {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("LRP %q was removed", w.in.ProcessGUID), string(model.ErrResourceNotFound), nil)
	}
	w.run, w.instances = adv.Run, adv.Instances
	if len(adv.ToStop) > 0 {
		// The retirement is committed; the cells are told while the run goes on to the next
		// index (a failed request is logged, and the cells stop retiring instances on their
		// own at their next reconciliation).
		w.stops.Add(1)
		go func() {
			defer w.stops.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			defer cancel()
			w.r.stop(sctx, adv.ToStop)
		}()
	}
	return adv, nil
}

// wait waits for the instance at w.next as AwaitRunning does, heartbeating and making sure,
// at each safety tick, that the run is still held: a run the workflow stopped while its
// instance never runs must not wait on for good.
func (w *runWalk) wait(ctx context.Context, changes <-chan struct{}) (AwaitRunningOutput, error) {
	in := AwaitRunningInput{ProcessGUID: w.in.ProcessGUID, DefinitionID: w.in.DefinitionID, Index: w.next,
		Failures: w.in.Failures, MaxCrashes: w.in.MaxCrashes, MinReady: w.in.MinReady}
	if w.healthy {
		in.Deadline = w.in.Deadline
	}
	checked := time.Now() // the desire before the wait checked the fence
	return w.r.await(ctx, in, time.Unix(0, w.details.Since), changes, func(state string, failing bool) (time.Duration, error) {
		w.details.State = state
		activity.RecordHeartbeat(ctx, w.details)
		if failing || time.Since(checked) < w.r.tick() {
			return 0, nil
		}
		checked = time.Now()
		held, err := w.r.Store.HoldsRun(ctx, w.hold)
		if err == nil && !held {
			return 0, db.ErrRunFenced
		}
		return 0, err
	})
}
