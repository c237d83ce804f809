package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/api/workflowservice/v1"
)

// BenchmarkRolloutGroupFleet rolls one change across 2,000 LRPs of 4 sim instances on 100 sim
// cells as a rollout group — three waves (1 %, 10 %, 100 %), max_concurrent_lrps 100,
// max_concurrent_per_cell 4 — and reports its index steps per second as a ratio to the same
// run's 1,000 independent rollouts started at once (the baseline of the same shape on the same
// cluster, measured first). A fleet-wide sampler checks every 25 ms that no LRP serves fewer
// than its 4 indices and that neither budget is ever exceeded; the group workflow's history
// is reported per run (it continues as new). BENCH_FLEET_LRPS shrinks the group (the baseline
// is half of it). BENCH_FLEET_FAULT=leader replaces the worker process — the placement leader,
// and the worker running the group's activity — once half the members are decided: placement
// is taken over and the activity retried elsewhere, budgets held throughout.
func BenchmarkRolloutGroupFleet(b *testing.B) {
	lrps := 2000
	if v, err := strconv.Atoi(os.Getenv("BENCH_FLEET_LRPS")); err == nil && v > 0 {
		lrps = v
	}
	const perLRP, maxLRPs, maxPerCell = 4, 100, 4
	c := testcluster.New(b, testcluster.Options{Cells: 100, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity:      model.CellCapacity{MemoryMB: 16384, DiskMB: 16384, Containers: 250},
		CellHeartbeat: cellHeartbeat, CellPoll: cellPoll})
	for i := 0; i < b.N; i++ {
		// The baseline: half as many LRPs, each updated on its own, all at once.
		base := lrps / 2
		prefix := fmt.Sprintf("ind%d-", i)
		parallel(b, base, func(j int) error { return c.BBS.DesireLRP(ctx, instantLRP(fmt.Sprintf("%s%04d", prefix, j), perLRP)) })
		running := base * perLRP * (2*i + 1)
		waitRunning(b, c, running, 5*time.Minute)
		var completed int
		if err := c.Store.DB().GetContext(ctx, &completed, `SELECT count(*) FROM rollouts WHERE state = 'completed'`); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		parallel(b, base, func(j int) error {
			return c.BBS.UpdateDesiredLRP(ctx, fmt.Sprintf("%s%04d", prefix, j), &model.DesiredLRPUpdate{Definition: nextDefinition("v2")})
		})
		waitRollouts(b, c, completed+base, 20*time.Minute)
		baseline := float64(base*perLRP) / time.Since(start).Seconds()
		b.Logf("baseline: %d independent rollouts of %d instances at once: %.1f index-steps/s", base, perLRP, baseline)

		// The group, over LRPs of a domain of their own.
		prefix = fmt.Sprintf("grp%d-", i)
		domain := fmt.Sprintf("fleet-%d", i)
		parallel(b, lrps, func(j int) error {
			d := instantLRP(fmt.Sprintf("%s%04d", prefix, j), perLRP)
			d.Domain = domain
			return c.BBS.DesireLRP(ctx, d)
		})
		waitRunning(b, c, running+lrps*perLRP, 10*time.Minute)
		watch := c.WatchFleet(prefix, perLRP)
		id := fmt.Sprintf("bench-fleet-%d", i)
		watch.WatchGroup(id, maxLRPs, maxPerCell)
		start = time.Now()
		if _, err := c.BBS.CreateRolloutGroup(ctx, model.RolloutGroupSpec{GroupID: id,
			Selector:          model.RolloutGroupSelector{Domain: domain},
			Patch:             model.DefinitionPatch{Env: []model.EnvironmentVariable{{Name: "VERSION", Value: "v2"}}},
			Waves:             []model.RolloutWave{{Percent: 1}, {Percent: 10}, {Percent: 100}},
			MaxConcurrentLRPs: maxLRPs, MaxConcurrentPerCell: maxPerCell, MaxFailedPercent: 5}); err != nil {
			b.Fatal(err)
		}
		var g *model.RolloutGroup
		faulted := os.Getenv("BENCH_FLEET_FAULT") != "leader"
		pollPaced(b, 30*time.Minute, time.Millisecond, "members not decided", func() (int, bool) {
			var err error
			if g, err = c.Store.RolloutGroup(ctx, id); err != nil {
				b.Fatal(err)
			}
			left := 0
			for _, w := range g.Waves {
				left += w.Counts[model.MemberPending] + w.Counts[model.MemberRolling]
			}
			if !faulted && left <= lrps/2 {
				faulted = true
				b.Logf("  %s: %d members left: the worker process (placement leader, the group's activity) is replaced", time.Since(start).Round(time.Second), left)
				c.RestartWorker()
			}
			return left, !model.RolloutGroupInProgress(g.State) && g.Budgets.LRPsInUse == 0
		})
		took := time.Since(start)
		samples := watch.Finish(lrps)
		peakLRPs, peakPerCell := watch.GroupPeaks()
		if g.State != model.GroupCompleted {
			b.Fatalf("the group ended %s: %s", g.State, g.Reason)
		}
		ours := float64(lrps*perLRP) / took.Seconds()
		runs, events, peak := groupHistory(b, c, id)
		b.Logf("group: %d LRPs of %d instances in 3 waves: %s (%.1f index-steps/s, %.2f of the baseline); at most %d members rolling (max %d), %d new instances starting on one cell (max %d), over %d fleet-wide samples; its workflow: %d runs, %d history events, at most %d in one run",
			lrps, perLRP, took.Round(time.Millisecond), ours, ours/baseline, peakLRPs, maxLRPs, peakPerCell, maxPerCell, samples, runs, events, peak)
		b.ReportMetric(ours, "index-steps/s")
		b.ReportMetric(baseline, "baseline-steps/s")
		b.ReportMetric(ours/baseline, "baseline-ratio")
		b.ReportMetric(float64(peak), "history-events/run")
	}
	b.ReportMetric(0, "ns/op")
}

// groupHistory counts the runs of a group's workflow and their history events: all of them,
// and the most in one run.
func groupHistory(b *testing.B, c *testcluster.Cluster, id string) (runs, events, peak int) {
	b.Helper()
	resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", model.RolloutGroupWorkflowID(id))})
	if err != nil {
		b.Fatal(err)
	}
	// Visibility lags behind: the latest run's length is read from its description.
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, model.RolloutGroupWorkflowID(id), "")
	if err != nil {
		b.Fatal(err)
	}
	latest := d.GetWorkflowExecutionInfo()
	for _, e := range resp.GetExecutions() {
		runs++
		n := int(e.GetHistoryLength())
		if e.GetExecution().GetRunId() == latest.GetExecution().GetRunId() {
			n = int(latest.GetHistoryLength())
		}
		events += n
		peak = max(peak, n)
	}
	if runs == 0 {
		runs, events, peak = 1, int(latest.GetHistoryLength()), int(latest.GetHistoryLength())
	}
	return runs, events, peak
}
