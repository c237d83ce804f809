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

// Event names of GET /v1/events/tasks (BBS's): the data of a created or removed event is the
// TaskEvent, of a changed one {"before", "after"}.
const (
	EventTaskCreated = "task_created"
	EventTaskChanged = "task_changed"
	EventTaskRemoved = "task_removed"
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

// DesiredLRPEvent is a DesiredLRP as the data of a desired_lrp_* event records it (each side
// of a desired_lrp_changed one): its JSON, plus what that JSON does not carry exactly — the
// protobuf of its active definition as a BBS-protocol client sent it (LRPDefinition.Protobuf)
// and the route values byte for byte (JSON re-encodes them) — so that the BBS protocol's
// streams send the DesiredLRP whole.
type DesiredLRPEvent struct {
	DesiredLRP
	DefinitionProtobuf []byte            `json:"definition_protobuf,omitempty"`
	RouteBytes         map[string][]byte `json:"route_bytes,omitempty"`
}

// NewDesiredLRPEvent is d as its events record it.
func NewDesiredLRPEvent(d *DesiredLRP) DesiredLRPEvent {
	e := DesiredLRPEvent{DesiredLRP: *d, DefinitionProtobuf: d.Protobuf}
	if len(d.Routes) > 0 {
		e.RouteBytes = make(map[string][]byte, len(d.Routes))
		for name, v := range d.Routes {
			e.RouteBytes[name] = v
		}
	}
	return e
}

// Model is the DesiredLRP the event recorded, its definition's protobuf and exact routes in
// place.
func (e DesiredLRPEvent) Model() *DesiredLRP {
	d := e.DesiredLRP
	d.Protobuf = e.DefinitionProtobuf
	if e.RouteBytes != nil {
		d.Routes = make(Routes, len(e.RouteBytes))
		for name, v := range e.RouteBytes {
			d.Routes[name] = v
		}
	}
	return &d
}

// Crash is the data of an actual_lrp_instance_crashed event: the instance as the crash left
// it (its JSON model, like every instance event's data) and, under "before", the instance
// that crashed. The crash clears the instance key, which a report of the crash must still
// name (BBS's ActualLRPCrashedEvent carries the crashed incarnation's instance key and cell).
type Crash struct {
	ActualLRP
	Before ActualLRP `json:"before"`
}
