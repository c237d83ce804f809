package model

// Rollout kinds.
const (
	RolloutKindUpdate   = "update"
	RolloutKindRollback = "rollback"
	RolloutKindActivate = "activate"
)

// Rollout states. Active, paused and canceling rollouts are in progress; the rest are final.
const (
	RolloutActive     = "active"
	RolloutPaused     = "paused"
	RolloutCanceling  = "canceling"
	RolloutCompleted  = "completed"
	RolloutCanceled   = "canceled"
	RolloutSuperseded = "superseded"
	RolloutFailed     = "failed"
)

// Rollout is one walk of an LRP's instances toward ToDefinitionID.
type Rollout struct {
	ID               string  `json:"id"`
	ProcessGUID      string  `json:"process_guid"`
	Kind             string  `json:"kind"`
	FromDefinitionID string  `json:"from_definition_id"`
	ToDefinitionID   string  `json:"to_definition_id"`
	State            string  `json:"state"`
	CurrentIndex     int32   `json:"current_index"`
	UpdatedInstances int32   `json:"updated_instances"`
	Instances        int32   `json:"instances"`
	GivenUpIndices   []int32 `json:"given_up_indices"`
	StartedAt        int64   `json:"started_at"`
	FinishedAt       int64   `json:"finished_at,omitempty"`
	WorkflowID       string  `json:"workflow_id"`
	RunID            string  `json:"run_id,omitempty"`
	Reason           string  `json:"reason,omitempty"`
}

// InProgress reports whether the rollout is still walking (or paused mid-walk).
func (r *Rollout) InProgress() bool { return RolloutInProgress(r.State) }

// RolloutInProgress reports whether a rollout in the given state is still under way.
func RolloutInProgress(state string) bool {
	return state == RolloutActive || state == RolloutPaused || state == RolloutCanceling
}

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
}
