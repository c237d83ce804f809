package cellapi

import "github.com/updatable-lrps/bbs/model"

// Work asks a cell to start one instance of a definition. The definition travels with the
// instance so that the cell needs no read of the BBS before it reserves a container.
type Work struct {
	Key        model.ActualLRPKey  `json:"actual_lrp_key"`
	Definition model.LRPDefinition `json:"definition"`
}

// PerformRequest is the body of WorkPath: one placement round's work for this cell, which
// the cell claims in one batch.
type PerformRequest struct {
	LRPs []Work `json:"lrps"`
}

// PerformResponse lists the work a cell refused (full, draining, or lost the claim); what is
// not listed was claimed and is starting.
type PerformResponse struct {
	Rejected []Rejection `json:"rejected"`
}

// Rejection is one refused piece of work and why, so that placement can record the reason
// or try another cell.
type Rejection struct {
	Key    model.ActualLRPKey `json:"actual_lrp_key"`
	Reason string             `json:"reason"`
}
