// Package testcluster runs the whole system inside one test process: the real HTTP API on a
// real PostgreSQL (internal/dbtest), the event hub, placement, cell agents with the sim
// executor, and, when asked, a Temporal dev server with the BBS worker — so that tests and
// benchmarks can drive thousands of instances and rollouts without processes.
package testcluster

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
)

// Options shape a cluster.
type Options struct {
	Cells, Zones int
	Capacity     model.CellCapacity
	// Temporal starts a dev server (in memory) and the BBS worker, and lets the API start
	// rollouts.
	Temporal bool
	// MaxInFlight and IndexDeadline tune the rollouts the API starts.
	MaxInFlight   int
	IndexDeadline time.Duration
}

// Cluster is a running system.
type Cluster struct {
	Store    *db.Store
	BBS      *bbsclient.Client
	URL      string
	Temporal client.Client
	Cells    []*Cell

	t      testing.TB
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Cell is one sim cell agent.
type Cell struct {
	ID, Zone string
	Agent    *cell.Agent
	Exec     *executor.Executor
	done     chan error
}

// TemporalBin finds the temporal CLI: $TEMPORAL_BIN, else bin/temporal above the working
// directory; "" when there is none.
func TemporalBin() string {
	if p := os.Getenv("TEMPORAL_BIN"); p != "" {
		return p
	}
	for dir, _ := os.Getwd(); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "bin", "temporal"); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// New starts a cluster; everything stops when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	log := zap.NewNop()
	store := dbtest.NewStore(t)
	c := &Cluster{Store: store, t: t}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.stop)

	hub := events.NewHub(store, store.URL(), events.Options{GapWait: 200 * time.Millisecond, Poll: 200 * time.Millisecond}, log)
	server := api.NewServer(store, &cell.Stopper{Cells: store, Client: cell.NewClient(nil)}, log).WithEvents(hub)
	if opts.Temporal {
		c.startTemporal(server, opts)
	}
	server.MarkReady()
	ts := httptest.NewServer(server)
	c.URL = ts.URL
	c.BBS = bbsclient.New(ts.URL, nil)
	placement := auctioneer.New(store, cell.NewClient(nil), auctioneer.Options{Interval: 200 * time.Millisecond, Resend: 5 * time.Second, RetryFailed: time.Second}, log)
	c.goRun(func(ctx context.Context) { hub.Run(ctx) })
	c.goRun(func(ctx context.Context) { placement.Run(ctx) })
	t.Cleanup(ts.Close)
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

func (c *Cluster) startTemporal(server *api.Server, opts Options) {
	bin := TemporalBin()
	if bin == "" {
		c.t.Skip("no temporal CLI (TEMPORAL_BIN or bin/temporal); `make test` builds it")
	}
	var extra []string
	for name, typ := range temporaldev.SearchAttributes {
		extra = append(extra, "--search-attribute", name+"="+typ)
	}
	extra = append(extra, "--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1")
	ds, err := testsuite.StartDevServer(c.ctx, testsuite.DevServerOptions{ExistingPath: bin, LogLevel: "error", ExtraArgs: extra,
		Stdout: io.Discard, Stderr: io.Discard,
		ClientOptions: &client.Options{Logger: quietLogger{}}})
	if err != nil {
		c.t.Fatalf("start the Temporal dev server: %v", err)
	}
	c.t.Cleanup(func() { ds.Stop() })
	c.Temporal = ds.Client()
	waiter := activities.NewPGWaiter(c.Store.URL(), zap.NewNop())
	c.t.Cleanup(func() { waiter.Close() })
	rc := &workflows.RolloutClient{Client: c.Temporal, TaskQueue: worker.TaskQueue, MaxInFlight: opts.MaxInFlight, IndexDeadline: opts.IndexDeadline}
	w := worker.New(c.Temporal, worker.Deps{Store: c.Store, Stopper: &cell.Stopper{Cells: c.Store, Client: cell.NewClient(nil)},
		Rollouts: rc, Waiter: waiter, Log: zap.NewNop()})
	if err := w.Start(); err != nil {
		c.t.Fatalf("start the worker: %v", err)
	}
	c.t.Cleanup(w.Stop)
	server.WithRollouts(rc)
}

// AddCell starts one more sim cell.
func (c *Cluster) AddCell(id, zone string, capacity model.CellCapacity) *Cell {
	c.t.Helper()
	exec := executor.New(sim.New(int64(len(c.Cells)+1)), executor.Config{
		SkipPortProbe: true, PortRangeStart: 61000, PortRangeEnd: 63000,
		MonitorInterval: 20 * time.Millisecond, HealthyMonitorInterval: time.Second, StopGracePeriod: 100 * time.Millisecond,
	}, zap.NewNop())
	agent := cell.New(cell.Config{
		ID: id, Zone: zone, Capacity: capacity,
		HeartbeatInterval: time.Second, PresenceTTL: 5 * time.Second, PollInterval: time.Second,
		EvacuationPoll: 100 * time.Millisecond, EvacuationTimeout: time.Minute,
	}, c.BBS, exec, zap.NewNop())
	sc := &Cell{ID: id, Zone: zone, Agent: agent, Exec: exec, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() { sc.done <- agent.Run(c.ctx, func(string) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-sc.done:
		c.t.Fatalf("cell %s: %v", id, err)
	}
	c.Cells = append(c.Cells, sc)
	return sc
}

func (c *Cluster) stop() {
	c.cancel()
	for _, sc := range c.Cells {
		<-sc.done
	}
	c.wg.Wait()
}

// quietLogger keeps the SDK's client logs out of benchmark output.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
