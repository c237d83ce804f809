// Package worker wires the workflows and activities to a Temporal worker.
package worker

import (
	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// TaskQueue is the task queue of every BBS workflow and activity.
const TaskQueue = "bbs"

// Deps are what the activities need.
type Deps struct {
	Store   *db.Store
	Stopper activities.Stopper
	// Rollouts starts rollout workflows (convergence resumes any without one).
	Rollouts activities.RolloutStarter
	// Waiter wakes the activities that wait for an instance to run.
	Waiter activities.Waiter
	Log    *zap.Logger
}

// New builds the worker that runs the BBS workflows and activities on TaskQueue.
func New(c client.Client, d Deps) sdkworker.Worker {
	w := sdkworker.New(c, TaskQueue, sdkworker.Options{
		// Every rollout holds one AwaitRunning activity (waiting on a notification, not a
		// thread) for as long as its current index starts: 1,000 simultaneous rollouts need
		// more slots than the default.
		MaxConcurrentActivityExecutionSize: 10000,
	})
	w.RegisterWorkflow(workflows.ConvergeWorkflow)
	w.RegisterWorkflow(workflows.RolloutWorkflow)
	w.RegisterActivity(&activities.Converger{Store: d.Store, Stopper: d.Stopper, Log: d.Log.Named("converger")})
	w.RegisterActivity(&activities.Resumer{Store: d.Store, Starter: d.Rollouts, Log: d.Log.Named("resumer")})
	w.RegisterActivity(&activities.Rollouts{Store: d.Store, Stopper: d.Stopper, Waiter: d.Waiter, Log: d.Log.Named("rollouts")})
	return w
}
