package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
)

// temporalFlags say where the Temporal frontend is and, when it requires mutual TLS, what
// to present to it. The variables are the ones the temporal CLI reads, so that one
// environment configures both.
type temporalFlags struct {
	address, namespace string
	tls                boot.ClientTLS
	compression        string
}

func (t *temporalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.address, "temporal-address", boot.EnvOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMPORAL_ADDRESS]")
	fs.StringVar(&t.namespace, "temporal-namespace", boot.EnvOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMPORAL_NAMESPACE]")
	fs.StringVar(&t.tls.CAFile, "temporal-tls-ca", boot.EnvOr("TEMPORAL_TLS_CA", ""), "CA of the Temporal frontend's certificate (PEM) [TEMPORAL_TLS_CA]")
	fs.StringVar(&t.tls.CertFile, "temporal-tls-cert", boot.EnvOr("TEMPORAL_TLS_CERT", ""), "client certificate for the Temporal frontend (PEM) [TEMPORAL_TLS_CERT]")
	fs.StringVar(&t.tls.KeyFile, "temporal-tls-key", boot.EnvOr("TEMPORAL_TLS_KEY", ""), "client private key for the Temporal frontend (PEM) [TEMPORAL_TLS_KEY]")
	fs.StringVar(&t.compression, "temporal-compression", boot.EnvOr("BBS_TEMPORAL_COMPRESSION", "none"), "gRPC compression of calls to the Temporal frontend: none, or gzip for a slow link (CPU on both sides) [BBS_TEMPORAL_COMPRESSION]")
}

func (t temporalFlags) config() (system.TemporalConfig, error) {
	tlsConfig, err := t.tls.Config()
	if err != nil {
		return system.TemporalConfig{}, fmt.Errorf("Temporal TLS: %w", err)
	}
	if t.compression != "none" && t.compression != "gzip" {
		return system.TemporalConfig{}, fmt.Errorf("--temporal-compression %q: none or gzip", t.compression)
	}
	return system.TemporalConfig{Address: t.address, Namespace: t.namespace, TLS: tlsConfig, Gzip: t.compression == "gzip"}, nil
}

// rolloutFlags tune the rollouts this process starts (the API) or resumes (the worker).
type rolloutFlags struct {
	maxInFlight   int
	indexDeadline time.Duration
	walk          string
}

func (r *rolloutFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.maxInFlight, "rollout-max-in-flight", boot.EnvInt("BBS_ROLLOUT_MAX_IN_FLIGHT", 1), "indices a rollout replaces at once (1 as in Cloud Foundry) [BBS_ROLLOUT_MAX_IN_FLIGHT]")
	fs.StringVar(&r.walk, "rollout-walk", boot.EnvOr("BBS_ROLLOUT_WALK", "runs"), "how a rollout walks its indices: runs (one activity walks index after index) or steps (an activity per index) [BBS_ROLLOUT_WALK]")
	fs.DurationVar(&r.indexDeadline, "rollout-index-deadline", boot.EnvDuration("BBS_ROLLOUT_INDEX_DEADLINE", workflows.DefaultIndexDeadline), "once the new definition has run, how long an index may take to start before it is given up [BBS_ROLLOUT_INDEX_DEADLINE]")
}

func (r rolloutFlags) options() (system.RolloutOptions, error) {
	if r.walk != "runs" && r.walk != "steps" {
		return system.RolloutOptions{}, fmt.Errorf("--rollout-walk %q: want runs or steps", r.walk)
	}
	return system.RolloutOptions{MaxInFlight: r.maxInFlight, IndexDeadline: r.indexDeadline, Stepwise: r.walk == "steps"}, nil
}

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
	fs.DurationVar(&tasks.KickDuration, "task-kick-duration", boot.EnvDuration("BBS_TASK_KICK_DURATION", db.DefaultTaskKickDuration), "how long a completed task's callback may wait before its delivery is started again [BBS_TASK_KICK_DURATION]")
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
		Tasks: tasks, Placement: auctioneer.Options{MaxTaskRetries: *maxTaskRetries}, Metrics: p.Metrics})
	if err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
