package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/analysis"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// Rollouts holds the activities of the rollout workflow: each is one idempotent step of
// seed 000's walk (desire the new instance at an index, wait for it to run, retire the old
// one), because Temporal retries activities and replays workflows.
type Rollouts struct {
	Store RolloutStore
	// Stopper may be nil (no cells, as in some tests): instances to stop are then only logged,
	// and the cells' own reconciliation stops what the store no longer lists.
	Stopper Stopper
	// Waiter wakes AwaitRunning when the store changed; nil means it checks once a second.
	Waiter Waiter
	Log    *zap.Logger
	// SafetyTick is how often AwaitRunning checks without a change; zero means one second. A
	// notification may be lost (a listener reconnecting), so waits never rely on them alone.
	SafetyTick time.Duration
	// Metrics, when set, records how long each index took (AwaitRunning: the wait is the
	// step, its store steps take milliseconds) and each rollout's end (FinishRollout). The
	// activities record them because workflow code must not, and its calls' inputs are
	// pinned by the recorded histories.
	Metrics RolloutMetrics
	// Analysis are the providers an operator added to canary analysis (a webhook), asked
	// beside the routers' telemetry.
	Analysis []analysis.Provider
}

// RolloutMetrics records the walk for operators (metrics.Rollouts).
type RolloutMetrics interface {
	// IndexStep records an index whose wait ended with outcome (model.RolloutStepOutcomes)
	// after took.
	IndexStep(outcome string, took time.Duration)
	// Finished counts a rollout that ended in state.
	Finished(state string)
}

// LoadRolloutInput names the rollout to read.
type LoadRolloutInput struct {
	RolloutID   string `json:"rollout_id"`
	ProcessGUID string `json:"process_guid"`
}

// LoadRolloutOutput is what the workflow re-reads before every index: the LRP's instance
// count changes with scaling while a walk is under way.
type LoadRolloutOutput struct {
	// Exists is false once the LRP has been removed; the other fields are then empty.
	Exists              bool          `json:"exists"`
	Rollout             model.Rollout `json:"rollout"`
	Instances           int32         `json:"instances"`
	HealthyDefinitionID string        `json:"healthy_definition_id,omitempty"`
	// Gate is the rollout's gate now (model.RolloutGate): the freeze, and the window its
	// strategy names. A workflow takes it as each run begins, so that a rollout whose
	// workflow starts (or resumes) after a freeze's signals went out still holds — with no
	// command of its own, which the histories recorded before it could not replay. Nil in
	// the answers those histories recorded.
	Gate *model.RolloutGate `json:"gate,omitempty"`
}

// InstanceInput names one instance slot: a definition's instance at an index.
type InstanceInput struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
	Index        int32  `json:"index"`
}

// DesireInstanceOutput is the state of the desired instance when the activity saw it.
type DesireInstanceOutput struct {
	State string `json:"state"`
}

// RetireOthersInput names the index whose instances of every other definition retire.
type RetireOthersInput struct {
	ProcessGUID string `json:"process_guid"`
	Keep        string `json:"keep"`
	Index       int32  `json:"index"`
}

// RetireOutput counts what a retirement did. StopFailed says the stop requests failed: they
// are logged, not retried (see RetireOthers).
type RetireOutput struct {
	ToStop     int  `json:"to_stop"`
	StopFailed bool `json:"stop_failed,omitempty"`
}

// AwaitRunningInput names the instance to wait for. Deadline, when positive, is how long
// after the first attempt the wait gives up (a flaky definition's index, seed 000).
type AwaitRunningInput struct {
	ProcessGUID  string        `json:"process_guid"`
	DefinitionID string        `json:"definition_id"`
	Index        int32         `json:"index"`
	Deadline     time.Duration `json:"deadline,omitempty"`
	// Failures tells app failures from platform ones (a rollout with a failure policy,
	// ROLLOUTS-NEXT.md section 4): a wait given up carries its Failure, and the deadline does
	// not pass while the instance waits to be placed (no capacity, a cell lost) — that
	// is retried, never failed for. MaxCrashes, when positive, gives the instance up at its
	// MaxCrashes-th crash (a crash loop).
	Failures   bool  `json:"failures,omitempty"`
	MaxCrashes int32 `json:"max_crashes,omitempty"`
	// MinReady, when positive, is how long the instance must have been RUNNING and ready,
	// without a break, before the wait says it runs (strategy.min_ready_ms): an instance that
	// passes its first check and then falls over does not cost the old one its index. The
	// deadline does not pass while the instance is ready.
	MinReady time.Duration `json:"min_ready,omitempty"`
}

// AwaitRunningOutput says how the wait ended. Exactly one of Running, GivenUp, Missing and
// Beyond is true.
type AwaitRunningOutput struct {
	Running bool `json:"running,omitempty"`
	// GivenUp: the deadline passed before the instance ran, or it crash-looped; Reason says
	// how it fared, and, with AwaitRunningInput.Failures, Failure says it for the rollout.
	GivenUp bool                  `json:"given_up,omitempty"`
	Reason  string                `json:"reason,omitempty"`
	Failure *model.RolloutFailure `json:"failure,omitempty"`
	// Missing: the instance record is gone (e.g. its cell removed it) while the index is still
	// desired; the workflow desires it again. The activity does not, so that a wait the
	// workflow has abandoned can never bring an instance back behind its back.
	Missing bool `json:"missing,omitempty"`
	// Beyond: the LRP was scaled down below this index.
	Beyond bool `json:"beyond,omitempty"`
}

// RecordProgressInput is where a rollout's walk stands.
type RecordProgressInput struct {
	RolloutID string                `json:"rollout_id"`
	Progress  model.RolloutProgress `json:"progress"`
	// StateOnly records the state and run id alone: an index run in flight records the
	// counts itself.
	StateOnly bool `json:"state_only,omitempty"`
}

// RolloutIDInput names a rollout.
type RolloutIDInput struct {
	RolloutID string `json:"rollout_id"`
}

// FinishRolloutInput ends a rollout in a final state.
type FinishRolloutInput struct {
	RolloutID string `json:"rollout_id"`
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
}

// CompleteRolloutInput ends a rollout whose walk went through every index: where it ended,
// its final state (completed or canceled) and the definitions to prune (Store.CompleteRollout).
type CompleteRolloutInput struct {
	RolloutID string                `json:"rollout_id"`
	Progress  model.RolloutProgress `json:"progress"`
	State     string                `json:"state"`
	Prune     []string              `json:"prune,omitempty"`
}

// PruneDefinitionInput names a definition that may no longer be needed.
type PruneDefinitionInput struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
}

// PruneDefinitionOutput says whether the definition left the LRP's definitions map now;
// false means instances still run it and convergence prunes it later (seed 000).
type PruneDefinitionOutput struct {
	Pruned bool `json:"pruned"`
}

// Empty is the output of activities that return nothing, so that fields can be added later
// without breaking recorded histories.
type Empty struct{}

func (r *Rollouts) log() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}

// nonRetryable turns errors that no retry can fix (bad input, a removed LRP, definition or
// rollout, a cancel of a rollout that ended) into non-retryable application errors typed with
// the model's error type, so that the workflow can tell them apart.
func nonRetryable(err error) error {
	if err == nil {
		return nil
	}
	switch t := model.TypeOf(err); t {
	// Frozen: a rollback an operator signalled while the fleet is frozen is refused, as the
	// API refuses it, not retried until the unfreeze.
	case model.ErrInvalidRequest, model.ErrResourceNotFound, model.ErrNoUpdateInProgress, model.ErrFrozen:
		return temporal.NewNonRetryableApplicationError(err.Error(), string(t), err)
	}
	return err
}

// LoadRollout reads the rollout row and the LRP's desired instances and healthy definition.
func (r *Rollouts) LoadRollout(ctx context.Context, in LoadRolloutInput) (LoadRolloutOutput, error) {
	n, healthy, exists, err := r.Store.DesiredInstances(ctx, in.ProcessGUID)
	if err != nil {
		return LoadRolloutOutput{}, nonRetryable(err)
	}
	if !exists {
		return LoadRolloutOutput{}, nil
	}
	ro, err := r.Store.RolloutByID(ctx, in.RolloutID)
	if err != nil {
		return LoadRolloutOutput{}, nonRetryable(err)
	}
	out := LoadRolloutOutput{Exists: true, Rollout: *ro, Instances: n, HealthyDefinitionID: healthy}
	g := gateOf(ro)
	if err := r.gateAt(ctx, &g, time.Now()); err != nil {
		return LoadRolloutOutput{}, nonRetryable(err)
	}
	out.Gate = &g
	return out, nil
}

// DesireInstance makes sure an instance of the definition exists at the index, for placement.
//
// Replay only (since 2026-11-27): every rollout started since walks by index runs
// (RolloutInput.WalkByRuns); this step activity is kept registered for the runs started
// before, whose histories call it. It can go, with the workflow's step path
// (workflows/rollout_walk.go start and runStep), once no rollout started by an older BBS is
// open — `temporal workflow list --query "ExecutionStatus='Running' AND StartTime <
// '<when every BBS ran this version>'"` lists none — together with the recorded history sets
// that use it (workflows/testdata).
func (r *Rollouts) DesireInstance(ctx context.Context, in InstanceInput) (DesireInstanceOutput, error) {
	a, err := r.Store.DesireInstance(ctx, in.ProcessGUID, in.DefinitionID, in.Index)
	if err != nil {
		return DesireInstanceOutput{}, nonRetryable(err)
	}
	return DesireInstanceOutput{State: a.State}, nil
}

// RetireOthers: replay only, as DesireInstance.
//
// RetireOthers retires the instances at the index whose definition is not in.Keep, and asks
// their cells to stop the ones that run. The workflow calls it only once the kept
// definition's instance there is RUNNING, which is what makes the walk zero-downtime.
//
// A failed stop request does not fail the activity: the store change is committed, so a retry
// would not list the instances again; their records stay until their cells report the stop,
// so convergence lists them and asks again, and a cell also stops on its own what the store
// no longer wants (seed 003, "Harmonizing ActualLRPs with Container State").
func (r *Rollouts) RetireOthers(ctx context.Context, in RetireOthersInput) (RetireOutput, error) {
	lrps, err := r.Store.RetireOthers(ctx, in.ProcessGUID, in.Keep, in.Index)
	if err != nil {
		return RetireOutput{}, nonRetryable(err)
	}
	return r.stop(ctx, lrps), nil
}

// RetireInstance: replay only, as DesireInstance.
//
// RetireInstance retires the definition's instance at the index (a given-up, interrupted or
// scaled-away index), asking its cell to stop it if it runs; stop failures are handled as in
// RetireOthers.
func (r *Rollouts) RetireInstance(ctx context.Context, in InstanceInput) (RetireOutput, error) {
	lrps, err := r.Store.RetireInstance(ctx, in.ProcessGUID, in.DefinitionID, in.Index)
	if err != nil {
		return RetireOutput{}, nonRetryable(err)
	}
	return r.stop(ctx, lrps), nil
}

func (r *Rollouts) stop(ctx context.Context, lrps []model.ActualLRP) RetireOutput {
	out := RetireOutput{ToStop: len(lrps)}
	if len(lrps) == 0 {
		return out
	}
	if r.Stopper == nil {
		for _, a := range lrps {
			r.log().Warn("no stopper configured: retired instance left to its cell",
				zap.String("process_guid", a.ProcessGUID), zap.String("definition_id", a.DefinitionID),
				zap.Int32("index", a.Index), zap.String("cell_id", a.CellID))
		}
		return out
	}
	if err := r.Stopper.StopInstances(ctx, lrps); err != nil {
		out.StopFailed = true
		r.log().Warn("stop requests failed; convergence asks again", zap.Int("instances", len(lrps)), zap.Error(err))
	}
	return out
}

// heartbeatAfter is how long AwaitRunning waits before its first heartbeat; well within the
// workflow's HeartbeatTimeout (10 s).
const heartbeatAfter = time.Second

// awaitDetails is AwaitRunning's heartbeat: Since survives retries, so that a retried attempt
// keeps the deadline of the first one instead of starting a fresh one.
type awaitDetails struct {
	Since int64  `json:"since"` // Unix nanoseconds of the first attempt
	State string `json:"state,omitempty"`
}

// AwaitRunning: replay only, as DesireInstance (an index run waits the same way: await).
//
// AwaitRunning waits until the definition's instance at the index is RUNNING and ready (its
// readiness checks, if any, pass), or until the deadline (if any) has passed since the first
// attempt. It checks the store when the Waiter says something changed, and at least every
// SafetyTick, heartbeating as it goes; it never sleeps a fixed time per check, so a start is
// seen within milliseconds of its commit.
func (r *Rollouts) AwaitRunning(ctx context.Context, in AwaitRunningInput) (AwaitRunningOutput, error) {
	hb := awaitDetails{Since: time.Now().UnixNano()}
	if activity.HasHeartbeatDetails(ctx) {
		var prev awaitDetails
		if err := activity.GetHeartbeatDetails(ctx, &prev); err == nil && prev.Since != 0 {
			hb.Since = prev.Since
		}
	}
	// The first heartbeat is a round trip to the server; most waits end well before any is
	// needed (a new instance usually runs within milliseconds), so heartbeats begin only once
	// a wait has lasted heartbeatAfter, or before an attempt fails (keeping Since for its
	// retry). A worker that dies within that first second leaves no Since behind: its retry
	// (after the heartbeat timeout) counts the deadline afresh, which lengthens it by about
	// that timeout, once. A cancel reaches an attempt that has not heartbeaten only when it
	// ends — harmless, as the workflow does not wait for it and it only reads.
	attemptStart := time.Now()
	beat := false
	changes, stop := r.changes(ctx, in.ProcessGUID)
	defer stop()
	out, err := r.await(ctx, in, time.Unix(0, hb.Since), changes, func(state string, failing bool) (time.Duration, error) {
		hb.State = state
		if failing {
			if !beat {
				activity.RecordHeartbeat(ctx, hb)
			}
			return 0, nil
		}
		if time.Since(attemptStart) >= heartbeatAfter {
			activity.RecordHeartbeat(ctx, hb)
			beat = true
			return 0, nil
		}
		return heartbeatAfter - time.Since(attemptStart), nil
	})
	r.waitEnded(out, hb.Since)
	return out, err
}

// tick is how often a wait looks without being woken.
func (r *Rollouts) tick() time.Duration {
	if r.SafetyTick <= 0 {
		return time.Second
	}
	return r.SafetyTick
}

// changes subscribes to the LRP's changes; without a Waiter the channel never receives.
func (r *Rollouts) changes(ctx context.Context, guid string) (<-chan struct{}, func()) {
	if r.Waiter == nil {
		return nil, func() {}
	}
	return r.Waiter.Changes(ctx, guid)
}

// await checks the instance in.Index of in.DefinitionID until it is routable, given up
// (in.Deadline after since, when positive), missing or beyond the count: at once, on each
// change, and at least every SafetyTick. Before each wait, and before an error returns
// (failing true), it calls idle with the instance's state: idle may shorten the wait (a
// positive duration), or end it with an error.
func (r *Rollouts) await(ctx context.Context, in AwaitRunningInput, since time.Time, changes <-chan struct{},
	idle func(state string, failing bool) (time.Duration, error)) (AwaitRunningOutput, error) {
	tick := r.tick()
	timer := time.NewTimer(tick)
	defer timer.Stop()
	var readySince time.Time // since when the instance has been routable, for MinReady
	for {
		out, look, err := r.checkRunning(ctx, in)
		state := look.state
		if err != nil {
			idle(state, true)
			return out, err
		}
		wait := tick
		if out.Running && in.MinReady > 0 {
			if readySince.IsZero() {
				readySince = time.Now()
			}
			left := in.MinReady - time.Since(readySince)
			if left > 0 {
				out, state, wait = AwaitRunningOutput{}, fmt.Sprintf("RUNNING and ready for %v of min_ready %v", time.Since(readySince).Round(time.Millisecond), in.MinReady), min(wait, left)
				since = time.Now() // ready: the deadline is met
			}
		} else if !out.Running {
			readySince = time.Time{}
		}
		if !out.isZero() {
			return out, nil
		}
		if in.Failures && look.unplaced {
			// Not placed (no capacity, its cell lost): a platform failure, retried as long as
			// it lasts; the instance's own time starts once it is placed.
			since = time.Now()
			state += " (waiting to be placed: a platform failure, not counted)"
		}
		if in.Deadline > 0 {
			left := time.Until(since.Add(in.Deadline))
			if left <= 0 {
				return deadlinePassed(in, look), nil
			}
			wait = min(wait, left)
		}
		shorter, err := idle(state, false)
		if err != nil {
			return AwaitRunningOutput{}, err
		}
		if shorter > 0 {
			wait = min(wait, shorter)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return AwaitRunningOutput{}, ctx.Err()
		case <-changes:
		case <-timer.C:
		}
	}
}

// waitEnded records the duration of a wait, since the first attempt (Unix nanoseconds), that
// decided its index: the instance ran, was given up, or was scaled away. A Missing instance
// is desired again and waited for anew; an error is retried.
func (r *Rollouts) waitEnded(out AwaitRunningOutput, since int64) {
	if r.Metrics == nil {
		return
	}
	took := time.Since(time.Unix(0, since))
	switch {
	case out.Running:
		r.Metrics.IndexStep(model.StepUpdated, took)
	case out.GivenUp:
		r.Metrics.IndexStep(model.StepGivenUp, took)
	case out.Beyond:
		r.Metrics.IndexStep(model.StepScaledAway, took)
	}
}

// isZero says the wait has no outcome yet.
func (o AwaitRunningOutput) isZero() bool {
	return !o.Running && !o.GivenUp && !o.Missing && !o.Beyond
}

// look is what one look at the awaited instance saw.
type look struct {
	// state describes the instance for a give-up reason.
	state string
	// unplaced: UNCLAIMED and never crashed — waiting for placement, not failing.
	unplaced bool
	// notReady: RUNNING with its readiness checks not passing.
	notReady bool
	instance *model.ActualLRP
}

// checkRunning looks once. A zero output with no error means "not yet"; look then describes
// the instance for the give-up reason.
func (r *Rollouts) checkRunning(ctx context.Context, in AwaitRunningInput) (AwaitRunningOutput, look, error) {
	a, err := r.Store.Instance(ctx, in.ProcessGUID, in.DefinitionID, in.Index)
	if err == nil {
		// Routable: RUNNING with its readiness checks passing (the old instance keeps the
		// traffic until then). A retiring instance (still draining from an earlier walk over
		// this index) is not the one to wait for: its stop is on its way; once its record
		// goes, Missing makes the workflow desire a fresh one.
		if a.Routable() {
			return AwaitRunningOutput{Running: true}, look{state: a.State}, nil
		}
		l := look{state: a.State, instance: a, unplaced: a.State == model.StateUnclaimed && a.CrashCount == 0}
		if a.State == model.StateRunning && a.NotReady {
			l.state, l.notReady = "RUNNING, readiness checks not passing", true
		} else if a.CrashCount > 0 {
			l.state = fmt.Sprintf("%s after %d crashes: %s", a.State, a.CrashCount, a.CrashReason)
		} else if a.PlacementError != "" {
			l.state = fmt.Sprintf("%s: %s", a.State, a.PlacementError)
		}
		if in.MaxCrashes > 0 && a.CrashCount >= in.MaxCrashes {
			return crashLoop(in, a), l, nil
		}
		return AwaitRunningOutput{}, l, nil
	}
	if !model.IsType(err, model.ErrResourceNotFound) {
		// A database hiccup: the activity fails and Temporal retries it, the deadline intact.
		return AwaitRunningOutput{}, look{}, err
	}
	n, _, exists, err := r.Store.DesiredInstances(ctx, in.ProcessGUID)
	switch {
	case err != nil:
		return AwaitRunningOutput{}, look{}, nonRetryable(err)
	case !exists:
		return AwaitRunningOutput{}, look{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("LRP %q was removed", in.ProcessGUID), string(model.ErrResourceNotFound), nil)
	case in.Index >= n:
		return AwaitRunningOutput{Beyond: true}, look{}, nil
	}
	return AwaitRunningOutput{Missing: true}, look{}, nil
}

// BeginCancel turns the rollout into a walk back to its from definition.
func (r *Rollouts) BeginCancel(ctx context.Context, in RolloutIDInput) (Empty, error) {
	return Empty{}, nonRetryable(r.Store.BeginCancel(ctx, in.RolloutID))
}

// RecordProgress stores where the walk stands, for the API's rollout reads.
func (r *Rollouts) RecordProgress(ctx context.Context, in RecordProgressInput) (Empty, error) {
	if in.StateOnly {
		return Empty{}, nonRetryable(r.Store.RecordRolloutState(ctx, in.RolloutID, in.Progress.State, in.Progress.RunID))
	}
	return Empty{}, nonRetryable(r.Store.RecordRolloutProgress(ctx, in.RolloutID, in.Progress))
}

// FinishRollout ends the rollout in a final state.
func (r *Rollouts) FinishRollout(ctx context.Context, in FinishRolloutInput) (Empty, error) {
	if !model.RolloutInProgress(in.State) && in.State != "" {
		finished, err := r.Store.FinishRollout(ctx, in.RolloutID, in.State, in.Reason)
		if finished && r.Metrics != nil {
			r.Metrics.Finished(in.State)
		}
		return Empty{}, nonRetryable(err)
	}
	return Empty{}, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("finish rollout: %q is not a final state", in.State), string(model.ErrInvalidRequest), nil)
}

// CompleteRollout records where the walk ended, ends the rollout and prunes the
// definitions it left behind, in one transaction: a rollout's end in one local activity.
func (r *Rollouts) CompleteRollout(ctx context.Context, in CompleteRolloutInput) (Empty, error) {
	finished, err := r.Store.CompleteRollout(ctx, in.RolloutID, in.Progress, in.State, in.Prune)
	if finished && r.Metrics != nil {
		r.Metrics.Finished(in.State)
	}
	return Empty{}, nonRetryable(err)
}

// PruneDefinition drops a definition no instance runs any more from the LRP's definitions map.
func (r *Rollouts) PruneDefinition(ctx context.Context, in PruneDefinitionInput) (PruneDefinitionOutput, error) {
	pruned, err := r.Store.PruneDefinition(ctx, in.ProcessGUID, in.DefinitionID)
	return PruneDefinitionOutput{Pruned: pruned}, nonRetryable(err)
}

// StartRollbackInput names the stored definition an operator asked to roll back to.
type StartRollbackInput struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
}

// StartRollbackOutput is the rollout row the rollback created.
type StartRollbackOutput struct {
	RolloutID        string `json:"rollout_id"`
	FromDefinitionID string `json:"from_definition_id"`
	ToDefinitionID   string `json:"to_definition_id"`
	Kind             string `json:"kind"`
}

// StartRollback records a rollback signalled to a running rollout workflow (`temporal
// workflow signal --name rollback`), superseding the rollout under way exactly as
// /v1/lrp_deployments/activate would. An unknown (or pruned) definition is a non-retryable
// ResourceNotFound: the workflow logs it and carries on.
func (r *Rollouts) StartRollback(ctx context.Context, in StartRollbackInput) (StartRollbackOutput, error) {
	st, err := r.Store.StartRollout(ctx, db.RolloutRequest{ProcessGUID: in.ProcessGUID, Kind: model.RolloutKindRollback,
		DefinitionID: in.DefinitionID, Supersede: true})
	if err != nil {
		return StartRollbackOutput{}, nonRetryable(err)
	}
	return StartRollbackOutput{RolloutID: st.Rollout.ID, FromDefinitionID: st.Rollout.FromDefinitionID,
		ToDefinitionID: st.Rollout.ToDefinitionID, Kind: st.Rollout.Kind}, nil
}
