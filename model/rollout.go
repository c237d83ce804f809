package model

import "slices"

// Rollout kinds.
const (
	RolloutKindUpdate   = "update"
	RolloutKindRollback = "rollback"
	RolloutKindActivate = "activate"
)

// Rollout states. Active, paused and canceling rollouts are in progress
// (RolloutStatesInProgress); the rest are final.
const (
	RolloutActive     = "active"
	RolloutPaused     = "paused"
	RolloutCanceling  = "canceling"
	RolloutCompleted  = "completed"
	RolloutCanceled   = "canceled"
	RolloutSuperseded = "superseded"
	RolloutFailed     = "failed"
	// RolloutReverted: a failure (or an operator's abort) walked every index back to the
	// definition the rollout started from (Rollout.RevertedTo).
	RolloutReverted = "reverted"
)

// How a rollout's step at one index was decided (RolloutStepOutcomes), as operators count
// them. (A step a cancel or supersede interrupts is decided by neither.)
const (
	// StepUpdated: the step's definition runs at the index (the others there then retire).
	StepUpdated = "updated"
	// StepGivenUp: the index deadline passed first (GivenUpIndices).
	StepGivenUp = "given_up"
	// StepScaledAway: the LRP was scaled below the index.
	StepScaledAway = "scaled_away"
)

// Rollout phases (ROLLOUTS-NEXT.md section 2): where a rollout stands, in the contract's
// words. The state says whether it is in progress and how it ended; the phase says what it
// is doing. Supersede is ours: the contract is silent on a rollout a new definition replaced.
const (
	PhaseWalking = "walking"
	// PhaseCanary: walking to, or holding at, a canary step; PhaseAwaitingPromotion:
	// holding at a manual step until a promote.
	PhaseCanary            = "canary"
	PhaseAwaitingPromotion = "awaiting_promotion"
	// PhaseAnalyzing: at a canary step whose analysis window runs.
	PhaseAnalyzing  = "analyzing"
	PhasePaused     = "paused"
	PhaseReverting  = "reverting"
	PhaseCompleted  = "completed"
	PhaseCanceled   = "canceled"
	PhaseFailed     = "failed"
	PhaseSuperseded = "superseded"
	PhaseReverted   = "reverted"
)

// RolloutPhaseOf is the phase of a rollout in the given state: a cancel's walk back is a
// revert to the definition the rollout started from.
func RolloutPhaseOf(state string) string {
	switch state {
	case RolloutActive:
		return PhaseWalking
	case RolloutPaused:
		return PhasePaused
	case RolloutCanceling:
		return PhaseReverting
	case RolloutCompleted:
		return PhaseCompleted
	case RolloutCanceled:
		return PhaseCanceled
	case RolloutSuperseded:
		return PhaseSuperseded
	case RolloutReverted:
		return PhaseReverted
	}
	return PhaseFailed
}

// RolloutStepOutcomes are the ways a rollout's step can be decided.
func RolloutStepOutcomes() []string {
	return []string{StepUpdated, StepGivenUp, StepScaledAway}
}

// Rollout is one walk of an LRP's instances toward ToDefinitionID.
type Rollout struct {
	ID               string `json:"id"`
	ProcessGUID      string `json:"process_guid"`
	Kind             string `json:"kind"`
	FromDefinitionID string `json:"from_definition_id"`
	ToDefinitionID   string `json:"to_definition_id"`
	State            string `json:"state"`
	// Phase is where the rollout stands in the contract's words: RolloutPhaseOf(State), or,
	// walking with canary steps, canary or awaiting_promotion. Step is the canary step (0-based;
	// nil without steps), StepsTotal their number.
	Phase            string  `json:"phase"`
	Step             *int32  `json:"step"`
	StepsTotal       int     `json:"steps_total"`
	CurrentIndex     int32   `json:"current_index"`
	UpdatedInstances int32   `json:"updated_instances"`
	Instances        int32   `json:"instances"`
	GivenUpIndices   []int32 `json:"given_up_indices"`
	StartedAt        int64   `json:"started_at"`
	FinishedAt       int64   `json:"finished_at,omitempty"`
	WorkflowID       string  `json:"workflow_id"`
	RunID            string  `json:"run_id,omitempty"`
	Reason           string  `json:"reason,omitempty"`
	// Failure is why the rollout failed (set once, by its first failure); RevertFailure why
	// its revert failed in turn, which pauses it for a human (ROLLOUTS-NEXT.md section 4).
	Failure       *RolloutFailure `json:"failure,omitempty"`
	RevertFailure *RolloutFailure `json:"revert_failure,omitempty"`
	// RevertedTo is the definition a revert restored, set when the rollout ended reverted.
	RevertedTo string `json:"reverted_to,omitempty"`
	// Strategy is the rollout's strategy as resolved at its start (the update's over the
	// LRP's over the server's); nil for a rollout started before strategies existed.
	Strategy *RolloutStrategy `json:"strategy,omitempty"`
	// LastControl is the last pause or resume the API accepted for this rollout
	// (ControlPause, ControlResume; "" before any): what tells a resume repeated after one
	// that took effect (answered 200) from a resume of a rollout never paused (InvalidPhase).
	// The store's bookkeeping, not part of what the API reports.
	LastControl string `json:"-"`
	// Traffic is the split of the LRP's requests by definition, in percent, as every router
	// last acknowledged it while the rollout held a weighted step (nil: by instances), and
	// TrafficGeneration its generation (ROLLOUTS-NEXT.md sections 2 and 5).
	Traffic           map[string]int32 `json:"traffic,omitempty"`
	TrafficGeneration int64            `json:"traffic_generation,omitempty"`
	// Analysis are the verdicts of canary against baseline, in the order they were given.
	Analysis []AnalysisVerdict `json:"analysis"`
	// GroupID names the rollout group this rollout is a member of ("" for none).
	GroupID string `json:"group_id,omitempty"`
}

// RolloutStatesInProgress are the states of a rollout still under way: walking, paused
// mid-walk, or walking back. The store's queries and its one-rollout-per-LRP index list the
// same states.
func RolloutStatesInProgress() []string {
	return []string{RolloutActive, RolloutPaused, RolloutCanceling}
}

// InProgress reports whether the rollout is still walking (or paused mid-walk).
func (r *Rollout) InProgress() bool { return RolloutInProgress(r.State) }

// RolloutInProgress reports whether a rollout in the given state is still under way.
func RolloutInProgress(state string) bool {
	return slices.Contains(RolloutStatesInProgress(), state)
}

// RolloutWorkflowID is the id of the Temporal workflow that walks an LRP's rollouts: one per
// LRP, so that starting it twice (the API and the converger racing) finds the running one.
// The store records it on every rollout row; the workflows package starts and signals it.
func RolloutWorkflowID(processGUID string) string { return "rollout:" + processGUID }

// RolloutFilter narrows a list of rollouts.
type RolloutFilter struct {
	ProcessGUID string `json:"process_guid,omitempty"`
	// Active, when true, keeps only rollouts in progress.
	Active bool `json:"active,omitempty"`
}

// RolloutProgress is where a rollout's walk stands.
type RolloutProgress struct {
	State            string  `json:"state"`
	CurrentIndex     int32   `json:"current_index"`
	UpdatedInstances int32   `json:"updated_instances"`
	Instances        int32   `json:"instances"`
	GivenUpIndices   []int32 `json:"given_up_indices"`
	RunID            string  `json:"run_id,omitempty"`
	// Failure and RevertFailure, once set, are recorded (never cleared by a later record).
	Failure       *RolloutFailure `json:"failure,omitempty"`
	RevertFailure *RolloutFailure `json:"revert_failure,omitempty"`
	// Phase and Step are where a rollout with canary steps stands (PhaseCanary,
	// PhaseAwaitingPromotion, PhaseWalking after the last step); empty and nil without steps.
	Phase string `json:"phase,omitempty"`
	Step  *int32 `json:"step,omitempty"`
}

// Kinds of failure (RolloutFailure.Kind): app failures count against a strategy's failure
// policy; platform ones (a cell lost, no capacity) are retried, never reverted for; operator
// ones are an abort.
const (
	FailureApp      = "app"
	FailurePlatform = "platform"
	FailureOperator = "operator"
)

// Reasons of a failure (RolloutFailure.Reason).
const (
	// FailureCrashLoop: one new instance crashed max_crashes times.
	FailureCrashLoop = "crash_loop"
	// FailureIndexDeadline: a new instance was not RUNNING within index_deadline_ms.
	FailureIndexDeadline = "index_deadline"
	// FailureNotReady: a new instance was RUNNING but not ready within index_deadline_ms.
	FailureNotReady = "not_ready"
	// FailureProgressDeadline: the rollout was not complete within progress_deadline_ms.
	FailureProgressDeadline = "progress_deadline"
	// FailureAborted: an operator aborted the rollout.
	FailureAborted = "aborted"
	// FailureCapacity: a weighted step's capacity guard refused its weight (a platform
	// failure: the rollout pauses for a human, it never reverts for it).
	FailureCapacity = "capacity"
)

// RolloutFailure says why a rollout (or its revert) failed: which index and instance of which
// definition, what kind of failure, and what the cell said.
type RolloutFailure struct {
	Reason       string `json:"reason"`
	Index        *int32 `json:"index,omitempty"`
	InstanceGUID string `json:"instance_guid,omitempty"`
	DefinitionID string `json:"definition_id,omitempty"`
	Kind         string `json:"kind"`
	Detail       string `json:"detail,omitempty"`
}

// RolloutControl is one of the controls of a rollout under way (ROLLOUTS-NEXT.md section 3),
// as its workflow receives it.
type RolloutControl struct {
	// Kind is ControlPause, ControlResume, ControlSetPace or ControlAbort.
	Kind string
	// MaxInFlight is set_pace's new pace.
	MaxInFlight int32
	// Reason is why an operator aborts.
	Reason string
	// Full makes a promote skip every remaining canary step.
	Full bool
}

// The kinds of RolloutControl.
const (
	ControlPause   = "pause"
	ControlResume  = "resume"
	ControlSetPace = "set_pace"
	ControlAbort   = "abort"
	ControlPromote = "promote"
)
