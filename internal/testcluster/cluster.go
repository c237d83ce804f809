// Package testcluster runs the whole system inside one test process: the real HTTP API on a
// real PostgreSQL (internal/dbtest), the event hub, placement, cell agents with the sim
// executor, and, when asked, a Temporal dev server with the BBS worker — so that tests and
// benchmarks can drive thousands of instances and rollouts without processes.
package testcluster

import (
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
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
	// ConvergeEvery, when positive, runs a convergence pass at that interval (what the
	// convergence schedule does in a deployment, every 30 s) and asks cells to stop what a pass
	// says to stop.
	ConvergeEvery time.Duration

	// Temporal runs the BBS workflows and activities on a worker of the cluster's own and lets
	// the API start rollouts.
	Temporal bool
	// TemporalClient is the client of a running Temporal server (e.g. SharedTemporal's) to use
	// when Temporal is set; nil starts an in-memory dev server for the cluster alone. On a
	// server the cluster does not own, the rollout workflows left open on TaskQueue are
	// terminated when the cluster stops.
	TemporalClient client.Client
	// TaskQueue is the worker's and the API's task queue; "" means worker.TaskQueue. Clusters
	// sharing a server need queues of their own (see TaskQueueFor).
	TaskQueue string
	// MaxInFlight and IndexDeadline tune the rollouts the API starts (0: the workflow's
	// defaults).
	MaxInFlight   int
	IndexDeadline time.Duration
	// BeforeStop, when not nil, runs before each stop request of the worker's activities
	// reaches the cells (to inject races with the cells' reports); the ConvergeEvery passes
	// and the API stop without it.
	BeforeStop func(c *Cluster, lrps []model.ActualLRP)
	// CellHeartbeat and CellPoll are the cells' heartbeat and reconciliation intervals, and
	// CellHealthCheck how often a cell checks a RUNNING instance's health (default 1 s each:
	// quick reactions for tests; a fleet of a thousand cells wants production-like intervals
	// instead).
	CellHeartbeat, CellPoll, CellHealthCheck time.Duration
}

// Cluster is a running system.
type Cluster struct {
	Store *db.Store
	// DatabaseURL is the store's database, for processes a test starts of its own.
	DatabaseURL string
	// Stopper asks cells to stop instances (what the API and the activities use).
	Stopper *cell.Stopper
	BBS     *bbsclient.Client
	URL     string
	// Temporal is the Temporal client (nil without Options.Temporal), and TaskQueue the queue
	// of the cluster's worker.
	Temporal  client.Client
	TaskQueue string
	Cells     []*Cell

	t       testing.TB
	backend func(seed int64) executor.Backend
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	onStop  []func() // run, last added first, before the cluster's parts stop
	closers []func() // run, last added first, after they stopped
}

// Cell is one sim cell agent.
type Cell struct {
	ID, Zone string
	Agent    *cell.Agent
	Exec     *executor.Executor
	done     chan error
	cancel   context.CancelFunc
}

// New starts a cluster; everything stops when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	log := zap.NewNop()
	dbURL := dbtest.NewURL(t)
	store, err := db.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	if opts.RestartPolicy != nil {
		store.SetRestartPolicy(*opts.RestartPolicy)
	}
	c := &Cluster{Store: store, DatabaseURL: dbURL, Stopper: &cell.Stopper{Cells: store, Client: cell.NewClient(nil)}, t: t, backend: opts.Backend, opts: opts}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.stop)

	hub := events.NewHub(store, store.Notifications(), events.Options{GapWait: 200 * time.Millisecond, Poll: 200 * time.Millisecond}, log)
	server := api.NewServer(store, c.Stopper, log).WithEvents(hub)
	if opts.Temporal {
		c.startTemporal(server, opts)
	}
	server.MarkReady()
	ts := httptest.NewServer(server)
	c.closers = append(c.closers, ts.Close)
	c.URL = ts.URL
	c.BBS = bbsclient.New(ts.URL, nil)
	placement := auctioneer.New(store, store.Notifications(), cell.NewClient(nil), auctioneer.Options{Interval: 200 * time.Millisecond, Resend: 5 * time.Second, RetryFailed: time.Second}, log)
	c.goRun(func(ctx context.Context) { hub.Run(ctx) })
	c.goRun(func(ctx context.Context) { placement.Run(ctx) })
	if opts.ConvergeEvery > 0 {
		c.goRun(func(ctx context.Context) { c.converge(ctx, opts.ConvergeEvery) })
	}
	zones := max(opts.Zones, 1)
	for i := 0; i < opts.Cells; i++ {
		c.AddCell(fmt.Sprintf("cell-%03d", i+1), fmt.Sprintf("z%d", i%zones+1), opts.Capacity)
	}
	return c
}

func (c *Cluster) goRun(f func(ctx context.Context)) {
	c.wg.Add(1)
	go func() { defer c.wg.Done(); f(c.ctx) }()
}

// converge runs a convergence pass every `every` until ctx ends.
func (c *Cluster) converge(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if res, err := c.Store.Converge(ctx, db.ConvergeOptions{}); err == nil && len(res.ToStop) > 0 {
			_ = c.Stopper.StopInstances(ctx, res.ToStop)
		}
	}
}

// startTemporal starts the worker (and, without Options.TemporalClient, a dev server) and
// attaches the API's RolloutClient to it.
func (c *Cluster) startTemporal(server *api.Server, opts Options) {
	c.TaskQueue = opts.TaskQueue
	if c.TaskQueue == "" {
		c.TaskQueue = worker.TaskQueue
	}
	c.Temporal = opts.TemporalClient
	if c.Temporal == nil {
		ds := startDevServer(c.t)
		c.closers = append(c.closers, func() { ds.Client().Close(); ds.Stop() })
		c.Temporal = ds.Client()
	}
	log := zap.NewNop()
	rc := &workflows.RolloutClient{Client: c.Temporal, TaskQueue: c.TaskQueue, MaxInFlight: opts.MaxInFlight, IndexDeadline: opts.IndexDeadline}
	var stopper activities.Stopper = c.Stopper
	if opts.BeforeStop != nil {
		stopper = hookedStopper{c: c, before: opts.BeforeStop}
	}
	waiter := activities.NewPGWaiter(c.Store.Notifications())
	w := newWorker(c.Temporal, c.TaskQueue, worker.Deps{Store: c.Store, Stopper: stopper, Rollouts: rc, Waiter: waiter, Log: log})
	if err := w.Start(); err != nil {
		c.t.Fatalf("start the worker on %s: %v", c.TaskQueue, err)
	}
	shared := opts.TemporalClient != nil
	c.OnStop(func() {
		if shared {
			terminateOpenRollouts(c.Temporal, c.TaskQueue)
		}
		w.Stop()
	})
	server.WithRollouts(rc)
}

// newWorker is worker.New on any task queue (worker.New is fixed to worker.TaskQueue): the
// same workflows, activities and options.
func newWorker(tc client.Client, queue string, d worker.Deps) sdkworker.Worker {
	if queue == worker.TaskQueue {
		return worker.New(tc, d)
	}
	w := sdkworker.New(tc, queue, sdkworker.Options{MaxConcurrentActivityExecutionSize: 10000})
	w.RegisterWorkflow(workflows.ConvergeWorkflow)
	w.RegisterWorkflow(workflows.RolloutWorkflow)
	w.RegisterActivity(&activities.Converger{Store: d.Store, Stopper: d.Stopper, Log: d.Log})
	w.RegisterActivity(&activities.Resumer{Store: d.Store, Starter: d.Rollouts, Log: d.Log})
	w.RegisterActivity(&activities.Rollouts{Store: d.Store, Stopper: d.Stopper, Waiter: d.Waiter, Log: d.Log})
	return w
}

type hookedStopper struct {
	c      *Cluster
	before func(c *Cluster, lrps []model.ActualLRP)
}

func (h hookedStopper) StopInstances(ctx context.Context, lrps []model.ActualLRP) error {
	h.before(h.c, lrps)
	return h.c.Stopper.StopInstances(ctx, lrps)
}

// AddCell starts one more sim cell.
func (c *Cluster) AddCell(id, zone string, capacity model.CellCapacity) *Cell {
	c.t.Helper()
	seed := int64(len(c.Cells) + 1)
	var backend executor.Backend = sim.New(seed)
	if c.backend != nil {
		backend = c.backend(seed)
	}
	exec := executor.New(backend, executor.Config{
		SkipPortProbe: true, PortRangeStart: 61000, PortRangeEnd: 63000,
		MonitorInterval: 20 * time.Millisecond, HealthyMonitorInterval: cmp.Or(c.opts.CellHealthCheck, time.Second),
		StopGracePeriod: 100 * time.Millisecond,
	}, zap.NewNop())
	heartbeat, poll := cmp.Or(c.opts.CellHeartbeat, time.Second), cmp.Or(c.opts.CellPoll, time.Second)
	agent := cell.New(cell.Config{
		ID: id, Zone: zone, Capacity: capacity,
		HeartbeatInterval: heartbeat, PresenceTTL: 5 * heartbeat, PollInterval: poll,
		EvacuationPoll: 100 * time.Millisecond, EvacuationTimeout: time.Minute,
	}, c.BBS, exec, zap.NewNop())
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

// StopCells stops every cell at once and waits for them: what the store then serves, it
// serves without the fleet's own load on the machine.
func (c *Cluster) StopCells() {
	var wg sync.WaitGroup
	for _, sc := range c.Cells {
		wg.Add(1)
		go func() { defer wg.Done(); sc.Stop() }()
	}
	wg.Wait()
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

// OnStop registers f to run when the test ends, before the cluster's cells, placement and
// API stop (hooks run last added first): for whatever uses the store or the cells.
func (c *Cluster) OnStop(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onStop = append(c.onStop, f)
}

func (c *Cluster) stop() {
	c.mu.Lock()
	hooks := c.onStop
	c.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	c.cancel()
	for _, sc := range c.Cells {
		<-sc.done
	}
	c.wg.Wait()
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
}
