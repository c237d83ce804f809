package bench

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
)

// strategyCluster is the cluster of the strategy benchmarks: room for 110 instances on
// each of 10 cells.
func strategyCluster(b *testing.B) *testcluster.Cluster {
	return testcluster.New(b, testcluster.Options{Cells: 10, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity:      model.CellCapacity{MemoryMB: 8192, DiskMB: 8192, Containers: 110},
		CellHeartbeat: cellHeartbeat, CellPoll: cellPoll})
}

// waitRolloutOf waits until the rollout of guid satisfies done, and returns it.
func waitRolloutOf(b *testing.B, c *testcluster.Cluster, guid string, within time.Duration, done func(*model.Rollout) bool) *model.Rollout {
	b.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := c.BBS.Rollout(ctx, guid)
		if err == nil && done(r) {
			return r
		}
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for the rollout of %s: %+v (%v)", within, guid, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ended(state string) func(*model.Rollout) bool {
	return func(r *model.Rollout) bool { return r.State == state }
}

// BenchmarkRolloutPace rolls a 100-instance LRP at max_in_flight 1 and another at 10 (the
// update's strategy) on the same cluster, every index sampled for a RUNNING instance that is
// not retiring throughout, and reports their index steps per second and the ratio.
//
// It does so twice: with instances that run the moment they start (the walk is all
// orchestration) and with instances that take startDelay to start, as real apps take longer.
func BenchmarkRolloutPace(b *testing.B) {
	const n = 100
	c := strategyCluster(b)
	lrps := 0
	for i := 0; i < b.N; i++ {
		for _, delay := range []time.Duration{0, startDelay} {
			rates := map[int32]float64{}
			for _, pace := range []int32{1, 10} {
				guid := fmt.Sprintf("pace%d-%d-%d", pace, delay.Milliseconds(), i)
				if err := c.BBS.DesireLRP(ctx, instantLRP(guid, n)); err != nil {
					b.Fatal(err)
				}
				lrps++
				waitRunning(b, c, n*lrps, 2*time.Minute)
				watch := c.WatchFleet(guid, n)
				cpu := treeCPU()
				start := time.Now()
				u := &model.DesiredLRPUpdate{Definition: delayedDefinition("v2", delay), Strategy: &model.RolloutStrategy{MaxInFlight: &pace}}
				if err := c.BBS.UpdateDesiredLRP(ctx, guid, u); err != nil {
					b.Fatal(err)
				}
				waitRolloutOf(b, c, guid, 10*time.Minute, ended(model.RolloutCompleted))
				took := time.Since(start)
				spent := treeCPU() - cpu
				samples := watch.Finish(1)
				rates[pace] = n / took.Seconds()
				// The machine's share the walk kept busy (every process of the cluster: the
				// BBS, its cells, PostgreSQL, Temporal): where it nears 1, the machine, not the
				// walk, is the bound.
				busy := spent.Seconds() / took.Seconds() / float64(runtime.NumCPU())
				b.Logf("start %v, max_in_flight %d: %d indices in %s (%.1f index-steps/s), %.1f ms of CPU an index, the machine %.0f%% busy; every index served over %d samples",
					delay, pace, n, took.Round(time.Millisecond), rates[pace], spent.Seconds()*1000/n, busy*100, samples)
			}
			b.Logf("start %v: max_in_flight 10 walks %.2f× as fast as 1 (target ≥ 5)", delay, rates[10]/rates[1])
			suffix := fmt.Sprintf("-start%dms", delay.Milliseconds())
			b.ReportMetric(rates[1], "steps/s-pace1"+suffix)
			b.ReportMetric(rates[10], "steps/s-pace10"+suffix)
			b.ReportMetric(rates[10]/rates[1], "pace10-ratio"+suffix)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// startDelay is how long an instance of the benchmarks' "real" apps takes to start.
const startDelay = 300 * time.Millisecond

// delayedDefinition is nextDefinition whose instances take delay to start.
func delayedDefinition(id string, delay time.Duration) *model.LRPDefinition {
	d := nextDefinition(id)
	if delay > 0 {
		d.Env = append(d.Env, model.EnvironmentVariable{Name: "SIM_START_DELAY_MS", Value: fmt.Sprint(delay.Milliseconds())})
	}
	return d
}

// BenchmarkRevert50 walks a 50-instance LRP forward at max_in_flight 1 until 45 indices run
// the new definition, then sets the pace to 5 and aborts: the revert walks those indices back.
// It reports both times over the same indices and their ratio (target ≤ 1/4), with every
// index sampled throughout.
//
// It does so with instances that run the moment they start and with instances that take
// startDelay, as BenchmarkRolloutPace does.
func BenchmarkRevert50(b *testing.B) {
	const n, walked = 50, 45
	c := strategyCluster(b)
	lrps := 0
	for i := 0; i < b.N; i++ {
		for _, delay := range []time.Duration{0, startDelay} {
			guid := fmt.Sprintf("revert50-%d-%d", delay.Milliseconds(), i)
			if err := c.BBS.DesireLRP(ctx, instantLRP(guid, n)); err != nil {
				b.Fatal(err)
			}
			lrps++
			waitRunning(b, c, n*lrps, 2*time.Minute)
			watch := c.WatchFleet(guid, n)
			one := int32(1)
			start := time.Now()
			u := &model.DesiredLRPUpdate{Definition: delayedDefinition("v2", delay), Strategy: &model.RolloutStrategy{MaxInFlight: &one}}
			if err := c.BBS.UpdateDesiredLRP(ctx, guid, u); err != nil {
				b.Fatal(err)
			}
			at := waitRolloutOf(b, c, guid, 5*time.Minute, func(r *model.Rollout) bool { return r.UpdatedInstances >= walked }).UpdatedInstances
			forward := time.Since(start)
			if _, err := c.BBS.SetRolloutPace(ctx, guid, 5); err != nil {
				b.Fatal(err)
			}
			if _, err := c.BBS.AbortRollout(ctx, guid, "benchmark"); err != nil {
				b.Fatal(err)
			}
			back := time.Now()
			waitRolloutOf(b, c, guid, 5*time.Minute, ended(model.RolloutReverted))
			reverted := time.Since(back)
			samples := watch.Finish(1)
			// The indices walked forward and back differ by the index in flight at the abort.
			ratio := reverted.Seconds() / forward.Seconds()
			b.Logf("start %v: forward at max_in_flight 1: %d indices in %s; revert at 5 (aborted at %d updated): %s — %.2f of the forward time (target ≤ 0.25); every index served over %d samples",
				delay, walked, forward.Round(time.Millisecond), at, reverted.Round(time.Millisecond), ratio, samples)
			suffix := fmt.Sprintf("-start%dms", delay.Milliseconds())
			b.ReportMetric(forward.Seconds(), "s-forward"+suffix)
			b.ReportMetric(reverted.Seconds(), "s-revert"+suffix)
			b.ReportMetric(ratio, "revert-ratio"+suffix)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCrashLoopDetection rolls a 4-instance LRP to a definition whose instances fail at
// start, and reports the time from the store recording the new instance's third crash to the
// rollout turning to its revert (both events' commit times), and to its end.
func BenchmarkCrashLoopDetection(b *testing.B) {
	c := strategyCluster(b)
	for i := 0; i < b.N; i++ {
		guid := fmt.Sprintf("crashloop-%d", i)
		if err := c.BBS.DesireLRP(ctx, instantLRP(guid, 4)); err != nil {
			b.Fatal(err)
		}
		waitRunning(b, c, 4*(i+1), time.Minute)
		def := nextDefinition("v2")
		def.Env = append(def.Env, model.EnvironmentVariable{Name: "SIM_FAIL_START", Value: "1"})
		if err := c.BBS.UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: def}); err != nil {
			b.Fatal(err)
		}
		waitRolloutOf(b, c, guid, 2*time.Minute, ended(model.RolloutReverted))
		var at struct {
			Crash  time.Time `db:"crash"`
			Revert time.Time `db:"revert"`
			End    time.Time `db:"finished"`
		}
		if err := c.Store.DB().GetContext(ctx, &at, `SELECT
    (SELECT min(created_at) FROM events WHERE name = 'actual_lrp_instance_crashed' AND data->>'process_guid' = $1
        AND data->>'definition_id' = 'v2' AND (data->>'crash_count')::int >= 3) AS crash,
    (SELECT min(created_at) FROM events WHERE name = 'rollout_changed' AND data->>'process_guid' = $1
        AND data->>'state' = 'canceling') AS revert,
    (SELECT finished_at FROM rollouts WHERE process_guid = $1) AS finished`, guid); err != nil {
			b.Fatal(err)
		}
		detect, end := at.Revert.Sub(at.Crash), at.End.Sub(at.Crash)
		b.Logf("third crash → revert began: %s (target ≤ 2 s); → reverted: %s", detect.Round(time.Millisecond), end.Round(time.Millisecond))
		b.ReportMetric(float64(detect.Microseconds())/1000, "ms-crash-to-revert")
		b.ReportMetric(float64(end.Microseconds())/1000, "ms-crash-to-reverted")
	}
	b.ReportMetric(0, "ns/op")
}
