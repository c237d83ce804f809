// Package cellapi is the cell's HTTP API as both sides see it: the wire types of its routes
// (work, stop, evacuate, state), the client the BBS side calls it with, and the Stopper that
// hands instances to the cells running them. The cell agent (package cell) serves these
// types; the auctioneer, the API and the activities send them without importing the agent
// or its executor.
package cellapi

// The cell's routes. Each takes and answers JSON; an error answers {"error": model.Error}.
const (
	// WorkPath takes a PerformRequest and answers a PerformResponse.
	WorkPath = "/v1/work"
	// StopPath takes a StopRequest and answers {}.
	StopPath = "/v1/stop"
	// CancelTaskPath stops a task's container (TaskGuidRequest body); the BBS has completed
	// the task as cancelled already.
	CancelTaskPath = "/v1/tasks/cancel"
	// EvacuatePath takes {} and answers {}: the cell drains.
	EvacuatePath = "/v1/evacuate"
	// StatePath (GET) answers a State.
	StatePath = "/v1/state"
)
