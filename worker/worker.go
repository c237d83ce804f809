// Package worker wires the workflows and activities to a Temporal worker.
package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// TaskQueue is the task queue of every BBS workflow and activity.
const TaskQueue = "bbs"

// New builds the worker that runs the BBS workflows and activities on TaskQueue. The rollout
// workflow and the convergence loop register here as they land; until then the worker only
// proves the wiring: it connects, polls the task queue, and stops cleanly.
func New(c client.Client) sdkworker.Worker {
	return sdkworker.New(c, TaskQueue, sdkworker.Options{})
}
