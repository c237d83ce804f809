// Package bench holds the benchmarks `make bench` runs; their figures go to
// docs/BENCHMARKS.md. Each builds the whole system in one process (internal/testcluster):
// the API on PostgreSQL, placement, sim cells, and a Temporal dev server with the worker.
// BenchmarkCluster (`make bench-cluster`) runs the rollout and task benchmarks again on
// `bbs cluster`'s processes (cluster_test.go), each written once over a target.
package bench

import (
	"context"
	"database/sql"
	"fmt"

	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/gctune"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
)

// TestMain runs the benchmarks with the collector set as `bbs` sets it in every process
// (gctune): the benchmarks run the BBS's parts inside this test process.
func TestMain(m *testing.M) {
	gctune.Apply()
	dbtest.Main(m, temporaltest.StopShared)
}

var ctx = context.Background()

// instantLRP is an LRP whose sim instances are RUNNING as soon as they start (no monitor),
// so that a rollout's time is all orchestration.
func instantLRP(guid string, instances int32) *model.DesiredLRP {
	return &model.DesiredLRP{
		ProcessGUID: guid, Domain: "bench", Instances: instances,
		LRPDefinition: model.LRPDefinition{RootFS: "preloaded:cflinuxfs4", MemoryMB: 16, DiskMB: 16,
			Action: &model.Action{Run: &model.RunAction{Path: "/app"}}},
	}
}

func nextDefinition(id string) *model.LRPDefinition {
	d := instantLRP("x", 1).LRPDefinition
	d.DefinitionID = id
	d.Env = []model.EnvironmentVariable{{Name: "VERSION", Value: id}}
	return &d
}

// waitRunning waits for want RUNNING instances, logging progress every 15 s.
//
// Counting what is not RUNNING reads the partial index on state (counting what is RUNNING
// read every instance and took a core from the system being measured), but with 100,000
// instances waiting one count still costs PostgreSQL ~25 ms: polled every 50 ms that was a
// fifth of a core taken from the placement being timed. The poll waits about a quarter of
// the time the instances still waiting would take at 2,000 a second, between 20 ms and
// 1 s, so that it is as cheap while many wait as it is prompt once few do. The total is
// counted once nothing waits.
func waitRunning(b *testing.B, c database, want int, within time.Duration) {
	b.Helper()
	pollPaced(b, within, time.Second/2000/4, "instances not RUNNING", func() (int, bool) {
		var waiting, total int
		if err := c.DB().GetContext(ctx, &waiting, `SELECT count(*) FROM actual_lrps WHERE state <> 'RUNNING'`); err != nil {
			b.Fatal(err)
		}
		if waiting > 0 {
			return waiting, false
		}
		if err := c.DB().GetContext(ctx, &total, `SELECT count(*) FROM actual_lrps`); err != nil {
			b.Fatal(err)
		}
		return 0, total == want
	})
}

// waitRollouts waits until want rollouts have completed, polling at the pace of what is left
// (1 ms per rollout under way): a count every 20 ms was 3 % of PostgreSQL's time while 1,000
// rollouts ran.
func waitRollouts(b *testing.B, c database, want int, within time.Duration) {
	b.Helper()
	pollPaced(b, within, time.Millisecond, "rollouts not completed", func() (int, bool) {
		var n int
		if err := c.DB().GetContext(ctx, &n, `SELECT count(*) FROM rollouts WHERE state = 'completed'`); err != nil {
			b.Fatal(err)
		}
		return want - n, n == want
	})
}

// pollPaced calls check until it says done, failing after within. Between calls it waits
// perLeft for each of what check says is left, between 20 ms and 1 s — as cheap for the
// system measured while much is left as it is prompt once little is — and every 15 s it logs
// how much is left.
func pollPaced(b *testing.B, within, perLeft time.Duration, what string, check func() (left int, done bool)) {
	b.Helper()
	start := time.Now()
	logged := start
	for {
		left, done := check()
		if done {
			return
		}
		if time.Since(logged) > 15*time.Second {
			logged = time.Now()
			b.Logf("  %s: %d %s yet", time.Since(start).Round(time.Second), left, what)
		}
		if time.Since(start) > within {
			b.Fatalf("timed out after %s: %d %s", within, left, what)
		}
		time.Sleep(min(time.Second, max(20*time.Millisecond, time.Duration(left)*perLeft)))
	}
}

// indexDurations are the times between consecutive index completions of one rollout, read
// from the rollout_changed events the workflow writes after every index.
func indexDurations(b *testing.B, c database, guid string, start time.Time) []time.Duration {
	var rows []struct {
		At      time.Time `db:"created_at"`
		Updated int       `db:"updated"`
	}
	if err := c.DB().SelectContext(ctx, &rows, `SELECT created_at, (data->>'updated_instances')::int AS updated
FROM events WHERE name = 'rollout_changed' AND data->>'process_guid' = $1 AND data->>'state' = 'active'
ORDER BY id`, guid); err != nil {
		b.Fatal(err)
	}
	var out []time.Duration
	prev, seen := start, 0
	for _, r := range rows {
		if r.Updated > seen {
			out = append(out, r.At.Sub(prev))
			prev, seen = r.At, r.Updated
		}
	}
	return out
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// The rollout benchmarks' cells heartbeat and reconcile in full as `bbs cell` does by default
// (cmd/bbs/cell.go), not at the test cluster's 1 s: forty cells each listing its instances
// every second were a tenth of the benchmark process's CPU, work a deployment does not do.
const (
	cellHeartbeat = 3 * time.Second
	cellPoll      = 5 * time.Second
)

// BenchmarkRolloutStep50 measures the orchestration one index of a rollout costs: a
// 50-instance LRP whose instances run the moment they start is rolled to a new definition,
// and every index's time — desire the new instance, place it, the cell claims and starts it,
// the wait sees it RUNNING, retire the old one — is read from the store's events.
func BenchmarkRolloutStep50(b *testing.B) {
	c := testcluster.New(b, testcluster.Options{Cells: 10, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity:      model.CellCapacity{MemoryMB: 8192, DiskMB: 8192, Containers: 100},
		CellHeartbeat: cellHeartbeat, CellPoll: cellPoll})
	rolloutStep50(b, inProcess{c})
}

// rolloutStep50 is BenchmarkRolloutStep50 on s.
func rolloutStep50(b *testing.B, s target) {
	var all []time.Duration
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		guid := fmt.Sprintf("step50-%d", i)
		if err := s.API().DesireLRP(ctx, instantLRP(guid, 50)); err != nil {
			b.Fatal(err)
		}
		waitRunning(b, s, 50*(i+1), time.Minute)
		cpu0, parts := s.CPU()
		stopProfile := profileWindow(b)
		start := time.Now()
		if err := s.API().UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: nextDefinition("v2")}); err != nil {
			b.Fatal(err)
		}
		waitRollouts(b, s, i+1, 5*time.Minute)
		took := time.Since(start)
		stopProfile()
		cpu1, now := s.CPU()
		cpu += cpu1 - cpu0
		d := indexDurations(b, s, guid, start)
		all = append(all, d...)
		b.Logf("50-instance rollout %d: %s in all, %s per index on average", i, took.Round(time.Millisecond), (took / 50).Round(time.Millisecond))
		b.Logf("  phases of an index (median): %s", rolloutPhases(b, s, guid, guid, "v2"))
		b.Logf("  CPU per index: %s", cpuPerStep(parts, now, 50))
	}
	p50 := percentile(all, 0.5)
	b.ReportMetric(float64(p50.Microseconds())/1000, "ms/index-p50")
	b.ReportMetric(float64(percentile(all, 0.9).Microseconds())/1000, "ms/index-p90")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(50*b.N), "cpu-ms/index")
	// The floor beside it, on the same server: one workflow of 50 steps of a stepwise
	// rollout's shape, and one of an index run's.
	steps, _ := floor(b, s.TemporalClient(), 1, 50, false)
	fp50 := percentile(steps, 0.5)
	b.Logf("floor: 50 steps of a stepwise rollout's shape doing nothing: %.1f ms/step p50, %.1f p90; ours %.2f of its speed",
		float64(fp50.Microseconds())/1000, float64(percentile(steps, 0.9).Microseconds())/1000, float64(fp50)/float64(p50))
	b.ReportMetric(float64(fp50.Microseconds())/1000, "floor-ms/step-p50")
	b.ReportMetric(float64(fp50)/float64(p50), "floor-ratio")
	_, runRate := floor(b, s.TemporalClient(), 1, 50, true)
	b.Logf("floor: 50 steps in the shape of an index run doing nothing: %.2f ms/step on average (the rollout's start and end spread over its steps); ours %.2f of its speed",
		1000/runRate, 1000/runRate/(float64(p50.Microseconds())/1000))
	b.ReportMetric(1000/runRate, "run-floor-ms/step")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkThousandRollouts starts 1,000 rollouts of 4-instance LRPs at once and reports the
// index steps completed per second until all have finished. Throughout, every LRP's
// instances are sampled (one statement over the whole fleet, every 25 ms) and the rollouts
// issue's invariant is checked for each: all 4 indices keep a RUNNING instance that is not
// retiring.
func BenchmarkThousandRollouts(b *testing.B) {
	c := testcluster.New(b, testcluster.Options{Cells: 40, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity:      model.CellCapacity{MemoryMB: 16384, DiskMB: 16384, Containers: 250},
		CellHeartbeat: cellHeartbeat, CellPoll: cellPoll})
	thousandRollouts(b, inProcess{c}, 1000)
}

// thousandRollouts is BenchmarkThousandRollouts on s, with lrps rollouts.
func thousandRollouts(b *testing.B, s target, lrps int) {
	const perLRP = 4
	for i := 0; i < b.N; i++ {
		prefix := fmt.Sprintf("r%d-", i)
		parallel(b, lrps, func(j int) error { return s.API().DesireLRP(ctx, instantLRP(fmt.Sprintf("%s%04d", prefix, j), perLRP)) })
		waitRunning(b, s, lrps*perLRP*(i+1), 5*time.Minute)
		watch := s.WatchFleet(prefix, perLRP)
		sampling0 := backendCPU(watch)
		cpu0, parts := s.CPU()
		pools0 := poolWaits(s)
		stopProfile := profileWindow(b)
		if os.Getenv("BENCH_PGSS") != "" {
			// Statements of the measured stretch only, on a DATABASE_URL server that loads
			// pg_stat_statements (how docs/BENCHMARKS.md's statement counts are taken).
			if _, err := s.DB().ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
				b.Fatalf("BENCH_PGSS: %v", err)
			}
		}
		start := time.Now()
		parallel(b, lrps, func(j int) error {
			return s.API().UpdateDesiredLRP(ctx, fmt.Sprintf("%s%04d", prefix, j), &model.DesiredLRPUpdate{Definition: nextDefinition("v2")})
		})
		waitRollouts(b, s, lrps*(i+1), 20*time.Minute)
		took := time.Since(start)
		stopProfile()
		pools := poolWaits(s)
		sampling := backendCPU(watch) - sampling0
		cpu1, now := s.CPU()
		cpu := cpu1 - cpu0 - sampling
		parts["postgres"] += sampling
		b.Logf("CPU per index step: %s(the invariant's sampling, left out: postgres %.1f ms)", cpuPerStep(parts, now, lrps*perLRP),
			float64(sampling.Microseconds())/1000/float64(lrps*perLRP))
		// Where the time went, read after the CPU (these reads are not the run's).
		logRolloutCurve(b, s, prefix, start)
		logRolloutTimelines(b, s, prefix, 100)
		for k, name := range []string{"the API's", "the worker's"} {
			if k < len(pools) {
				b.Logf("%s connection pool: %d waits for a connection, %s waited in all", name,
					pools[k].WaitCount-pools0[k].WaitCount, (pools[k].WaitDuration - pools0[k].WaitDuration).Round(time.Millisecond))
			}
		}
		samples := watch.Finish(lrps)
		var onV2 int
		if err := s.DB().GetContext(ctx, &onV2, `SELECT count(*) FROM actual_lrps
WHERE process_guid LIKE $1 AND definition_id = 'v2' AND state = 'RUNNING' AND NOT retiring`, prefix+"%"); err != nil {
			b.Fatal(err)
		}
		if onV2 != lrps*perLRP {
			b.Fatalf("%d of %d instances RUNNING v2 after every rollout completed", onV2, lrps*perLRP)
		}
		b.Logf("%d rollouts of %d instances: all completed in %s (%.1f index-steps/s); every LRP kept %d of %d indices served over %d fleet-wide samples",
			lrps, perLRP, took.Round(time.Millisecond), float64(lrps*perLRP)/took.Seconds(), perLRP, perLRP, samples)
		ours := float64(lrps*perLRP) / took.Seconds()
		b.ReportMetric(ours, "index-steps/s")
		b.ReportMetric(took.Seconds(), "s/1000-rollouts")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(lrps*perLRP), "cpu-ms/index")
		// The floor beside it, on the same server: 1,000 workflows of 4 steps of the same
		// shape at once.
		_, fl := floor(b, s.TemporalClient(), lrps, perLRP, false)
		b.Logf("floor: %d workflows of %d steps of a stepwise rollout's shape doing nothing: %.1f steps/s; ours %.2f of it", lrps, perLRP, fl, ours/fl)
		b.ReportMetric(fl, "floor-steps/s")
		b.ReportMetric(ours/fl, "floor-ratio")
		// Its CPU is Temporal's and the SDK's own for a rollout's shape: ours less it is the
		// BBS's work of a step.
		fcpu0, fparts := s.CPU()
		_, rfl := floor(b, s.TemporalClient(), lrps, perLRP, true)
		fcpu1, fnow := s.CPU()
		b.Logf("floor: %d workflows of %d steps in the shape of an index run doing nothing: %.1f steps/s; ours %.2f of it; its CPU per step: %s",
			lrps, perLRP, rfl, ours/rfl, cpuPerStep(fparts, fnow, lrps*perLRP))
		b.ReportMetric(float64((fcpu1-fcpu0).Microseconds())/1000/float64(lrps*perLRP), "run-floor-cpu-ms/step")
		b.ReportMetric(rfl, "run-floor-steps/s")
		// The rollouts walk in index runs (unless BENCH_ROLLOUT_WALK=steps): this floor is
		// the one of their own shape.
		b.ReportMetric(ours/rfl, "run-floor-ratio")
	}
	b.ReportMetric(0, "ns/op")
}

// poolWaits are the API's and the worker's connection pools' statistics, where they are in
// this process (none for a cluster's processes).
func poolWaits(s target) []sql.DBStats {
	ip, ok := s.(inProcess)
	if !ok {
		return nil
	}
	return []sql.DBStats{ip.Store.DB().Stats(), ip.WorkerStore.DB().Stats()}
}

func parallel(b *testing.B, n int, f func(i int) error) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
}
