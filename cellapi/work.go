package cellapi

import "github.com/updatable-lrps/bbs/model"

// Work asks a cell to start one instance of a definition. The definition travels with the
// instance so that the cell needs no read of the BBS before it reserves a container.
type Work struct {
	Key        model.ActualLRPKey  `json:"actual_lrp_key"`
	Definition model.LRPDefinition `json:"definition"`
}

// TaskWork asks a cell to run one task, its definition with it.
type TaskWork struct {
	TaskGUID   string               `json:"task_guid"`
	Domain     string               `json:"domain"`
	Definition model.TaskDefinition `json:"definition"`
}

// PerformRequest is the body of WorkPath: one placement round's work for this cell, which
// the cell claims in one batch.
type PerformRequest struct {
	LRPs  []Work     `json:"lrps"`
	Tasks []TaskWork `json:"tasks,omitempty"`
}

// PerformResponse lists the work a cell refused (full, draining, or lost the claim); what is
// not listed was claimed and is starting.
type PerformResponse struct {
	Rejected      []Rejection     `json:"rejected"`
	RejectedTasks []TaskRejection `json:"rejected_tasks,omitempty"`
}

// TaskRejection is one task a cell refused and why. The cell has not told the BBS (it would
// count a rejection): placement tries another cell, or records the rejection itself.
type TaskRejection struct {
	TaskGUID string `json:"task_guid"`
	Reason   string `json:"reason"`
}

// TaskGUIDRequest names one task (CancelTaskPath).
type TaskGUIDRequest struct {
	TaskGUID string `json:"task_guid"`
}

// Rejection is one refused piece of work and why, so that placement can record the reason
// or try another cell.
type Rejection struct {
	Key    model.ActualLRPKey `json:"actual_lrp_key"`
	Reason string             `json:"reason"`
}
