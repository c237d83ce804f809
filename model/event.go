package model

import "encoding/json"

// Event names of GET /v1/events/lrp_instances (API.md).
const (
	EventActualLRPCreated  = "actual_lrp_instance_created"
	EventActualLRPChanged  = "actual_lrp_instance_changed"
	EventActualLRPRemoved  = "actual_lrp_instance_removed"
	EventActualLRPCrashed  = "actual_lrp_instance_crashed"
	EventDesiredLRPCreated = "desired_lrp_created"
	EventDesiredLRPChanged = "desired_lrp_changed"
	EventDesiredLRPRemoved = "desired_lrp_removed"
	EventRolloutChanged    = "rollout_changed"
)

// Event is one change, in the order the store committed it. Data is the JSON model, or
// {"before", "after"} for a change.
type Event struct {
	ID   int64           `json:"id"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// Change is the data of a *_changed event.
type Change[T any] struct {
	Before T `json:"before"`
	After  T `json:"after"`
}

// Crash is the data of an actual_lrp_instance_crashed event: the instance as the crash left
// it (its JSON model, like every instance event's data) and, under "before", the instance
// that crashed. The crash clears the instance key, which a report of the crash must still
// name (BBS's ActualLRPCrashedEvent carries the crashed incarnation's instance key and cell).
type Crash struct {
	ActualLRP
	Before ActualLRP `json:"before"`
}
