// Package worker is the BBS's Temporal worker: which workflows and activities it runs (the one
// place they are registered), on which task queue, and the cell watch that makes convergence
// run at once when a cell vanishes. internal/system assembles it into the worker process.
package worker

import (
	"github.com/updatable-lrps/bbs/analysis"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
)

// TaskQueue is the task queue of every BBS workflow and activity.
const TaskQueue = "bbs"

// Deps are what the activities need. Each store is the narrow interface its activities
// declare, so that tests can run the real workflows over a store of their own; *db.Store
// satisfies all of them.
type Deps struct {
	ConvergeStore activities.ConvergeStore
	ResumeStore   activities.ResumeStore
	RolloutStore  activities.RolloutStore
	// Analysis are the providers canary analysis asks beside the routers' telemetry.
	Analysis []analysis.Provider
	// TaskStore is what the completion callbacks of tasks need; nil registers no callback
	// activities (a worker for LRPs only, as in some tests).
	TaskStore activities.TaskCallbackStore
	// TaskConverge, when set, makes each convergence pass converge tasks too, with
	// TaskOptions; Callbacks starts the completion callbacks it lists.
	TaskConverge activities.TaskConvergeStore
	TaskOptions  db.TaskConvergeOptions
	Callbacks    activities.CallbackStarter
	// Stopper asks cells to stop instances; nil only logs what would be stopped.
	Stopper activities.Stopper
	// Rollouts starts rollout workflows (convergence resumes any without one).
	Rollouts activities.RolloutStarter
	// GroupStore, Groups, Members and Aborter run rollout groups: their decisions, their
	// workflows (convergence resumes any without one), their members' rollouts; a nil
	// GroupStore registers no group activities (a worker for single rollouts, as in tests).
	GroupStore       activities.GroupStore
	GroupResumeStore activities.GroupResumeStore
	Groups           activities.GroupStarter
	Members          activities.MemberRollouts
	Aborter          activities.MemberAborter
	// Waiter wakes the activities that wait for an instance to run.
	Waiter activities.Waiter
	// Events bounds the event log that each convergence pass prunes.
	Events EventLog
	// ConvergeMetrics and RolloutMetrics, when set, record the passes (with the fleet's
	// counts, which Fleet reads) and the rollouts' walks for operators (package metrics).
	ConvergeMetrics activities.ConvergeMetrics
	Fleet           activities.FleetCounter
	RolloutMetrics  activities.RolloutMetrics
	Log             *zap.Logger
}

// EventLog bounds the event log: events older than Retention, and all but the newest Kept,
// are pruned by convergence; zero values mean db.DefaultEventRetention and db.DefaultEventsKept.
type EventLog struct {
	Retention time.Duration
	Kept      int
}

// WorkflowRegistry is where workflows are registered: a worker, or a replayer of recorded
// histories.
type WorkflowRegistry interface {
	RegisterWorkflow(w any)
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// RegisterWorkflows registers every BBS workflow with r. RolloutWorkflow is registered
// twice: as workflows.RolloutWorkflowType, the type rollouts start as, and as
// workflows.LegacyRolloutWorkflowType, the type of the runs recorded before (they replay and
// finish as they were).
func RegisterWorkflows(r WorkflowRegistry) {
	r.RegisterWorkflow(workflows.ConvergeWorkflow)
	r.RegisterWorkflowWithOptions(workflows.RolloutWorkflow, workflow.RegisterOptions{Name: workflows.LegacyRolloutWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.RolloutWorkflow, workflow.RegisterOptions{Name: workflows.RolloutWorkflowType})
	r.RegisterWorkflow(workflows.TaskCallbackWorkflow)
	r.RegisterWorkflowWithOptions(workflows.RolloutGroupWorkflow, workflow.RegisterOptions{Name: workflows.RolloutGroupWorkflowType})
}

// Register registers every BBS workflow and activity with r.
func Register(r sdkworker.Registry, d Deps) {
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	RegisterWorkflows(r)
	r.RegisterActivity(&activities.Converger{Store: d.ConvergeStore, Stopper: d.Stopper,
		EventRetention: d.Events.Retention, EventsKept: d.Events.Kept, Log: log.Named("converger"),
		Tasks: d.TaskConverge, TaskOptions: d.TaskOptions, Callbacks: d.Callbacks, Metrics: d.ConvergeMetrics, Fleet: d.Fleet})
	r.RegisterActivity(&activities.Resumer{Store: d.ResumeStore, Starter: d.Rollouts, Log: log.Named("resumer"),
		Groups: d.Groups, GroupStore: d.GroupResumeStore})
	if d.GroupStore != nil {
		r.RegisterActivity(&activities.RolloutGroups{Store: d.GroupStore, Rollouts: d.Members, Aborter: d.Aborter, Log: log.Named("rollout-groups")})
	}
	r.RegisterActivity(&activities.Rollouts{Store: d.RolloutStore, Stopper: d.Stopper, Waiter: d.Waiter, Log: log.Named("rollouts"),
		Metrics: d.RolloutMetrics, Analysis: d.Analysis})
	if d.TaskStore != nil {
		r.RegisterActivity(&activities.TaskCallbacks{Store: d.TaskStore, Log: log.Named("task-callbacks")})
	}
}

// New builds the worker that runs the BBS workflows and activities on queue ("" means
// TaskQueue; tests sharing one Temporal server use queues of their own).
func New(c client.Client, queue string, d Deps) sdkworker.Worker {
	if queue == "" {
		queue = TaskQueue
	}
	w := sdkworker.New(c, queue, Options())
	Register(w, d)
	return w
}

// Options are the SDK worker settings of the BBS worker; the benchmarks' floor workflow runs
// with the same.
func Options() sdkworker.Options {
	return sdkworker.Options{
		// Every rollout holds one AwaitRunning activity (waiting on a notification, not a
		// thread) for as long as its current index starts: 1,000 simultaneous rollouts need
		// more slots than the default.
		MaxConcurrentActivityExecutionSize: 10000,
		// Every rollout's first workflow task comes from the queue's normal (not sticky)
		// partition, one per poll, and each poll waits for the server to record the task
		// started. With 8 pollers (about half of them on the sticky queue) a burst of 1,000
		// rollouts waited 37 s (p50) from their start to their first workflow task, with a
		// step then taking ~0.2 s and the machine a third idle; with 32, 6.5 s, on the same
		// loaded machine (docs/BENCHMARKS.md, issue 28). An idle poller costs one empty
		// answer every 5 s (matching.longPollExpirationInterval).
		MaxConcurrentWorkflowTaskPollers: 32,
	}
}
