package cellapi

import (
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// State is what StatePath reports: the cell's capacity and every container it holds, for
// operators and tests to see what a cell believes without asking the BBS.
type State struct {
	CellID     string             `json:"cell_id"`
	Zone       string             `json:"zone"`
	Evacuating bool               `json:"evacuating"`
	Capacity   model.CellCapacity `json:"capacity"`
	Available  model.CellCapacity `json:"available"`
	Containers []Container        `json:"containers"`
}

// Container is one container as the cell reports it. It mirrors the executor's record field
// for field on the wire, so that readers of the state need not import the executor.
type Container struct {
	InstanceGUID string              `json:"instance_guid"`
	Key          model.ActualLRPKey  `json:"actual_lrp_key"`
	State        string              `json:"state"`
	MemoryMB     int32               `json:"memory_mb"`
	DiskMB       int32               `json:"disk_mb"`
	Address      string              `json:"address"`
	Ports        []model.PortMapping `json:"ports,omitempty"`
	Result       ContainerResult     `json:"result"`
	// Since is when the container entered its current state.
	Since time.Time `json:"since"`
}

// ContainerResult is how a COMPLETED container ended: Stopped tells a requested stop from a
// crash, which is what seed 003's reconciliation turns on.
type ContainerResult struct {
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason,omitempty"`
	Stopped       bool   `json:"stopped"`
}
