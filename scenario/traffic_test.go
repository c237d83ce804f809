package scenario

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/router"
	"go.uber.org/zap"
)

// heldReports is a router's line to the BBS that holds its reports back while held: the
// router applies splits, but the BBS does not hear of it.
type heldReports struct {
	bbs  router.ReportBBS
	mu   sync.Mutex
	held bool
}

func (h *heldReports) ReportRouter(ctx context.Context, r model.RouterReport) error {
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	if held {
		return context.DeadlineExceeded
	}
	return h.bbs.ReportRouter(ctx, r)
}

func (h *heldReports) hold(b bool) {
	h.mu.Lock()
	h.held = b
	h.mu.Unlock()
}

// startRouter runs a router's table, route emitter and reporter against the cluster, its
// reports through line.
func (c *cluster) startRouter(id string, line func(router.ReportBBS) router.ReportBBS) *router.Table {
	c.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	table := router.NewTable()
	reporter := router.NewReporter(line(c.BBS), table, router.NewTelemetry(), id, zap.NewNop())
	emitter := &router.Emitter{BBS: c.BBS, Table: table, Log: zap.NewNop(), Applied: reporter.Poke}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); reporter.Run(ctx) }()
	go func() { defer wg.Done(); emitter.Run(ctx) }()
	c.t.Cleanup(func() { cancel(); wg.Wait() })
	return table
}

// A weighted step's pause starts only once every live router acknowledged its weight: with
// one of two routers' reports held back the step waits (its weight applied by the other, the
// rollout reporting no traffic); released, the step goes on. A router silent for longer than
// the liveness bound is not waited for.
func TestWeightedStepWaitsForEveryRouter(t *testing.T) {
	c := newRolloutCluster(t, rolloutOptions{})
	held := &heldReports{}
	c.startRouter("router-a", func(b router.ReportBBS) router.ReportBBS { return b })
	late := c.startRouter("router-b", func(b router.ReportBBS) router.ReportBBS { held.bbs = b; return held })
	c.createDeployment("web", 4, "v1", simDefinition())
	c.waitLRP("web", "4 RUNNING on v1", 30*time.Second, func() bool { return c.allOn("web", "v1", 4) })
	c.waitFor("both routers live", 10*time.Second, func() bool {
		var n int
		c.Store.DB().Get(&n, `SELECT count(*) FROM routers WHERE seen_at > now() - interval '5 seconds'`)
		return n == 2
	})

	held.hold(true)
	c.updateWithStrategy("web", "v2", simDefinition(env("V", "2")), map[string]any{
		"canary": map[string]any{"steps": []map[string]any{{"instances": 1, "weight": 25, "pause_ms": 300}}}})
	c.waitLRP("web", "router-b to apply the weight", 30*time.Second, func() bool {
		return c.deployment("web").Traffic != nil && late.Applied()["web"] == c.deployment("web").Traffic.Generation
	})
	// Held for well over the step's pause: the step waits, reporting no traffic yet.
	time.Sleep(2 * time.Second)
	r := c.rollout("web")
	if r.Traffic != nil || r.Phase != model.PhaseCanary || r.UpdatedInstances != 1 {
		t.Fatalf("with a router's acknowledgement held back the step went on: phase %s, traffic %v, %d updated", r.Phase, r.Traffic, r.UpdatedInstances)
	}
	held.hold(false)
	c.waitLRP("web", "the rollout to complete once router-b acknowledged", 60*time.Second, func() bool {
		return c.rollout("web").State == model.RolloutCompleted && c.allOn("web", "v2", 4)
	})
	if r := c.rollout("web"); r.TrafficGeneration == 0 {
		t.Fatalf("the rollout never recorded an acknowledged split: %+v", r)
	}

	// A router that stops reporting (gone) is waited for only until it counts as gone.
	held.hold(true)
	c.updateWithStrategy("web", "v3", simDefinition(env("V", "3")), map[string]any{
		"canary": map[string]any{"steps": []map[string]any{{"instances": 1, "weight": 25, "pause_ms": 300}}}})
	c.waitLRP("web", "the rollout past a silent router", time.Duration(3)*model.RouterLiveness+30*time.Second, func() bool {
		return c.rollout("web").State == model.RolloutCompleted && c.allOn("web", "v3", 4)
	})
}
