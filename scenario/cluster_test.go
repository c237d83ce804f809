// Package scenario runs whole-system scenarios in one process: the real API over HTTP on a
// real PostgreSQL, the auctioneer, and cell agents with the sim executor, so that tests can
// run many cells and thousands of instances without processes.
package scenario

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

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
	"go.uber.org/zap"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var ctx = context.Background()

type cluster struct {
	t       *testing.T
	store   *db.Store
	stopper *cell.Stopper
	bbs     *bbsclient.Client
	url     string
	cells   []*simCell
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// backend makes each cell's executor backend (nil: the plain sim backend).
	backend func(seed int64) executor.Backend
	// onStop runs, last added first, before the cluster's own parts stop (e.g. a Temporal
	// worker whose activities use the store and the cells).
	onStop []func()
}

// clusterOption adjusts a cluster before its API serves and its cells start: it may set
// c.backend, wrap the API server (server.WithRollouts), start goroutines on c.ctx under c.wg,
// and register c.onStop hooks.
type clusterOption func(c *cluster, server *api.Server)

type simCell struct {
	id, zone string
	agent    *cell.Agent
	exec     *executor.Executor
	cancel   context.CancelFunc
	done     chan error
}

// newCluster starts the API, placement and n sim cells spread over zones.
func newCluster(t *testing.T, n, zones int, capacity model.CellCapacity, opts ...clusterOption) *cluster {
	t.Helper()
	log := zap.NewNop()
	store := dbtest.NewStore(t)
	store.SetRestartPolicy(model.DefaultRestartPolicy())
	stopper := &cell.Stopper{Cells: store, Client: cell.NewClient(nil)}
	hub := events.NewHub(store, store.URL(), events.Options{GapWait: 200 * time.Millisecond, Poll: 200 * time.Millisecond}, log)
	server := api.NewServer(store, stopper, log).WithEvents(hub)
	c := &cluster{t: t, store: store, stopper: stopper}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, opt := range opts {
		opt(c, server)
	}
	server.MarkReady()
	ts := httptest.NewServer(server)
	c.bbs, c.url = bbsclient.New(ts.URL, nil), ts.URL
	c.wg.Add(1)
	go func() { defer c.wg.Done(); hub.Run(c.ctx) }()
	placement := auctioneer.New(store, cell.NewClient(nil), auctioneer.Options{Interval: 200 * time.Millisecond, Resend: 5 * time.Second, RetryFailed: time.Second}, log)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); placement.Run(c.ctx) }()
	for i := 0; i < n; i++ {
		c.addCell(fmt.Sprintf("cell-%03d", i+1), fmt.Sprintf("z%d", i%zones+1), capacity)
	}
	t.Cleanup(func() {
		for i := len(c.onStop) - 1; i >= 0; i-- {
			c.onStop[i]()
		}
		c.cancel()
		for _, sc := range c.cells {
			<-sc.done
		}
		c.wg.Wait()
		ts.Close()
	})
	return c
}

func (c *cluster) addCell(id, zone string, capacity model.CellCapacity) *simCell {
	var backend executor.Backend = sim.New(int64(len(c.cells) + 1))
	if c.backend != nil {
		backend = c.backend(int64(len(c.cells) + 1))
	}
	exec := executor.New(backend, executor.Config{
		SkipPortProbe: true, PortRangeStart: 61000, PortRangeEnd: 63000,
		MonitorInterval: 20 * time.Millisecond, HealthyMonitorInterval: time.Second, StopGracePeriod: 100 * time.Millisecond,
	}, zap.NewNop())
	agent := cell.New(cell.Config{
		ID: id, Zone: zone, Capacity: capacity,
		HeartbeatInterval: time.Second, PresenceTTL: 5 * time.Second, PollInterval: time.Second,
		EvacuationPoll: 100 * time.Millisecond, EvacuationTimeout: time.Minute,
	}, c.bbs, exec, zap.NewNop())
	cctx, cancel := context.WithCancel(c.ctx)
	sc := &simCell{id: id, zone: zone, agent: agent, exec: exec, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() { sc.done <- agent.Run(cctx, func(string) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-sc.done:
		c.t.Fatalf("cell %s: %v", id, err)
	}
	c.cells = append(c.cells, sc)
	return sc
}

// simLRP is an LRP whose sim instances start after 20 ms and pass their monitor.
func simLRP(guid string, instances int32, env ...model.EnvironmentVariable) *model.DesiredLRP {
	return &model.DesiredLRP{
		ProcessGUID: guid, Domain: "cf-apps", Instances: instances,
		LRPDefinition: model.LRPDefinition{
			RootFS: "preloaded:cflinuxfs4", MemoryMB: 32, DiskMB: 32, Ports: []uint32{8080},
			Env:             append([]model.EnvironmentVariable{{Name: "SIM_START_DELAY_MS", Value: "20"}}, env...),
			Action:          &model.Action{Run: &model.RunAction{Path: "/app/server"}},
			CheckDefinition: &model.CheckDefinition{Checks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080}}}},
		},
	}
}

func (c *cluster) instances(guid string) []model.ActualLRP {
	c.t.Helper()
	lrps, err := c.bbs.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid})
	if err != nil {
		c.t.Fatal(err)
	}
	return lrps
}

func runningIndices(lrps []model.ActualLRP) int {
	seen := map[int32]bool{}
	for _, a := range lrps {
		if a.State == model.StateRunning {
			seen[a.Index] = true
		}
	}
	return len(seen)
}

func (c *cluster) waitFor(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) zoneOf(cellID string) string {
	for _, sc := range c.cells {
		if sc.id == cellID {
			return sc.zone
		}
	}
	return ""
}
