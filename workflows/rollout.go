package workflows

import (
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
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
	// SignalAbort carries an AbortSignal: stop and revert to the definition the rollout
	// started from; it ends reverted, with an operator failure (ROLLOUTS-NEXT.md section 3).
	SignalAbort = "abort"
	// SignalPromote carries a PromoteSignal: leave the canary step the walk holds at (or, full,
	// every remaining one).
	SignalPromote = "promote"
	// SignalSetPace carries a SetPaceSignal: replace that many indices at once from now on
	// (ROLLOUTS-NEXT.md section 3).
	SignalSetPace = "set_pace"
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

// RolloutInput starts the rollout of one LRP, or continues it in a new run. The fields after
// Kind tune the walk. The JSON of a start is the same as it ever was, and so is that of a
// continued run: RolloutCarried, embedded, puts its fields at the top level.
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
	// Runs hands the forward walk, when MaxInFlight is 1, to index runs: one activity walks
	// index after index (WalkRun) instead of an activity and a workflow task per index
	// (rollout_run.go). Without it (and in every run started before it existed) the walk
	// goes step by step.
	Runs bool `json:"runs,omitempty"`
	// WalkByRuns hands every walk to index runs — forward and back, at any pace, through
	// pauses, canary steps and a revert — instead of runs for the plain forward walk and
	// steps for the rest (rollout_run.go). Runs started before it existed walk as they did.
	WalkByRuns bool `json:"walk_by_runs,omitempty"`

	// Canary are the rollout's canary steps by instances (strategy.canary.steps): the forward
	// walk holds once each step's count of indices runs the new definition — for its pause,
	// or until a promote. Nil: none.
	Canary []CanaryStep `json:"canary,omitempty"`
	// ProgressDeadline bounds the whole rollout (strategy.progress_deadline_ms, 0: none):
	// past it, the rollout has failed (reason progress_deadline).
	ProgressDeadline time.Duration `json:"progress_deadline,omitempty"`
	// MinReady is how long a new instance must be RUNNING and ready before the old one at
	// its index is retired (strategy.min_ready_ms; not for a walk back).
	MinReady time.Duration `json:"min_ready,omitempty"`
	// Failure is the rollout's failure policy (its resolved strategy, ROLLOUTS-NEXT.md
	// section 4). Without one (runs started before strategies) the walk is the seeds': no
	// deadline until the target has run, and an index given up is walked past.
	Failure *FailurePolicy `json:"failure,omitempty"`

	// Analysis is the resolved strategy's analysis, for steps with analysis and a background
	// analysis (nil: neither).
	Analysis *model.AnalysisPolicy `json:"analysis,omitempty"`

	// Group names the rollout group the rollout is a member of, for its search attribute
	// ("": none). The walk does not read it: a member walks as any rollout does.
	Group string `json:"group,omitempty"`

	// RolloutCarried is zero on a fresh start; a run that continues as new fills it in.
	RolloutCarried
}

// CanaryStep is one canary step: hold once Instances indices run the new definition, for
// Pause, or until a promote when Manual.
type CanaryStep struct {
	Instances int32 `json:"instances"`
	// Weight, when set, is the new definition's share of the LRP's requests in percent while
	// the walk holds at the step (rollout_traffic.go); nil routes by instances.
	Weight *int32 `json:"weight,omitempty"`
	// Analysis judges the canary against the baseline during the step (rollout_analysis.go).
	Analysis bool          `json:"analysis,omitempty"`
	Pause    time.Duration `json:"pause,omitempty"`
	Manual   bool          `json:"manual,omitempty"`
}

// PromoteSignal is the payload of SignalPromote.
type PromoteSignal struct {
	// Full skips every remaining step.
	Full bool `json:"full,omitempty"`
}

// FailurePolicy is what a rollout counts as an app failure and what it then does.
type FailurePolicy struct {
	// OnFailure is model.OnFailureRevert, OnFailurePause or OnFailureContinue.
	OnFailure string `json:"on_failure"`
	// MaxCrashes gives a new instance up at its MaxCrashes-th crash (0: never).
	MaxCrashes int32 `json:"max_crashes,omitempty"`
	// MaxFailedIndices failed indices fail the rollout (0 means 1).
	MaxFailedIndices int32 `json:"max_failed_indices,omitempty"`
}

// RolloutCarried is what a run of RolloutWorkflow hands the next one when it continues as
// new: where the walk stands, and its phase. Its JSON is what every version of the workflow
// has written and read, so that a run continued by an older worker is read right by a newer
// one, and the other way round while both run during a deploy.
type RolloutCarried struct {
	RolloutWalk
	// Canceling and Paused are the phase (see phase): phaseOf(Canceling, Paused).
	Canceling bool `json:"canceling,omitempty"`
	Paused    bool `json:"paused,omitempty"`
}

// RolloutWalk is where a rollout's walk stands.
type RolloutWalk struct {
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
	Healthy bool `json:"healthy,omitempty"`
	// Superseded are the targets a supersede replaced, pruned when the rollout ends.
	Superseded []string `json:"superseded,omitempty"`
	// PendingRollback is a definition a rollback signal asked for, not yet recorded.
	PendingRollback string `json:"pending_rollback,omitempty"`
	// Failed are the indices given up as app failures (RolloutInput.Failure); Failure is the
	// first of them (or an operator's abort), RevertFailure the first failure of the walk
	// back; Reverting says the walk back is a revert, which ends reverted, not canceled.
	Failed        []int32               `json:"failed,omitempty"`
	Failure       *model.RolloutFailure `json:"failure,omitempty"`
	RevertFailure *model.RolloutFailure `json:"revert_failure,omitempty"`
	Reverting     bool                  `json:"reverting,omitempty"`
	// Step is the canary step the walk is at (len(Canary) once past the last); StepHold how
	// it holds there: "" (walking to it), "pause" (until StepUntil, Unix nanoseconds of
	// workflow time) or "manual" (until a promote).
	Step      int    `json:"step,omitempty"`
	StepHold  string `json:"step_hold,omitempty"`
	StepUntil int64  `json:"step_until,omitempty"`
	// ProgressDeadlineAt is when the rollout's progress deadline passes (Unix nanoseconds of
	// workflow time), fixed by its first run; 0 without one.
	ProgressDeadlineAt int64 `json:"progress_deadline_at,omitempty"`
	// Traffic is the split the rollout set on its LRP (nil: by instances).
	Traffic *WalkTraffic `json:"traffic,omitempty"`
	// Analysis is where a step's analysis stands; Background the background analysis's.
	Analysis   *WalkAnalysis `json:"analysis,omitempty"`
	Background *WalkAnalysis `json:"background,omitempty"`
}

// WalkAnalysis is an analysis under way: at which step (-1: the background one), how many
// windows it judged, when the current window ends and when the step's analysis does (Unix
// nanoseconds of workflow time), and whether the step's is done.
type WalkAnalysis struct {
	Step   int   `json:"step"`
	Window int   `json:"window"`
	Next   int64 `json:"next"`
	Until  int64 `json:"until,omitempty"`
	Done   bool  `json:"done,omitempty"`
}

// WalkTraffic is the weight a rollout gave its new definition: at which canary step, under
// which generation, and whether every live router acknowledged it.
type WalkTraffic struct {
	Step       int   `json:"step"`
	Weight     int32 `json:"weight"`
	Generation int64 `json:"generation"`
	Acked      bool  `json:"acked,omitempty"`
}

// RollbackSignal is the payload of SignalRollback.
type RollbackSignal struct {
	DefinitionID string `json:"definition_id"`
}

// SetPaceSignal is the payload of SignalSetPace.
type SetPaceSignal struct {
	MaxInFlight int `json:"max_in_flight"`
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
	// MaxInFlight and IndexDeadline are the new rollout's pace (its resolved strategy); zero
	// (older signals, a rollback an operator signalled) keeps the run's.
	MaxInFlight   int           `json:"max_in_flight,omitempty"`
	IndexDeadline time.Duration `json:"index_deadline,omitempty"`
	// Failure is the new rollout's failure policy; nil keeps the run's. MinReady,
	// ProgressDeadline and Canary are its min_ready, progress deadline and canary steps (zero:
	// none).
	Failure          *FailurePolicy `json:"failure,omitempty"`
	MinReady         time.Duration  `json:"min_ready,omitempty"`
	ProgressDeadline time.Duration  `json:"progress_deadline,omitempty"`
	Canary           []CanaryStep   `json:"canary,omitempty"`
	// Analysis is the new rollout's analysis (nil: none).
	Analysis *model.AnalysisPolicy `json:"analysis,omitempty"`
}

// AbortSignal is the payload of SignalAbort.
type AbortSignal struct {
	Reason string `json:"reason,omitempty"`
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
	RolloutID    string  `json:"rollout_id"`
	ProcessGUID  string  `json:"process_guid"`
	State        string  `json:"state"`
	CurrentIndex int32   `json:"current_index"`
	Instances    int32   `json:"instances"`
	Updated      []int32 `json:"updated"`
	GivenUp      []int32 `json:"given_up"`
	// InFlight are the indices being replaced as the workflow knows them: for an index run,
	// the index it started from (its heartbeat details list every index it has in flight).
	InFlight         []int32  `json:"in_flight"`
	FromDefinitionID string   `json:"from_definition_id"`
	ToDefinitionID   string   `json:"to_definition_id"`
	Superseded       []string `json:"superseded,omitempty"`
	// MaxInFlight is the pace the walk goes at now (set_pace changes it).
	MaxInFlight int `json:"max_in_flight"`
	// Phase and Step are where a rollout with canary steps stands (empty without steps).
	Phase string `json:"phase,omitempty"`
	Step  int    `json:"step,omitempty"`
}

var acts *activities.Rollouts // names the activities, as Temporal resolves them by name

// RolloutWorkflowType is the workflow type every rollout starts as: RolloutWorkflow, whose
// runs of this type take every change made to it so far without asking workflow.GetVersion
// (each first GetVersion of a run costs a marker and a search-attribute upsert, a visibility
// write of the dev server's one history shard), show their state in the Web UI only once it
// differs from what their start set, and end in one local activity (CompleteRollout). Runs
// recorded as the type "RolloutWorkflow", before it, replay and finish as they were recorded
// (LegacyRolloutWorkflowType); a worker that does not know this type leaves its tasks to one that
// does, so workers of both versions may run side by side during a deploy.
const RolloutWorkflowType = "Rollout"

// LegacyRolloutWorkflowType is the type rollouts started as before RolloutWorkflowType (the
// Go function's name), under which the worker keeps RolloutWorkflow registered too. Replay
// only (noted 2026-11-27): it goes, with its GetVersion calls (r.versioned), once no run of
// it is open — the same check as the step path's (activities.Rollouts.DesireInstance).
const LegacyRolloutWorkflowType = "RolloutWorkflow"

// RolloutWorkflow walks an LRP's instances from one definition to another with zero
// downtime: at each index the new instance must be RUNNING before the old one is retired
// (seed 000). It is steered by signals (cancel, pause, resume, supersede, rollback), answers
// the progress query, and continues as new to keep its history short.
//
// Changes to it must keep the recorded histories replaying (rollout_replay_test.go): a
// change to the commands it issues goes behind r.versioned (workflow.GetVersion in a run of
// the legacy type). Versioned so far: "final-progress", "rollback-without-definition",
// "cancel-after-the-end" and "cancel-walks-every-index-off". The RolloutPhase upserts go
// behind the start's search attributes instead, and those of the phase alone behind
// "phase-only-upserts" in runs of both types (SearchAttrRolloutPhase). The worker registers
// it under RolloutWorkflowType and under its legacy name.
func RolloutWorkflow(ctx workflow.Context, in RolloutInput) (RolloutOutput, error) {
	r := newRollout(ctx, in)
	if err := workflow.SetQueryHandler(ctx, QueryProgress, r.queryProgress); err != nil {
		return RolloutOutput{}, err
	}
	if out, over, err := r.begin(); over {
		return out, err
	}
	for {
		// First what the last walk's end (or the run before) asks for: a rollback recorded
		// as a new rollout, a cancel recorded on the row.
		r.recordRollback()
		if out, over, err := r.recordCancel(); err != nil {
			return r.failOrGone(err)
		} else if over {
			return out, nil
		}
		if err := r.report(); err != nil {
			return r.failOrGone(err)
		}
		switch r.walk() {
		case stopSuperseded, stopRollback, stopCanceled:
			continue // the next walk goes to the new target, or back
		case stopContinueAsNew:
			return r.continueAsNew(ctx)
		case stopNotFound, stopFailed:
			return r.failOrGone(r.stopErr)
		}
		// Every index is done, unless a signal that came with the last step says otherwise.
		if r.takeSignals() {
			continue
		}
		out, err := r.complete()
		// A supersede (or rollback) that raced the finish is a new rollout: walk it in this run.
		if err == nil && r.takeNewRollout() {
			continue
		}
		return out, err
	}
}

// rollout is the state of one run: the target, the walk so far, the phase, and why the
// current walk ends.
type rollout struct {
	ctx workflow.Context
	// in is the target (which a supersede replaces) and the tuning; the state it carried
	// from an earlier run is moved into walked and phase.
	in     RolloutInput
	walked RolloutWalk
	phase  phase
	// stop is why the current walk ends, stopNone while it goes on; stopErr is the error of
	// stopNotFound and stopFailed.
	stop    stopCause
	stopErr error

	instances int32
	// counted says instances is fresh for an index run: read by a load since the last run
	// started, or reported by the run that just ended. A run reads the count itself at every
	// index, so it needs no load of its own before it then (a step loads before each index).
	counted bool
	// ranToEnd says the last index run walked to the LRP's last index and wrote its progress
	// there: the walk's end records it again, so the step that ended it need not.
	ranToEnd bool
	inFlight []*step // in start order, for deterministic iteration
	done     workflow.Channel
	steps    int // index steps finished in this run
	// resumeAt is the forward index a refused rollback signal resumes at (-1: none). It is
	// 0 in a run that was handed the rollback by the run before: refused, it restarts the
	// forward walk at index 0, which only looks again at the indices already done.
	resumeAt int32

	// temporalCancel receives once when the workflow is cancelled through Temporal.
	temporalCancel workflow.Channel

	// stepTimer fires at the end of a timed canary step's pause (nil when none is set).
	stepTimer workflow.Future
	// trafficWait ends when the routers acknowledged a step's weight (nil when no wait runs).
	trafficWait workflow.Future
	// analysisTimer and backgroundTimer end the current analysis windows; analysisDue and
	// backgroundDue say a window ended, to be judged by the main loop.
	analysisTimer, backgroundTimer workflow.Future
	analysisDue, backgroundDue     bool
	// progressTimer fires at the progress deadline (nil until the walk sets it, and after it
	// fired or the rollout no longer walks forward).
	progressTimer workflow.Future

	cancelCh, pauseCh, resumeCh, supersedeCh, rollbackCh, setPaceCh, abortCh, promoteCh workflow.ReceiveChannel

	searchable bool
	shown      [2]string // state and target of the last search attribute upsert
	// phased says the run shows its phase as RolloutPhase (its start carried it, see
	// SearchAttrRolloutPhase); shownPhase is the phase it shows.
	phased     bool
	shownPhase string
	// current says the run is of RolloutWorkflowType, not of the legacy type.
	current bool
	// engineAsked says oneEngine has asked GetVersion in this run.
	engineAsked bool
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
	carried := in.RolloutCarried
	in.RolloutCarried = RolloutCarried{}
	r := &rollout{
		in:          in,
		walked:      carried.RolloutWalk,
		phase:       phaseOf(carried.Canceling, carried.Paused),
		cancelCh:    workflow.GetSignalChannel(ctx, SignalCancel),
		pauseCh:     workflow.GetSignalChannel(ctx, SignalPause),
		resumeCh:    workflow.GetSignalChannel(ctx, SignalResume),
		supersedeCh: workflow.GetSignalChannel(ctx, SignalSupersede),
		rollbackCh:  workflow.GetSignalChannel(ctx, SignalRollback),
		setPaceCh:   workflow.GetSignalChannel(ctx, SignalSetPace),
		abortCh:     workflow.GetSignalChannel(ctx, SignalAbort),
		promoteCh:   workflow.GetSignalChannel(ctx, SignalPromote),
		searchable:  workflow.GetTypedSearchAttributes(ctx).ContainsKey(SearchAttrProcessGUID),
		phased:      workflow.GetTypedSearchAttributes(ctx).ContainsKey(SearchAttrRolloutPhase),
		current:     workflow.GetInfo(ctx).WorkflowType.Name == RolloutWorkflowType,
	}
	if r.current {
		// What the start (or the run before) set is shown already: no upsert repeats it.
		sa := workflow.GetTypedSearchAttributes(ctx)
		state, _ := sa.GetKeyword(SearchAttrRolloutState)
		target, _ := sa.GetKeyword(SearchAttrToDefinition)
		r.shown = [2]string{state, target}
		r.shownPhase, _ = sa.GetKeyword(SearchAttrRolloutPhase)
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

// begin reads the row and the LRP before the first walk of a run. over says the workflow
// ends at once, with out and err: the LRP is gone, or a fresh start came late (the
// converger restarting a rollout whose workflow ended) and the row, not the input, says
// nothing is left to do.
func (r *rollout) begin() (out RolloutOutput, over bool, err error) {
	load, err := r.load()
	if err != nil {
		out, err = r.fail(err)
		return out, true, err
	}
	if !load.Exists {
		out, err = r.finish(model.RolloutFailed, "the LRP was removed")
		return out, true, err
	}
	if workflow.GetInfo(r.ctx).ContinuedExecutionRunID == "" {
		switch load.Rollout.State {
		case model.RolloutActive:
		case model.RolloutPaused:
			r.phase = phaseOf(r.phase.back(), true)
		case model.RolloutCanceling:
			r.phase = phaseOf(true, r.phase.held())
			// A walk back the row says a failure or an abort began is a revert.
			if f := load.Rollout.Failure; f != nil {
				r.walked.Reverting, r.walked.Failure = true, f
			}
		default:
			return RolloutOutput{RolloutID: r.in.RolloutID, State: load.Rollout.State, Reason: load.Rollout.Reason}, true, nil
		}
		if load.Rollout.RunID != "" || load.Rollout.CurrentIndex > 0 || load.Rollout.UpdatedInstances > 0 {
			// An earlier run walked this rollout and its state is lost (terminated, or its
			// history reset): which indices it replaced is unknown, so a cancel walks every
			// index back. For an index still on the from definition that step costs only a
			// look, and it also retires a leftover instance of the target there.
			r.walked.Replaced = nil
			for i := range load.Instances {
				r.walked.Replaced = append(r.walked.Replaced, i)
			}
		}
	}
	if r.phase.back() {
		// The cancel is recorded again: the run before may have done so, but BeginCancel is
		// idempotent.
		r.stop = stopCanceled
	}
	return RolloutOutput{}, false, nil
}

// recordRollback records the rollback a signal asked for as a new rollout and switches the
// walk to it, as a supersede. A definition that cannot be rolled back to (never stored, or
// pruned) is logged and the walk goes on as it was.
func (r *rollout) recordRollback() {
	if r.walked.PendingRollback == "" {
		return
	}
	in := activities.StartRollbackInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: r.walked.PendingRollback}
	r.walked.PendingRollback = ""
	var out activities.StartRollbackOutput
	if err := r.local(r.ctx, in, acts.StartRollback, &out); err != nil {
		workflow.GetLogger(r.ctx).Warn("rollback refused", "definition_id", in.DefinitionID, "error", err)
		if r.resumeAt >= 0 && r.resumeAt < r.walked.NextIndex && !r.phase.back() {
			r.walked.NextIndex = r.resumeAt
		}
		return
	}
	r.onSupersede(SupersedeSignal{RolloutID: out.RolloutID, ToDefinitionID: out.ToDefinitionID, Kind: out.Kind,
		FromDefinitionID: out.FromDefinitionID})
}

// recordCancel marks the row canceling (BeginCancel) before the walk back of a cancel. over
// says that the rollout has ended instead, with out.
func (r *rollout) recordCancel() (out RolloutOutput, over bool, err error) {
	if r.stop != stopCanceled {
		return RolloutOutput{}, false, nil
	}
	err = r.local(r.ctx, activities.RolloutIDInput{RolloutID: r.in.RolloutID}, acts.BeginCancel, nil)
	if hasType(err, model.ErrNoUpdateInProgress) {
		// Version 1: a row that ended completed, canceled or failed ends the rollout. This
		// run ended it itself: the cancel came while the workflow task that finished the walk
		// ran, the server refused that task's completion for it, and the retried task saw the
		// signal before the end — but the first attempt's local activities had run (the row
		// final, the definitions pruned). Walking back then left instances on the from
		// definition of a rollout recorded as completed (found by the soak).
		if r.versioned("cancel-after-the-end") {
			load, lerr := r.load()
			if lerr != nil {
				return RolloutOutput{}, false, lerr
			}
			switch s := load.Rollout.State; {
			case !load.Exists:
				out, err = r.finish(model.RolloutFailed, "the LRP was removed")
				return out, true, err
			case s == model.RolloutCompleted || s == model.RolloutCanceled || s == model.RolloutFailed:
				out, err = r.finish(s, load.Rollout.Reason)
				return out, true, err
			}
		}
		// The row ended meanwhile, superseded with the signal on its way: walking back is
		// still right until that signal switches the walk.
		workflow.GetLogger(r.ctx).Warn("cancel of a rollout no longer in progress", "rollout_id", r.in.RolloutID)
	} else if err != nil {
		return RolloutOutput{}, false, err
	}
	// Version 1: the walk back also covers the indices that hold an instance of another
	// definition without the walk having replaced them — created on the (healthy) target by
	// a scale-up during the walk, or interrupted there: left out, they stayed on the
	// abandoned target (found by the soak).
	if r.versioned("cancel-walks-every-index-off") {
		var off activities.IndicesOutput
		in := activities.IndicesOffInput{ProcessGUID: r.in.ProcessGUID, DefinitionID: r.in.FromDefinitionID}
		if err := r.local(r.ctx, in, acts.IndicesOff, &off); err != nil {
			return RolloutOutput{}, false, err
		}
		for _, i := range off.Indices {
			r.walked.Replaced = insert(r.walked.Replaced, i)
		}
	}
	r.stop = stopNone
	return RolloutOutput{}, false, nil
}

// versioned says whether the run takes the change changeID: a run of RolloutWorkflowType
// takes every one; a legacy run asks workflow.GetVersion, so that what its history recorded
// before the change replays.
func (r *rollout) versioned(changeID string) bool {
	return r.current || workflow.GetVersion(r.ctx, changeID, workflow.DefaultVersion, 1) == 1
}

// complete ends a rollout whose walk went through every index: completed, or canceled after
// a walk back. The definitions the LRP no longer runs are pruned.
func (r *rollout) complete() (RolloutOutput, error) {
	state, keep, prune := model.RolloutCompleted, r.in.ToDefinitionID, r.in.FromDefinitionID
	if r.phase.back() {
		state, keep, prune = model.RolloutCanceled, r.in.FromDefinitionID, r.in.ToDefinitionID
		if r.walked.Reverting {
			state = model.RolloutReverted
		}
	}
	defs := unusedDefinitions(keep, append([]string{prune}, r.walked.Superseded...))
	if r.current {
		// Where the walk ended (it may have ended on a count re-read after the last
		// progress write: a scale-down mid-walk), the end and the pruning: one transaction.
		in := activities.CompleteRolloutInput{RolloutID: r.in.RolloutID, Progress: r.progressRecord(), State: state, Prune: defs}
		if err := r.local(r.ctx, in, acts.CompleteRollout, nil); err != nil {
			return r.failOrGone(err)
		}
		return r.ended(state, ""), nil
	}
	// Version 1: the walk may have ended on a count re-read after the last progress
	// write (a scale-down mid-walk); record where it really ended.
	if r.versioned("final-progress") {
		if err := r.recordProgress(); err != nil {
			return RolloutOutput{}, err
		}
	}
	r.prune(defs)
	return r.finish(state, "")
}

// continueAsNew hands the walk to a new run, with the signals that came with the last step.
func (r *rollout) continueAsNew(ctx workflow.Context) (RolloutOutput, error) {
	r.takeSignals()
	next := r.in
	next.RolloutCarried = RolloutCarried{RolloutWalk: r.walked, Canceling: r.phase.back(), Paused: r.phase.held()}
	// The next run is of this run's type (named, not the function, which the worker's
	// registration aliases to RolloutWorkflowType): a legacy continuation is as recorded.
	typ := LegacyRolloutWorkflowType
	if r.current {
		typ = RolloutWorkflowType
	}
	return RolloutOutput{}, workflow.NewContinueAsNewError(ctx, typ, next)
}
