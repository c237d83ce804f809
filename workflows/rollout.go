package workflows

import (
	"fmt"
	"slices"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Signals and the query of RolloutWorkflow, for `temporal workflow signal --name ...` and
// the API.
const (
	// SignalCancel stops the walk and walks the replaced indices back to the from definition
	// (seed 001's CancelUpdateDesiredLRP).
	SignalCancel = "cancel"
	// SignalPause stops starting new indices; instances in flight finish their step.
	SignalPause = "pause"
	// SignalResume undoes SignalPause.
	SignalResume = "resume"
	// SignalSupersede carries a SupersedeSignal: a new definition during the rollout (seed 000).
	SignalSupersede = "supersede"
	// SignalRollback carries a RollbackSignal: roll to a stored definition instead (an
	// operator's `temporal workflow signal --name rollback --input '{"definition_id": "v1"}'`).
	// Without a definition id it undoes this rollout, as SignalCancel does.
	SignalRollback = "rollback"
	// QueryProgress returns a RolloutProgress.
	QueryProgress = "progress"
)

// Defaults of RolloutInput.
const (
	// DefaultIndexDeadline is how long an index of a definition that has proven healthy may
	// take to run before it is given up (seed 000's flaky definition; hard-coded in BBS).
	DefaultIndexDeadline = 5 * time.Minute
	// DefaultContinueAsNewEvery is how many finished index steps a run holds before it
	// continues as new, to keep histories short even if the server never suggests it.
	DefaultContinueAsNewEvery = 500
)

// RolloutInput starts (or continues) the rollout of one LRP. The fields after Kind tune the
// walk; the fields after ContinueAsNewEvery are the state a continued run carries, zero on a
// fresh start.
type RolloutInput struct {
	RolloutID        string `json:"rollout_id"`
	ProcessGUID      string `json:"process_guid"`
	Domain           string `json:"domain,omitempty"`
	FromDefinitionID string `json:"from_definition_id"`
	ToDefinitionID   string `json:"to_definition_id"`
	Kind             string `json:"kind,omitempty"`

	// MaxInFlight is how many indices are replaced at once (default 1). Until the target
	// definition has run once, only one is, whatever this says (seed 000's failing
	// definition keeps every old instance).
	MaxInFlight   int           `json:"max_in_flight,omitempty"`
	IndexDeadline time.Duration `json:"index_deadline,omitempty"`
	// ContinueAsNewEvery bounds the index steps of one run (default DefaultContinueAsNewEvery).
	ContinueAsNewEvery int `json:"continue_as_new_every,omitempty"`

	// NextIndex is the next index the forward walk starts.
	NextIndex int32 `json:"next_index,omitempty"`
	// Updated are the indices whose instance runs ToDefinitionID.
	Updated []int32 `json:"updated,omitempty"`
	// Replaced are the indices whose from instance is retired (by this target or a superseded
	// one): what a cancel walks back.
	Replaced []int32 `json:"replaced,omitempty"`
	// GivenUp are the indices left on the old definition after the deadline.
	GivenUp []int32 `json:"given_up,omitempty"`
	// Healthy says an instance of ToDefinitionID has run, so the deadline applies.
	Healthy   bool `json:"healthy,omitempty"`
	Canceling bool `json:"canceling,omitempty"`
	Paused    bool `json:"paused,omitempty"`
	// Superseded are the targets a supersede replaced, pruned when the rollout ends.
	Superseded []string `json:"superseded,omitempty"`
	// PendingRollback is a definition a rollback signal asked for, not yet recorded.
	PendingRollback string `json:"pending_rollback,omitempty"`
}

// RollbackSignal is the payload of SignalRollback.
type RollbackSignal struct {
	DefinitionID string `json:"definition_id"`
}

// SupersedeSignal is the payload of SignalSupersede: the new rollout row and its target.
type SupersedeSignal struct {
	RolloutID      string `json:"rollout_id"`
	ToDefinitionID string `json:"to_definition_id"`
	Kind           string `json:"kind,omitempty"`
	// FromDefinitionID is the new row's from definition (what a cancel returns to); it
	// differs from the run's only when the signal starts a new rollout after the last one
	// finished. Empty (older signals) keeps the run's.
	FromDefinitionID string `json:"from_definition_id,omitempty"`
}

// RolloutOutput is how the rollout ended.
type RolloutOutput struct {
	RolloutID string  `json:"rollout_id"`
	State     string  `json:"state"`
	Reason    string  `json:"reason,omitempty"`
	Updated   []int32 `json:"updated,omitempty"`
	GivenUp   []int32 `json:"given_up,omitempty"`
}

// RolloutProgress is the answer to QueryProgress.
type RolloutProgress struct {
	RolloutID        string   `json:"rollout_id"`
	ProcessGUID      string   `json:"process_guid"`
	State            string   `json:"state"`
	CurrentIndex     int32    `json:"current_index"`
	Instances        int32    `json:"instances"`
	Updated          []int32  `json:"updated"`
	GivenUp          []int32  `json:"given_up"`
	InFlight         []int32  `json:"in_flight"`
	FromDefinitionID string   `json:"from_definition_id"`
	ToDefinitionID   string   `json:"to_definition_id"`
	Superseded       []string `json:"superseded,omitempty"`
}

// RolloutWorkflowID is the id of an LRP's rollout workflow: one per LRP, so that starting it
// twice (the API and the converger racing) finds the running one.
func RolloutWorkflowID(guid string) string { return "rollout:" + guid }

var acts *activities.Rollouts // names the activities, as Temporal resolves them by name

// RolloutWorkflow walks an LRP's instances from one definition to another with zero
// downtime: at each index the new instance must be RUNNING before the old one is retired
// (seed 000). It is steered by signals (cancel, pause, resume, supersede), answers the
// progress query, and continues as new to keep its history short.
//
// Changes to this function must keep recorded histories replaying (rollout_test.go): guard
// them with workflow.GetVersion. v1 has no versioned branches yet.
func RolloutWorkflow(ctx workflow.Context, in RolloutInput) (RolloutOutput, error) {
	r := newRollout(ctx, in)
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (RolloutProgress, error) {
		return r.progress(), nil
	}); err != nil {
		return RolloutOutput{}, err
	}
	load, err := r.load()
	if err != nil {
		return r.fail(err)
	}
	if !load.Exists {
		return r.finish(model.RolloutFailed, "the LRP was removed")
	}
	if workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		// A fresh start may come late (the converger restarting a rollout whose workflow
		// ended): the row, not the input, says whether anything is left to do.
		switch load.Rollout.State {
		case model.RolloutActive:
		case model.RolloutPaused:
			r.st.Paused = true
		case model.RolloutCanceling:
			r.st.Canceling = true
		default:
			return RolloutOutput{RolloutID: r.st.RolloutID, State: load.Rollout.State, Reason: load.Rollout.Reason}, nil
		}
		if load.Rollout.RunID != "" || load.Rollout.CurrentIndex > 0 || load.Rollout.UpdatedInstances > 0 {
			// An earlier run walked this rollout and its state is lost (terminated, or its
			// history reset): which indices it replaced is unknown, so a cancel walks every
			// index back. For an index still on the from definition that step costs only a
			// look, and it also retires a leftover instance of the target there.
			r.st.Replaced = nil
			for i := range load.Instances {
				r.st.Replaced = append(r.st.Replaced, i)
			}
		}
	}
	if r.st.Canceling {
		r.needBegin = true // BeginCancel is idempotent: a continued run repeats it safely.
	}
	for {
		if r.st.PendingRollback != "" {
			r.startRollback()
		}
		if r.needBegin {
			err := r.local(r.ctx, activities.RolloutIDInput{RolloutID: r.st.RolloutID}, acts.BeginCancel, nil)
			if hasType(err, model.ErrNoUpdateInProgress) {
				// The row ended meanwhile, most likely superseded with the signal on its way:
				// walking back is still right until that signal switches the walk.
				workflow.GetLogger(r.ctx).Warn("cancel of a rollout no longer in progress", "rollout_id", r.st.RolloutID)
			} else if err != nil {
				return r.failOrGone(err)
			}
			r.needBegin = false
		}
		r.publish()
		if err := r.recordProgress(); err != nil {
			return r.failOrGone(err)
		}
		end, err := r.walk()
		if err != nil {
			return r.failOrGone(err)
		}
		switch end {
		case walkGone:
			return r.failOrGone(r.goneErr)
		case walkSwitched:
			continue
		case walkContinueAsNew:
			r.drainSignals(false)
			return RolloutOutput{}, workflow.NewContinueAsNewError(ctx, RolloutWorkflow, r.st)
		}
		// walkDone. A signal that came with the last step changes what "done" means.
		if r.drainSignals(false) {
			continue
		}
		// Version 1: the walk may have ended on a count re-read after the last progress
		// write (a scale-down mid-walk); record where it really ended.
		if workflow.GetVersion(ctx, "final-progress", workflow.DefaultVersion, 1) == 1 {
			if err := r.recordProgress(); err != nil {
				return RolloutOutput{}, err
			}
		}
		state, keep, prune := model.RolloutCompleted, r.st.ToDefinitionID, r.st.FromDefinitionID
		if r.st.Canceling {
			state, keep, prune = model.RolloutCanceled, r.st.FromDefinitionID, r.st.ToDefinitionID
		}
		r.prune(keep, append([]string{prune}, r.st.Superseded...))
		out, err := r.finish(state, "")
		// A supersede (or rollback) that raced the finish is a new rollout: walk it in this run.
		if err == nil && (r.drainSignals(true) || r.st.PendingRollback != "") {
			continue
		}
		return out, err
	}
}

// rollout is the state of one run.
type rollout struct {
	ctx workflow.Context
	st  RolloutInput

	instances int32
	inFlight  []*step // in start order, for deterministic iteration
	done      workflow.Channel
	steps     int // index steps finished in this run

	interrupted bool  // a cancel or supersede: the walk ends once in-flight steps are retired
	gone        bool  // something was not found: the LRP, or a definition, was removed
	goneErr     error // what was not found
	err         error
	needBegin   bool
	// resumeAt is the forward index a refused rollback signal resumes at (-1: none).
	resumeAt int32

	// temporalCancel receives once when the workflow is cancelled through Temporal.
	temporalCancel workflow.Channel

	cancelCh, pauseCh, resumeCh, supersedeCh, rollbackCh workflow.ReceiveChannel

	searchable bool
	published  [2]string // state and target last upserted
}

func newRollout(ctx workflow.Context, in RolloutInput) *rollout {
	if in.MaxInFlight <= 0 {
		in.MaxInFlight = 1
	}
	if in.IndexDeadline <= 0 {
		in.IndexDeadline = DefaultIndexDeadline
	}
	if in.ContinueAsNewEvery <= 0 {
		in.ContinueAsNewEvery = DefaultContinueAsNewEvery
	}
	if in.Kind == "" {
		in.Kind = model.RolloutKindUpdate
	}
	r := &rollout{
		st:          in,
		cancelCh:    workflow.GetSignalChannel(ctx, SignalCancel),
		pauseCh:     workflow.GetSignalChannel(ctx, SignalPause),
		resumeCh:    workflow.GetSignalChannel(ctx, SignalResume),
		supersedeCh: workflow.GetSignalChannel(ctx, SignalSupersede),
		rollbackCh:  workflow.GetSignalChannel(ctx, SignalRollback),
		searchable:  workflow.GetTypedSearchAttributes(ctx).ContainsKey(SearchAttrProcessGUID),
	}
	// Every step runs in a context that a Temporal cancellation does not cancel: such a
	// cancellation is handled as the cancel signal, whose walk back must still run
	// (STYLE.md: cleanup in a disconnected context).
	r.ctx, _ = workflow.NewDisconnectedContext(ctx)
	r.temporalCancel = workflow.NewBufferedChannel(r.ctx, 1)
	r.cancelWatch(ctx)
	r.done = workflow.NewChannel(r.ctx)
	return r
}

// cancelWatch turns a Temporal cancellation (`temporal workflow cancel`) into the cancel
// signal, so that cancelling the workflow rolls back instead of stranding a half-walked LRP.
func (r *rollout) cancelWatch(ctx workflow.Context) {
	workflow.Go(r.ctx, func(gctx workflow.Context) {
		ctx.Done().Receive(gctx, nil)
		r.temporalCancel.Send(gctx, struct{}{})
	})
}

// state is the rollout state the API shows while the walk is under way.
func (r *rollout) state() string {
	switch {
	case r.st.Canceling:
		return model.RolloutCanceling
	case r.st.Paused:
		return model.RolloutPaused
	}
	return model.RolloutActive
}

func (r *rollout) currentIndex() int32 {
	if len(r.inFlight) > 0 {
		return slices.MinFunc(r.inFlight, func(a, b *step) int { return int(a.index - b.index) }).index
	}
	if r.st.Canceling {
		if len(r.st.Replaced) > 0 {
			return slices.Max(r.st.Replaced)
		}
		return 0
	}
	return min(r.st.NextIndex, r.instances)
}

func (r *rollout) progress() RolloutProgress {
	p := RolloutProgress{
		RolloutID: r.st.RolloutID, ProcessGUID: r.st.ProcessGUID, State: r.state(),
		CurrentIndex: r.currentIndex(), Instances: r.instances,
		Updated: append([]int32{}, r.st.Updated...), GivenUp: append([]int32{}, r.st.GivenUp...),
		InFlight:         []int32{},
		FromDefinitionID: r.st.FromDefinitionID, ToDefinitionID: r.st.ToDefinitionID,
		Superseded: append([]string(nil), r.st.Superseded...),
	}
	for _, s := range r.inFlight {
		p.InFlight = append(p.InFlight, s.index)
	}
	return p
}

// recordProgress stores the walk's position in the rollout row.
func (r *rollout) recordProgress() error {
	p := model.RolloutProgress{
		State: r.state(), CurrentIndex: r.currentIndex(), Instances: r.instances,
		UpdatedInstances: r.updatedCount(), GivenUpIndices: append([]int32{}, r.st.GivenUp...),
		RunID: workflow.GetInfo(r.ctx).WorkflowExecution.RunID,
	}
	return r.local(r.ctx, activities.RecordProgressInput{RolloutID: r.st.RolloutID, Progress: p}, acts.RecordProgress, nil)
}

// updatedCount counts the updated indices the LRP still has after any scale-down.
func (r *rollout) updatedCount() int32 {
	var n int32
	for _, i := range r.st.Updated {
		if i < r.instances {
			n++
		}
	}
	return n
}

// publish shows the walk in the Web UI: the current details always, the search attributes
// when they changed (each upsert is a history event).
func (r *rollout) publish() {
	p := r.progress()
	verb := "updating to"
	if r.st.Canceling {
		verb = "rolling back to"
	}
	target := r.st.ToDefinitionID
	if r.st.Canceling {
		target = r.st.FromDefinitionID
	}
	workflow.SetCurrentDetails(r.ctx, fmt.Sprintf("**%s** %s `%s`: index %d/%d, %d updated, given up %v, in flight %v",
		p.State, verb, target, p.CurrentIndex, p.Instances, r.updatedCount(), p.GivenUp, p.InFlight))
	if !r.searchable || r.published == [2]string{p.State, r.st.ToDefinitionID} {
		return
	}
	r.published = [2]string{p.State, r.st.ToDefinitionID}
	r.upsert(p.State)
}

func (r *rollout) upsert(state string) {
	if !r.searchable {
		return
	}
	err := workflow.UpsertTypedSearchAttributes(r.ctx,
		SearchAttrProcessGUID.ValueSet(r.st.ProcessGUID),
		SearchAttrDomain.ValueSet(r.st.Domain),
		SearchAttrFromDefinition.ValueSet(r.st.FromDefinitionID),
		SearchAttrToDefinition.ValueSet(r.st.ToDefinitionID),
		SearchAttrRolloutState.ValueSet(state))
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("upsert search attributes", "error", err)
	}
}

// prune retires the definitions the LRP no longer runs (seed 000). One that still has
// instances stopping stays, and the converger prunes it later, so failures only log.
func (r *rollout) prune(keep string, defs []string) {
	seen := map[string]bool{keep: true}
	for _, d := range defs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		var out activities.PruneDefinitionOutput
		if err := r.local(r.ctx, activities.PruneDefinitionInput{ProcessGUID: r.st.ProcessGUID, DefinitionID: d}, acts.PruneDefinition, &out); err != nil {
			workflow.GetLogger(r.ctx).Warn("prune definition", "definition_id", d, "error", err)
		}
	}
}

// finish ends the rollout row in a final state and returns the workflow's output.
func (r *rollout) finish(state, reason string) (RolloutOutput, error) {
	err := r.local(r.ctx, activities.FinishRolloutInput{RolloutID: r.st.RolloutID, State: state, Reason: reason}, acts.FinishRollout, nil)
	if err != nil && !isNotFound(err) {
		return RolloutOutput{}, err
	}
	workflow.SetCurrentDetails(r.ctx, fmt.Sprintf("**%s** %s → `%s` %s", state, r.st.FromDefinitionID, r.st.ToDefinitionID, reason))
	r.upsert(state)
	r.published = [2]string{state, r.st.ToDefinitionID}
	return RolloutOutput{RolloutID: r.st.RolloutID, State: state, Reason: reason,
		Updated: r.st.Updated, GivenUp: r.st.GivenUp}, nil
}

// failOrGone ends the rollout after an activity failed for good: as failed with "the LRP was
// removed" when that is why, else with the error, which the workflow also returns so that
// Temporal shows it. A not-found may also mean a definition was pruned under the walk, so
// the LRP's existence is checked.
func (r *rollout) failOrGone(err error) (RolloutOutput, error) {
	if isNotFound(err) {
		if load, lerr := r.load(); lerr == nil && !load.Exists {
			return r.finish(model.RolloutFailed, "the LRP was removed")
		}
	}
	if err == nil {
		err = temporal.NewNonRetryableApplicationError("the walk stopped without a cause", string(model.ErrUnknown), nil)
	}
	return r.fail(err)
}

func (r *rollout) fail(err error) (RolloutOutput, error) {
	if _, ferr := r.finish(model.RolloutFailed, err.Error()); ferr != nil {
		workflow.GetLogger(r.ctx).Error("finish failed rollout", "error", ferr)
	}
	return RolloutOutput{}, err
}
