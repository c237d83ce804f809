package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// temporalFlags say where the Temporal frontend is.
type temporalFlags struct {
	address, namespace string
}

func (t *temporalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.address, "temporal-address", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMPORAL_ADDRESS]")
	fs.StringVar(&t.namespace, "temporal-namespace", envOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMPORAL_NAMESPACE]")
}

// rolloutFlags tune the rollouts this process starts (the API) or resumes (the worker).
type rolloutFlags struct {
	maxInFlight   int
	indexDeadline time.Duration
}

func (r *rolloutFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.maxInFlight, "rollout-max-in-flight", envInt("BBS_ROLLOUT_MAX_IN_FLIGHT", 1), "indices a rollout replaces at once (1 as in Cloud Foundry) [BBS_ROLLOUT_MAX_IN_FLIGHT]")
	fs.DurationVar(&r.indexDeadline, "rollout-index-deadline", envDuration("BBS_ROLLOUT_INDEX_DEADLINE", workflows.DefaultIndexDeadline), "once the new definition has run, how long an index may take to start before it is given up [BBS_ROLLOUT_INDEX_DEADLINE]")
}

func (r rolloutFlags) client(c client.Client) *workflows.RolloutClient {
	return &workflows.RolloutClient{Client: c, TaskQueue: worker.TaskQueue, MaxInFlight: r.maxInFlight, IndexDeadline: r.indexDeadline}
}

// lazyClient connects on first use, so that the API serves (and answers Unavailable for
// rollouts) while Temporal is away.
func (t *temporalFlags) lazyClient(log *zap.Logger) (client.Client, error) {
	return client.NewLazyClient(client.Options{
		HostPort:  t.address,
		Namespace: t.namespace,
		Logger:    temporalzap.New(log.Named("temporal")),
	})
}

func (t *temporalFlags) dial(ctx context.Context, log *zap.Logger) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  t.address,
		Namespace: t.namespace,
		Logger:    temporalzap.New(log.Named("temporal")),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", t.address, err)
	}
	return c, nil
}

func runWorkerCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	logLevel := logLevelFlag(fs)
	var tf temporalFlags
	tf.register(fs)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
	var rf rolloutFlags
	rf.register(fs)
	every := fs.Duration("convergence-interval", envDuration("BBS_CONVERGENCE_INTERVAL", workflows.DefaultConvergenceInterval), "how often convergence runs [BBS_CONVERGENCE_INTERVAL]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	store, err := openStoreFromEnv(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	cellTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	w, c, err := startWorker(ctx, tf, store, *every, rf, cell.NewClient(cellTLS), log)
	if err != nil {
		return err
	}
	defer c.Close()
	<-ctx.Done()
	w.Stop()
	return nil
}

// startWorker connects to Temporal, starts polling the BBS task queue, makes sure the
// convergence schedule runs every `every`, and runs placement (which leads in one worker
// process at a time) and the cell watch (which triggers convergence when a cell vanishes)
// until ctx ends.
func startWorker(ctx context.Context, tf temporalFlags, store *db.Store, every time.Duration, rf rolloutFlags, cells *cell.Client, log *zap.Logger) (sdkworker.Worker, client.Client, error) {
	c, err := tf.dial(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	stopper := &cell.Stopper{Cells: store, Client: cells}
	waiter := activities.NewPGWaiter(store.Notifications())
	w := worker.New(c, worker.Deps{Store: store, Stopper: stopper, Waiter: waiter, Log: log,
		Rollouts: rf.client(c)})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("start worker: %w", err)
	}
	if err := workflows.EnsureConvergenceSchedule(ctx, c, every, worker.TaskQueue); err != nil {
		w.Stop()
		c.Close()
		return nil, nil, fmt.Errorf("convergence schedule: %w", err)
	}
	go worker.WatchCells(ctx, store, 2*time.Second, log, func(ctx context.Context, ids []string) {
		log.Info("cells vanished: converging now", zap.Strings("cells", ids))
		if err := workflows.TriggerConvergence(ctx, c); err != nil {
			log.Warn("trigger convergence", zap.Error(err))
		}
	})
	log.Info("worker polling", zap.String("task_queue", worker.TaskQueue), zap.String("temporal", tf.address))
	placement := auctioneer.New(store, store.Notifications(), cells, auctioneer.Options{}, log)
	go func() {
		if err := placement.Run(ctx); err != nil {
			log.Error("placement stopped", zap.Error(err))
		}
	}()
	return w, c, nil
}
