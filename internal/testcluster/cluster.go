// Package testcluster runs the whole system inside one test process, assembled by
// internal/system exactly as the `bbs` processes are: the API on a real PostgreSQL
// (internal/dbtest), the worker process (every workflow and activity on a Temporal dev server,
// placement, the cell watch and the convergence schedule) and cell agents with the sim
// executor — so that tests and benchmarks drive thousands of instances and rollouts through
// what production runs, without processes.
package testcluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Options shape a cluster.
type Options struct {
	Cells, Zones int
	Capacity     model.CellCapacity
	// Backend makes each cell's executor backend from the cell's seed (1, 2, …); nil uses the
	// plain sim backend, sim.New(seed).
	Backend func(seed int64) executor.Backend
	// RestartPolicy, when not nil, replaces the store's restart policy (the one cells' crash
	// reports and convergence use; model.DefaultRestartPolicy otherwise).
	RestartPolicy *model.RestartPolicy
	// ConvergeEvery is the interval of the cluster's convergence schedule (every 30 s in a
	// deployment); zero schedules no pass of its own, so that convergence runs only when the
	// cell watch sees a cell vanish (or a test triggers it). Temporal refuses schedule
	// intervals under a second: a shorter one triggers the schedule at that pace instead,
	// which runs the same workflow.
	ConvergeEvery time.Duration

	// TemporalClient is the client of the Temporal server the cluster's worker runs on; nil
	// uses the test binary's shared dev server (temporaltest.Shared: stop it in TestMain with
	// dbtest.Main(m, temporaltest.StopShared)). The rollout workflows a cluster leaves open
	// on its task queue are terminated, and its convergence schedule deleted, when it stops.
	TemporalClient client.Client
	// TaskQueue is the worker's and the API's task queue; "" means one of the test's own
	// (temporaltest.TaskQueueFor).
	TaskQueue string
	// MaxInFlight and IndexDeadline tune the rollouts the API starts (0: the workflow's
	// defaults).
	MaxInFlight   int
	IndexDeadline time.Duration
	// EvacuationTimeout bounds a cell's drain (default 1 min).
	EvacuationTimeout time.Duration
	// BeforeStop, when not nil, runs before each stop request of the worker's activities
	// reaches the cells (to inject races with the cells' reports); the API stops without it.
	BeforeStop func(c *Cluster, lrps []model.ActualLRP)
	// CellHeartbeat and CellPoll are the cells' heartbeat and reconciliation intervals, and
	// CellHealthCheck how often a cell checks a RUNNING instance's health (default 1 s each:
	// quick reactions for tests; a fleet of a thousand cells wants production-like intervals
	// instead).
	CellHeartbeat, CellPoll, CellHealthCheck time.Duration
}

// noConvergeInterval is the schedule interval of a cluster without ConvergeEvery: intervals
// align to the Unix epoch, so a long one keeps scheduled passes out of any test.
const noConvergeInterval = 1000 * time.Hour

// Cluster is a running system.
type Cluster struct {
	// Store is the API's store; WorkerStore the worker's (placement, the workflows'
	// activities, convergence), on the same database.
	Store, WorkerStore *db.Store
	// DatabaseURL is the store's database, for processes a test starts of its own.
	DatabaseURL string
	// Stopper asks cells to stop instances (what the API and the activities use).
	Stopper *cellapi.Stopper
	BBS     *bbsclient.Client
	URL     string
	// ProtocolURL is where the API serves the BBS protocol (package protocol).
	ProtocolURL string
	// Temporal is the client of the Temporal server the worker runs on, and TaskQueue the queue
	// of the cluster's worker.
	Temporal  client.Client
	TaskQueue string
	Cells     []*Cell

	t        testing.TB
	backend  func(seed int64) executor.Backend
	opts     Options
	ctx      context.Context
	cancel   context.CancelFunc
	closers  []func() // run, last added first, after they stopped
	stopOnce sync.Once
	log      *zap.Logger
	// worker is the running worker process and wcfg how it was made (RestartWorker).
	workerMu sync.Mutex
	worker   *system.Worker
	wcfg     system.WorkerConfig
}

// Cell is one sim cell agent.
type Cell struct {
	ID, Zone string
	Agent    *cell.Agent
	Exec     *executor.Executor
	done     chan error
	cancel   context.CancelFunc
}

// clusterLog is where the cluster's processes log: nowhere, unless BBS_TESTCLUSTER_LOG names
// a file, which then receives their warnings and errors as JSON lines — for a benchmark run
// that misbehaves, whose processes otherwise say nothing.
func clusterLog(t testing.TB) *zap.Logger {
	path := os.Getenv("BBS_TESTCLUSTER_LOG")
	if path == "" {
		return zap.NewNop()
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{path}, []string{path}
	cfg.Sampling = nil
	log, err := cfg.Build()
	if err != nil {
		t.Fatalf("BBS_TESTCLUSTER_LOG: %v", err)
	}
	t.Cleanup(func() { _ = log.Sync() })
	return log
}

// New starts a cluster; everything stops when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	log := clusterLog(t)
	dbURL := dbtest.NewURL(t)
	// BBS_DB_STATEMENT_CACHE as the bbs command reads it, for A/B runs of the benchmarks.
	prepare, err := db.ParseStatementCache(os.Getenv("BBS_DB_STATEMENT_CACHE"))
	if err != nil {
		t.Fatalf("BBS_DB_STATEMENT_CACHE: %v", err)
	}
	// open opens a store on the test database for one process's part (the API, the worker).
	open := func(part string) *db.Store {
		st, err := db.Open(context.Background(), dbURL, db.WithStatementCache(prepare), db.WithProtobufPatcher(protocol.PatchDefinitionProtobuf))
		if err != nil {
			t.Fatalf("open the test database for the %s: %v", part, err)
		}
		t.Cleanup(func() { st.Close() })
		if opts.RestartPolicy != nil {
			st.SetRestartPolicy(*opts.RestartPolicy)
		}
		return st
	}
	store := open("API")
	c := &Cluster{Store: store, DatabaseURL: dbURL, Stopper: &cellapi.Stopper{Cells: store, Client: cellapi.NewClient(nil)}, t: t, backend: opts.Backend, opts: opts, log: log}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.Stop)

	c.Temporal = opts.TemporalClient
	if c.Temporal == nil {
		c.Temporal = temporaltest.Shared(t)
	}
	c.TaskQueue = cmp.Or(opts.TaskQueue, temporaltest.TaskQueueFor(t))
	rollouts := system.RolloutOptions{MaxInFlight: opts.MaxInFlight, IndexDeadline: opts.IndexDeadline}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	protocolLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := system.StartAPI(c.ctx, system.APIConfig{
		Store: store, Listener: ln, ProtocolListener: protocolLn, Cells: cellapi.NewClient(nil),
		Temporal: c.Temporal, TaskQueue: c.TaskQueue, Rollouts: rollouts,
		Events: events.Options{GapWait: 200 * time.Millisecond, Poll: 200 * time.Millisecond},
		Log:    log,
	})
	if err != nil {
		t.Fatalf("start the API: %v", err)
	}
	c.closers = append(c.closers, func() { a.Stop() })
	c.URL = a.URL()
	c.ProtocolURL = a.ProtocolURL()
	c.BBS = bbsclient.New(c.URL, nil)

	// The worker has a store (a connection pool) of its own, as `bbs worker` has beside `bbs
	// api`: sharing the API's, a thousand rollouts' waits and steps queued the API's requests
	// (the cells' reports, the updates) behind them.
	wstore := open("worker")
	c.WorkerStore = wstore
	wcfg := system.WorkerConfig{
		Store: wstore, Temporal: c.Temporal, TaskQueue: c.TaskQueue,
		ConvergenceInterval: noConvergeInterval,
		Rollouts:            rollouts, Cells: cellapi.NewClient(nil),
		Placement:         auctioneer.Options{Interval: 200 * time.Millisecond, Resend: 5 * time.Second, RetryFailed: time.Second},
		CellWatchInterval: 500 * time.Millisecond,
		Log:               log,
	}
	if opts.BeforeStop != nil {
		wcfg.WrapStopper = func(s activities.Stopper) activities.Stopper {
			return hookedStopper{c: c, before: opts.BeforeStop, next: s}
		}
	}
	if opts.ConvergeEvery >= time.Second {
		wcfg.ConvergenceInterval = opts.ConvergeEvery
	}
	c.wcfg = wcfg
	w, err := system.StartWorker(c.ctx, wcfg)
	if err != nil {
		t.Fatalf("start the worker on %s: %v", c.TaskQueue, err)
	}
	c.worker = w
	c.closers = append(c.closers, func() {
		forget(c.Temporal, c.TaskQueue)
		c.workerMu.Lock()
		defer c.workerMu.Unlock()
		c.worker.Stop()
	})

	if opts.ConvergeEvery > 0 && opts.ConvergeEvery < time.Second {
		go c.triggerConvergence(opts.ConvergeEvery)
	}

	zones := max(opts.Zones, 1)
	for i := 0; i < opts.Cells; i++ {
		c.AddCell(fmt.Sprintf("cell-%03d", i+1), fmt.Sprintf("z%d", i%zones+1), opts.Capacity)
	}
	return c
}

// triggerConvergence triggers the convergence schedule every `every` until the cluster stops.
func (c *Cluster) triggerConvergence(every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		_ = c.TriggerConvergence(c.ctx)
	}
}

// TriggerConvergence runs a convergence pass now, through the cluster's schedule.
func (c *Cluster) TriggerConvergence(ctx context.Context) error {
	return workflows.TriggerConvergence(ctx, c.Temporal, c.TaskQueue)
}

type hookedStopper struct {
	c      *Cluster
	before func(c *Cluster, lrps []model.ActualLRP)
	next   activities.Stopper
}

func (h hookedStopper) StopInstances(ctx context.Context, lrps []model.ActualLRP) error {
	h.before(h.c, lrps)
	return h.next.StopInstances(ctx, lrps)
}

// RestartWorker stops the worker process — its activities in flight are cancelled, their
// work left to their retries — and starts a new one in its place, as a worker replaced
// mid-rollout is.
func (c *Cluster) RestartWorker() {
	c.t.Helper()
	c.workerMu.Lock()
	defer c.workerMu.Unlock()
	c.worker.Stop()
	w, err := system.StartWorker(c.ctx, c.wcfg)
	if err != nil {
		c.t.Fatalf("restart the worker on %s: %v", c.TaskQueue, err)
	}
	c.worker = w
}

// AddCell starts one more sim cell.
func (c *Cluster) AddCell(id, zone string, capacity model.CellCapacity) *Cell {
	c.t.Helper()
	seed := int64(len(c.Cells) + 1)
	var backend executor.Backend = sim.New(seed)
	if c.backend != nil {
		backend = c.backend(seed)
	}
	heartbeat, poll := cmp.Or(c.opts.CellHeartbeat, time.Second), cmp.Or(c.opts.CellPoll, time.Second)
	built := system.NewCell(system.CellConfig{
		Agent: cell.Config{
			ID: id, Zone: zone, Capacity: capacity,
			HeartbeatInterval: heartbeat, PresenceTTL: 5 * heartbeat, PollInterval: poll,
			EvacuationPoll: 100 * time.Millisecond, EvacuationTimeout: cmp.Or(c.opts.EvacuationTimeout, time.Minute),
		},
		Executor: executor.Config{
			SkipPortProbe: true, PortRangeStart: 61000, PortRangeEnd: 63000,
			MonitorInterval: 20 * time.Millisecond, HealthyMonitorInterval: cmp.Or(c.opts.CellHealthCheck, time.Second),
			StopGracePeriod: 100 * time.Millisecond,
		},
		Backend: backend,
		// A client of its own, as each rep has: sharing the cluster's had a thousand cells
		// contend for one pool of 64 connections, dialing afresh whenever it was short.
		BBS: bbsclient.New(c.URL, nil),
		Log: c.log.Named(id),
	})
	agent, exec := built.Agent, built.Exec
	sc := &Cell{ID: id, Zone: zone, Agent: agent, Exec: exec, done: make(chan error, 1)}
	ready := make(chan struct{})
	cellCtx, cancel := context.WithCancel(c.ctx)
	sc.cancel = cancel
	go func() { sc.done <- agent.Run(cellCtx, func(string) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-sc.done:
		c.t.Fatalf("cell %s: %v", id, err)
	}
	c.Cells = append(c.Cells, sc)
	return sc
}

// Wait waits up to within for the cell's agent to exit (as it does once drained) and returns
// what its Run returned; exited is false when it still runs.
func (sc *Cell) Wait(within time.Duration) (exited bool, err error) {
	select {
	case err := <-sc.done:
		sc.done <- err // for the cluster's stop
		return true, err
	case <-time.After(within):
		return false, nil
	}
}

// Stop stops the cell's agent as a shutdown does (containers stopped, presence withdrawn)
// and waits for it. The store keeps the cell's instances: convergence would deal with them.
func (sc *Cell) Stop() {
	sc.cancel()
	sc.Wait(time.Minute)
}

// Zone is the zone of the cell with the given ID ("" when there is none).
func (c *Cluster) Zone(cellID string) string {
	for _, sc := range c.Cells {
		if sc.ID == cellID {
			return sc.Zone
		}
	}
	return ""
}

// Stop stops the cluster's cells, API and worker now and leaves its database (and Store)
// open: a benchmark then reads the store with nothing else running. Stopping again (at the
// test's end) does nothing.
func (c *Cluster) Stop() { c.stopOnce.Do(c.stop) }

// DB is the store's database, for what a test or a benchmark reads directly; a cluster of
// `bbs cluster`'s processes gives its own the same way, so that what reads either is written
// once.
func (c *Cluster) DB() *sqlx.DB { return c.Store.DB() }

func (c *Cluster) stop() {
	c.cancel()
	for _, sc := range c.Cells {
		<-sc.done
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
}
