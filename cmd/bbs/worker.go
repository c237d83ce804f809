package main

import (
	"context"

	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/callbacks"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
)

// runWorkerCommand runs the Temporal worker (rollouts, convergence, task callbacks),
// placement and the cell watch, after applying the migrations.
func runWorkerCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("worker")
	fs := cmd.Flags
	cmd.Metrics(workerMetricsAddr)
	cmd.PeerTLS()
	cmd.Store()
	var tf temporalFlags
	tf.register(fs)
	var rf rolloutFlags
	rf.register(fs)
	every := fs.Duration("convergence-interval", boot.EnvDuration("BBS_CONVERGENCE_INTERVAL", workflows.DefaultConvergenceInterval), "how often convergence runs [BBS_CONVERGENCE_INTERVAL]")
	var events worker.EventLog
	fs.DurationVar(&events.Retention, "event-retention", boot.EnvDuration("BBS_EVENT_RETENTION", db.DefaultEventRetention), "how long the event log keeps events (convergence prunes older ones) [BBS_EVENT_RETENTION]")
	fs.IntVar(&events.Kept, "events-kept", boot.EnvInt("BBS_EVENTS_KEPT", db.DefaultEventsKept), "the most events the event log keeps, the newest [BBS_EVENTS_KEPT]")
	var tasks db.TaskConvergeOptions
	fs.DurationVar(&tasks.KickDuration, "task-kick-duration", boot.EnvDuration("BBS_TASK_KICK_DURATION", db.DefaultTaskKickDuration), "how long a callback handed over to Temporal may wait before its workflow is started again [BBS_TASK_KICK_DURATION]")
	var cbs callbacks.Options
	fs.IntVar(&cbs.Size, "task-callback-workers", boot.EnvInt("BBS_TASK_CALLBACK_WORKERS", callbacks.DefaultSize), "how many completion callbacks are delivered at once [BBS_TASK_CALLBACK_WORKERS]")
	fs.DurationVar(&cbs.Lease, "task-callback-lease", boot.EnvDuration("BBS_TASK_CALLBACK_LEASE", callbacks.DefaultLease), "how long a worker's claim of a callback lasts unless renewed: a killed worker's callbacks are delivered by another this long after [BBS_TASK_CALLBACK_LEASE]")
	fs.DurationVar(&tasks.ExpirePending, "task-expire-pending", boot.EnvDuration("BBS_TASK_EXPIRE_PENDING", db.DefaultTaskExpirePending), "how long a task may stay PENDING before it fails [BBS_TASK_EXPIRE_PENDING]")
	fs.DurationVar(&tasks.ExpireCompleted, "task-expire-completed", boot.EnvDuration("BBS_TASK_EXPIRE_COMPLETED", db.DefaultTaskExpireCompleted), "how long a completed task is kept before it is deleted [BBS_TASK_EXPIRE_COMPLETED]")
	maxTaskRetries := fs.Int("max-task-retries", boot.EnvInt("BBS_MAX_TASK_RETRIES", auctioneer.DefaultMaxTaskRetries), "how often a task may be rejected before it fails [BBS_MAX_TASK_RETRIES]")
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Store.Migrate(ctx); err != nil {
		return err
	}
	tcfg, err := tf.config()
	if err != nil {
		return err
	}
	temporal, err := system.DialTemporal(ctx, tcfg, p.Log)
	if err != nil {
		return err
	}
	defer temporal.Close()
	ro, err := rf.options()
	if err != nil {
		return err
	}
	w, err := system.StartWorker(ctx, system.WorkerConfig{Store: p.Store, Temporal: temporal,
		ConvergenceInterval: *every, Events: events, Rollouts: ro, Cells: cellapi.NewClient(p.PeerTLS), Log: p.Log,
		Tasks: tasks, Callbacks: cbs, Placement: auctioneer.Options{MaxTaskRetries: *maxTaskRetries}, Metrics: p.Metrics})
	if err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
