package system

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/callbacks"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// WorkerConfig is what the worker process is made of.
type WorkerConfig struct {
	Store    *db.Store
	Temporal client.Client
	// TaskQueue is where its workflows and activities run; "" means worker.TaskQueue. Each
	// queue has its own convergence schedule (workflows.ConvergenceScheduleIDFor).
	TaskQueue string
	// ConvergenceInterval is how often the convergence schedule runs a pass; 0 means
	// workflows.DefaultConvergenceInterval.
	ConvergenceInterval time.Duration
	// Rollouts tune the rollouts convergence resumes.
	Rollouts RolloutOptions
	// Cells reaches the cells, to hand them work and stop instances.
	Cells *cellapi.Client
	// WrapStopper, when set, wraps the stopper the activities use (tests inject races with
	// the cells' reports through it).
	WrapStopper func(activities.Stopper) activities.Stopper
	// Placement tunes the auctioneer (zero values: its defaults).
	Placement auctioneer.Options
	// Events bounds the event log that convergence prunes (zero values: the store's
	// defaults).
	Events worker.EventLog
	// Tasks are BBS's task convergence settings (zero values: BBS's defaults); the task
	// retries are Placement's MaxTaskRetries.
	Tasks db.TaskConvergeOptions
	// Callbacks tune the pool that delivers tasks' completion callbacks (zero values: its
	// defaults).
	Callbacks callbacks.Options
	// CellWatchInterval is how often the cell watch looks for vanished cells; 0 means 2 s.
	CellWatchInterval time.Duration
	// Metrics, when set, is the process's registry, on which the worker registers the
	// fleet's series (set at each convergence pass it runs) and the rollouts'; nil records
	// none (and spares the pass its fleet count).
	Metrics *prometheus.Registry
	Log     *zap.Logger
}

// Worker is a running worker process.
type Worker struct {
	worker sdkworker.Worker
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartWorker starts polling the task queue with every BBS workflow and activity, makes sure
// the convergence schedule runs every ConvergenceInterval, and runs placement (which leads in
// one worker process at a time), the cell watch (which triggers convergence when a cell
// vanishes) and the pool delivering tasks' completion callbacks until Stop.
func StartWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	log := cfg.Log
	queue := taskQueueOr(cfg.TaskQueue)
	every := cfg.ConvergenceInterval
	if every <= 0 {
		every = workflows.DefaultConvergenceInterval
	}
	var stopper activities.Stopper = &cellapi.Stopper{Cells: cfg.Store, Client: cfg.Cells}
	if cfg.WrapStopper != nil {
		stopper = cfg.WrapStopper(stopper)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Worker{cancel: cancel}
	handOver := &workflows.TaskCallbackClient{Client: cfg.Temporal, TaskQueue: queue}
	rollouts := cfg.Rollouts.client(cfg.Temporal, queue)
	deps := worker.Deps{
		ConvergeStore: cfg.Store, ResumeStore: cfg.Store, RolloutStore: cfg.Store,
		Stopper: stopper, Waiter: activities.NewPGWaiter(cfg.Store.Notifications()), Log: log,
		Rollouts:   rollouts,
		GroupStore: cfg.Store, GroupResumeStore: cfg.Store, Members: rollouts,
		Groups:    &workflows.GroupClient{Client: cfg.Temporal, TaskQueue: queue},
		Aborter:   lrps.NewService(cfg.Store, stopper, rollouts, log),
		Events:    cfg.Events,
		TaskStore: cfg.Store, TaskConverge: cfg.Store, TaskOptions: cfg.Tasks,
		Callbacks: handOver,
		Analysis:  cfg.Rollouts.analysisProviders(),
	}
	if cfg.Metrics != nil {
		deps.ConvergeMetrics, deps.Fleet = metrics.NewConvergence(cfg.Metrics), cfg.Store
		deps.RolloutMetrics = metrics.NewRollouts(cfg.Metrics)
	}
	w.worker = worker.New(cfg.Temporal, queue, deps)
	if err := w.worker.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if err := workflows.EnsureConvergenceSchedule(ctx, cfg.Temporal, every, queue); err != nil {
		w.Stop()
		return nil, fmt.Errorf("convergence schedule: %w", err)
	}
	watchEvery := cfg.CellWatchInterval
	if watchEvery <= 0 {
		watchEvery = 2 * time.Second
	}
	w.run(ctx, func(ctx context.Context) {
		worker.WatchCells(ctx, cfg.Store, watchEvery, log, func(ctx context.Context, ids []string) {
			log.Info("cells vanished: converging now", zap.Strings("cells", ids))
			if err := workflows.TriggerConvergence(ctx, cfg.Temporal, queue); err != nil && ctx.Err() == nil {
				log.Warn("trigger convergence", zap.Error(err))
			}
		})
	})
	pool := callbacks.NewPool(cfg.Store, cfg.Store.Notifications(), handOver, cfg.Callbacks, log)
	w.run(ctx, pool.Run)
	placement := auctioneer.New(cfg.Store, cfg.Store.Notifications(), cfg.Cells, cfg.Placement, log)
	w.run(ctx, func(ctx context.Context) {
		if err := placement.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("placement stopped", zap.Error(err))
		}
	})
	log.Info("worker polling", zap.String("task_queue", queue))
	return w, nil
}

func (w *Worker) run(ctx context.Context, f func(context.Context)) {
	w.wg.Add(1)
	go func() { defer w.wg.Done(); f(ctx) }()
}

// Stop stops placement, the cell watch, the callback pool (which finishes the deliveries
// under way) and the Temporal worker (activities in flight are given the SDK's stop
// timeout).
func (w *Worker) Stop() {
	w.cancel()
	w.wg.Wait()
	w.worker.Stop()
}

func taskQueueOr(q string) string {
	if q == "" {
		return worker.TaskQueue
	}
	return q
}
