package cellapi

import "github.com/updatable-lrps/bbs/model"

// StopRequest asks a cell to stop one instance. InstanceGUID names the container; without
// it the cell stops whichever container holds the key's slot (an older caller's request).
type StopRequest struct {
	Key          model.ActualLRPKey `json:"actual_lrp_key"`
	InstanceGUID string             `json:"instance_guid"`
	// Retiring says the BBS retired the instance (model.ActualLRP.Retiring) when it asked
	// for the stop: the cell, after its drain, stops it only if it still is, since a scale-up
	// in between may have withdrawn the retirement. Stops of instances that were not retiring
	// (an undesired extra convergence found) are carried out unconditionally.
	Retiring bool `json:"retiring,omitempty"`
}
