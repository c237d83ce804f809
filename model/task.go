package model

import (
	"encoding/json"
	"net/url"
)

// TaskState is where a Task is in its life (seed 003): tasks run at most once, never restart
// and never move; they complete, failed or not, and are then resolved by whoever asked.
type TaskState string

// Task states, in the order a task passes through them.
const (
	// TaskPending: waiting for a cell (placement, or a cell that has not started it yet).
	TaskPending TaskState = "PENDING"
	// TaskRunning: a cell started it.
	TaskRunning TaskState = "RUNNING"
	// TaskCompleted: it ended (Failed says how); its result waits to be resolved.
	TaskCompleted TaskState = "COMPLETED"
	// TaskResolving: someone (the completion callback, or a client) is handling its result.
	TaskResolving TaskState = "RESOLVING"
)

// Limits of tasks (BBS's).
const (
	// MaxTaskResultBytes is the most a task's result_file may hold: a larger file fails the
	// task rather than being cut.
	MaxTaskResultBytes = 10 * 1024
	// MaxTaskReasonBytes bounds failure and rejection reasons, which BBS truncates to 1 KiB.
	MaxTaskReasonBytes = 1024
	// DefaultMaxTaskRetries is BBS's max_task_retries: how often a task may be rejected
	// before it fails.
	DefaultMaxTaskRetries = 3
)

// Failure reasons the BBS itself gives tasks; clients (Cloud Controller) show them to users.
const (
	TaskCancelledReason       = "task was cancelled"
	TaskNotStartedReason      = "not started within time limit"
	TaskCellDisappearedReason = "cell disappeared before completion"
)

// TaskDefinition is what a task runs and where its result goes (BBS's TaskDefinition).
type TaskDefinition struct {
	RootFS                string                     `json:"rootfs"`
	Env                   []EnvironmentVariable      `json:"env,omitempty"`
	Action                *Action                    `json:"action,omitempty"`
	MemoryMB              int32                      `json:"memory_mb"`
	DiskMB                int32                      `json:"disk_mb"`
	CPUWeight             uint32                     `json:"cpu_weight,omitempty"`
	Privileged            bool                       `json:"privileged,omitempty"`
	LogSource             string                     `json:"log_source,omitempty"`
	LogGUID               string                     `json:"log_guid,omitempty"`
	MetricsGUID           string                     `json:"metrics_guid,omitempty"`
	ResultFile            string                     `json:"result_file,omitempty"`
	CompletionCallbackURL string                     `json:"completion_callback_url,omitempty"`
	Annotation            string                     `json:"annotation,omitempty"`
	EgressRules           json.RawMessage            `json:"egress_rules,omitempty"`
	CachedDependencies    json.RawMessage            `json:"cached_dependencies,omitempty"`
	VolumeMounts          json.RawMessage            `json:"volume_mounts,omitempty"`
	Network               json.RawMessage            `json:"network,omitempty"`
	PlacementTags         []string                   `json:"placement_tags,omitempty"`
	MaxPids               int32                      `json:"max_pids,omitempty"`
	MetricTags            map[string]json.RawMessage `json:"metric_tags,omitempty"`
	// Protobuf is the definition as a BBS-protocol client sent it (a protobuf
	// TaskDefinition), kept so that the protocol answers with every field it was given; the
	// fields above are filled from it. Nil for a task desired through the JSON API. Only
	// package protocol reads it.
	Protobuf []byte `json:"-"`
}

// Task is one run-once piece of work (BBS's Task): its definition flattened in, as BBS's
// JSON has it, and its state. Times are Unix nanoseconds.
type Task struct {
	TaskGUID string `json:"task_guid"`
	Domain   string `json:"domain"`
	TaskDefinition
	CreatedAt        int64     `json:"created_at"`
	UpdatedAt        int64     `json:"updated_at"`
	FirstCompletedAt int64     `json:"first_completed_at,omitempty"`
	State            TaskState `json:"state"`
	// CellID is the cell running it; empty while PENDING and once COMPLETED.
	CellID          string `json:"cell_id,omitempty"`
	Result          string `json:"result,omitempty"`
	Failed          bool   `json:"failed"`
	FailureReason   string `json:"failure_reason,omitempty"`
	RejectionCount  int32  `json:"rejection_count,omitempty"`
	RejectionReason string `json:"rejection_reason,omitempty"`
}

// TaskFilter selects tasks by domain and by cell; empty fields select all.
type TaskFilter struct {
	Domain string `json:"domain,omitempty"`
	CellID string `json:"cell_id,omitempty"`
}

// TaskCallbackResponse is the JSON the BBS POSTs to a task's completion_callback_url.
type TaskCallbackResponse struct {
	TaskGUID      string `json:"task_guid"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
	Annotation    string `json:"annotation,omitempty"`
	CreatedAt     int64  `json:"created_at"`
}

// CallbackResponse is what the task's completion callback says about it.
func (t *Task) CallbackResponse() TaskCallbackResponse {
	return TaskCallbackResponse{TaskGUID: t.TaskGUID, Failed: t.Failed, FailureReason: t.FailureReason,
		Result: t.Result, Annotation: t.Annotation, CreatedAt: t.CreatedAt}
}

// Validate checks a task as desired: its guid and domain, then its definition.
func (t *Task) Validate() error {
	if err := ValidateGUID("task_guid", t.TaskGUID); err != nil {
		return err
	}
	if t.Domain == "" {
		return invalid("domain is required")
	}
	if len(t.Domain) > MaxGUIDLength {
		return invalid("domain is longer than %d characters", MaxGUIDLength)
	}
	return t.TaskDefinition.Validate()
}

// Validate checks a task definition by BBS's rules, and that a completion callback is a URL
// the BBS can POST to.
func (d *TaskDefinition) Validate() error {
	if err := validateContainer(d.RootFS, d.MemoryMB, d.DiskMB, d.MaxPids, d.CPUWeight); err != nil {
		return err
	}
	if d.Action == nil {
		return invalid("action is required")
	}
	if err := d.Action.validate("action", 0); err != nil {
		return err
	}
	if err := validateAnnotation(d.Annotation); err != nil {
		return err
	}
	if err := validateEnv("env", d.Env); err != nil {
		return err
	}
	if d.CompletionCallbackURL != "" {
		u, err := url.Parse(d.CompletionCallbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid("completion_callback_url %q must be an http or https URL", d.CompletionCallbackURL)
		}
	}
	if err := validateMetricTags(d.MetricTags, ""); err != nil {
		return err
	}
	return validateContainerFields(d.PlacementTags, d.EgressRules, d.CachedDependencies, d.VolumeMounts, d.Network)
}

// taskTransitions are BBS's task state machine: which states each state may be entered from.
var taskTransitions = map[TaskState][]TaskState{
	TaskRunning:   {TaskPending},
	TaskCompleted: {TaskRunning},
	TaskResolving: {TaskCompleted},
}

// ValidateTransitionTo says whether t may move to state, with BBS's InvalidStateTransition
// error when it may not.
func (t *Task) ValidateTransitionTo(to TaskState) error {
	for _, from := range taskTransitions[to] {
		if t.State == from {
			return nil
		}
	}
	return Errorf(ErrInvalidStateTransition, "Cannot transition from %s to %s", t.State, to)
}

// LRPDefinition is the task's definition in the shape the executor runs: an action with no
// ports, monitor or restart, in a container of the task's size. Cells run tasks through the
// same backends as instances.
func (d *TaskDefinition) LRPDefinition() LRPDefinition {
	return LRPDefinition{
		RootFS: d.RootFS, Env: d.Env, Action: d.Action, MemoryMB: d.MemoryMB, DiskMB: d.DiskMB,
		CPUWeight: d.CPUWeight, Privileged: d.Privileged, LogSource: d.LogSource, LogGUID: d.LogGUID,
		MetricsGUID: d.MetricsGUID, EgressRules: d.EgressRules, CachedDependencies: d.CachedDependencies,
		VolumeMounts: d.VolumeMounts, Network: d.Network, PlacementTags: d.PlacementTags, MaxPids: d.MaxPids,
	}
}

// TaskEvent is a Task as the data of a task_* event records it (each side of a task_changed
// one): its JSON plus the protobuf of its definition as a BBS-protocol client sent it, so
// that the protocol's task stream sends the task whole.
type TaskEvent struct {
	Task
	DefinitionProtobuf []byte `json:"definition_protobuf,omitempty"`
}

// NewTaskEvent is t as its events record it.
func NewTaskEvent(t *Task) TaskEvent { return TaskEvent{Task: *t, DefinitionProtobuf: t.Protobuf} }

// Model is the Task the event recorded, its definition's protobuf in place.
func (e TaskEvent) Model() *Task {
	t := e.Task
	t.Protobuf = e.DefinitionProtobuf
	return &t
}

// TaskCallbackWorkflowID is the id of the workflow that delivers a task's completion
// callback: one per task, so that a second start finds the delivery under way.
func TaskCallbackWorkflowID(taskGUID string) string { return "task-callback:" + taskGUID }
