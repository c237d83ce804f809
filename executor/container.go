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
