package cellapi

import "github.com/updatable-lrps/bbs/model"

// StopRequest asks a cell to stop one instance. InstanceGUID names the container; without
// it the cell stops whichever container holds the key's slot (an older caller's request).
type StopRequest struct {
	Key          model.ActualLRPKey `json:"actual_lrp_key"`
	InstanceGUID string             `json:"instance_guid"`
}
