package executor

import (
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// State is a container's state (seed 003).
type State string

// Container states.
const (
	StateReserved     State = "RESERVED"
	StateInitializing State = "INITIALIZING"
	StateCreated      State = "CREATED"
	StateRunning      State = "RUNNING"
	StateCompleted    State = "COMPLETED"
)

// Result is how a COMPLETED container ended.
type Result struct {
	// Failed is false only for a container that was stopped on request and shut down cleanly.
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason,omitempty"`
	// Stopped says the container was told to stop ("COMPLETED (shutdown)" in seed 003's
	// reconciliation table); otherwise it crashed ("COMPLETED (crashed)").
	Stopped bool `json:"stopped"`
	// TaskResult is what a task's result file held, for a task that succeeded.
	TaskResult string `json:"task_result,omitempty"`
}

// Container is one instance on this cell, as the executor knows it.
type Container struct {
	Guid string             `json:"instance_guid"`
	Key  model.ActualLRPKey `json:"actual_lrp_key"`
	// TaskGUID is set, and Key empty, for a task's container.
	TaskGUID string `json:"task_guid,omitempty"`
	State    State  `json:"state"`
	MemoryMB int32  `json:"memory_mb"`
	DiskMB   int32  `json:"disk_mb"`
	// Address is the host address the ports are reachable on; Ports map container ports to
	// host ports, allocated at reservation.
	Address string              `json:"address"`
	Ports   []model.PortMapping `json:"ports,omitempty"`
	Result  Result              `json:"result"`
	// NotReady is set while a RUNNING instance's readiness checks do not pass: from the
	// moment it runs until they first pass, and whenever they fail after. Its cell reports it
	// (BBS's routable = false) so that routers keep traffic away.
	NotReady bool `json:"not_ready,omitempty"`
	// Since is when the container entered its current state.
	Since time.Time `json:"since"`
}

// RunSpec asks for a container.
type RunSpec struct {
	Guid       string
	Key        model.ActualLRPKey
	Definition model.LRPDefinition
	// Task, when set, makes the container a task's: its action runs once, with no health
	// check, and its exit completes the container (status 0 is success).
	Task *TaskSpec
}

func (s RunSpec) taskGUID() string {
	if s.Task == nil {
		return ""
	}
	return s.Task.TaskGUID
}

// TaskSpec is what makes a container a task's.
type TaskSpec struct {
	TaskGUID string
	// ResultFile, when set, is read once the action exits 0: at most model.MaxTaskResultBytes
	// become the result; a larger file fails the task.
	ResultFile string
}

// ResultReader is implemented by instances that can read a file of their container, which
// a task's result file needs.
type ResultReader interface {
	// ReadResultFile returns up to limit bytes of the file at path (relative to the
	// container's root), and whether the file was longer.
	ReadResultFile(path string, limit int) (data []byte, truncated bool, err error)
}

// Event tells that a container entered RUNNING or COMPLETED; the cell reconciles it with the
// BBS exactly as it does when polling (events are only an optimisation).
type Event struct {
	Container Container
}
