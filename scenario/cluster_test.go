// Package scenario runs whole-system scenarios in one process (internal/testcluster): the real
// API over HTTP on a real PostgreSQL, the auctioneer, and cell agents with the sim executor,
// so that tests can run many cells and thousands of instances without processes.
package scenario

import (
	"context"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
)

func TestMain(m *testing.M) { dbtest.Main(m, temporaltest.StopShared) }

var ctx = context.Background()

// cluster is a testcluster.Cluster with the scenarios' helpers.
type cluster struct {
	*testcluster.Cluster
	t *testing.T
}

// newCluster starts the API, placement and n sim cells spread over zones.
func newCluster(t *testing.T, n, zones int, capacity model.CellCapacity) *cluster {
	t.Helper()
	return startCluster(t, testcluster.Options{Cells: n, Zones: zones, Capacity: capacity})
}

// startCluster starts a cluster shaped by opts.
func startCluster(t *testing.T, opts testcluster.Options) *cluster {
	t.Helper()
	return &cluster{Cluster: testcluster.New(t, opts), t: t}
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
	lrps, err := c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid})
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
	testwait.Until(c.t, within, 50*time.Millisecond, what, cond)
}

// fastRestarts is DefaultRestartPolicy with a back-off in milliseconds, so that a failing
// instance is retried many times within a test.
func fastRestarts() model.RestartPolicy {
	p := model.DefaultRestartPolicy()
	p.BaseDelay, p.MaxDelay = 100*time.Millisecond, 300*time.Millisecond
	return p
}
