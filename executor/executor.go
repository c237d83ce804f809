// Package executor runs the containers of one cell. It owns the container lifecycle of seed
// 003 (RESERVED → INITIALIZING → CREATED → RUNNING → COMPLETED) and health monitoring as seed
// 002 describes it; a Backend does the actual running: real local processes (package
// executor/process) or simulated instances (package executor/sim).
package executor

import (
	"context"
	"io"
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
}

// Container is one instance on this cell, as the executor knows it.
type Container struct {
	Guid     string             `json:"instance_guid"`
	Key      model.ActualLRPKey `json:"actual_lrp_key"`
	State    State              `json:"state"`
	MemoryMB int32              `json:"memory_mb"`
	DiskMB   int32              `json:"disk_mb"`
	// Address is the host address the ports are reachable on; Ports map container ports to
	// host ports, allocated at reservation.
	Address string              `json:"address"`
	Ports   []model.PortMapping `json:"ports,omitempty"`
	Result  Result              `json:"result"`
	// Since is when the container entered its current state.
	Since time.Time `json:"since"`
}

// RunSpec asks for a container.
type RunSpec struct {
	Guid       string
	Key        model.ActualLRPKey
	Definition model.LRPDefinition
}

// Event tells that a container entered RUNNING or COMPLETED; the cell reconciles it with the
// BBS exactly as it does when polling (events are only an optimisation).
type Event struct {
	Container Container
}

// StartSpec is what a Backend needs to start one instance: the definition, the ports and
// address allocated for it, the full environment (the definition's env plus PORT,
// CF_INSTANCE_* and INSTANCE_*), and where its output goes.
type StartSpec struct {
	Guid       string
	Key        model.ActualLRPKey
	Definition model.LRPDefinition
	Address    string
	Ports      []model.PortMapping
	Env        []model.EnvironmentVariable
	Log        io.Writer
}

// Backend starts instances: local processes or simulated ones.
type Backend interface {
	// Start runs the definition's setup and then starts its action. It returns once the
	// action has started, or with an error when setup failed or the action could not start
	// (the error text becomes the crash reason).
	Start(ctx context.Context, spec StartSpec) (Instance, error)
}

// Instance is one started instance.
type Instance interface {
	// Done is closed when the action exits; Err then tells how (nil for exit status 0).
	Done() <-chan struct{}
	Err() error
	// HasMonitor reports whether the definition has a monitor action or a check definition.
	HasMonitor() bool
	// Check runs the health check once; nil means healthy.
	Check(ctx context.Context) error
	// Stop ends the instance: a polite signal first, then a forced kill after grace. It
	// returns once everything the instance started has exited.
	Stop(grace time.Duration)
}
