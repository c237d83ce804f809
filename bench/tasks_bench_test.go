package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
)

// BenchmarkTenThousandTasks desires 10,000 sim tasks at once over 100 cells, each with a
// completion callback to a receiver that counts them, and reports tasks completed per second
// (desire to the last callback) and the callback latency: from the task's completion (its
// first_completed_at) to the receiver's arrival, p50 and p99. Every callback must arrive
// exactly once.
func BenchmarkTenThousandTasks(b *testing.B) {
	const tasks, cells = 10000, 100
	c := testcluster.New(b, testcluster.Options{Cells: cells, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity: model.CellCapacity{MemoryMB: 16384, DiskMB: 16384, Containers: 250}})
	var mu sync.Mutex
	arrived := map[string][]time.Time{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var cb model.TaskCallbackResponse
		if err := json.NewDecoder(r.Body).Decode(&cb); err != nil {
			b.Errorf("callback: %v", err)
		}
		mu.Lock()
		arrived[cb.TaskGUID] = append(arrived[cb.TaskGUID], at)
		mu.Unlock()
	}))
	defer recv.Close()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		clear(arrived)
		mu.Unlock()
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for n := range tasks {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t := &model.Task{TaskGUID: fmt.Sprintf("t%d-%05d", i, n), Domain: "bench", TaskDefinition: model.TaskDefinition{
					RootFS: "preloaded:cflinuxfs4", MemoryMB: 16, DiskMB: 16, ResultFile: "/r",
					Env:                   []model.EnvironmentVariable{{Name: "SIM_EXIT_AFTER_MS", Value: "50"}, {Name: "SIM_RESULT", Value: "ok"}},
					Action:                &model.Action{Run: &model.RunAction{Path: "/task"}},
					CompletionCallbackURL: recv.URL}}
				if _, err := c.BBS.DesireTask(ctx, t); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		desired := time.Since(start)
		testwait.Until(b, 10*time.Minute, 100*time.Millisecond, "every callback", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(arrived) == tasks
		})
		took := time.Since(start)
		latencies := callbackLatencies(b, c, i, arrived, &mu)
		time.Sleep(2 * time.Second) // a duplicate would arrive now
		mu.Lock()
		for guid, at := range arrived {
			if len(at) != 1 {
				b.Fatalf("task %s: %d callbacks", guid, len(at))
			}
		}
		mu.Unlock()
		b.Logf("10,000 tasks on %d cells: desired in %s, every callback in %s (%.0f tasks/s); callback latency p50 %s p99 %s",
			cells, desired.Round(time.Millisecond), took.Round(time.Millisecond), tasks/took.Seconds(),
			percentile(latencies, 0.5).Round(time.Millisecond), percentile(latencies, 0.99).Round(time.Millisecond))
		b.ReportMetric(tasks/took.Seconds(), "tasks/s")
		b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "ms/callback-p50")
		b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "ms/callback-p99")
	}
	b.ReportMetric(0, "ns/op")
}

// callbackLatencies reads each task's completion time from its events and returns the
// time from it to the callback's arrival.
func callbackLatencies(b *testing.B, c *testcluster.Cluster, round int, arrived map[string][]time.Time, mu *sync.Mutex) []time.Duration {
	rows, err := c.Store.DB().Query(`SELECT data->'after'->>'task_guid', (data->'after'->>'first_completed_at')::bigint
FROM events WHERE name = 'task_changed' AND data->'after'->>'state' = 'COMPLETED' AND data->'after'->>'task_guid' LIKE $1`,
		fmt.Sprintf("t%d-%%", round))
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	mu.Lock()
	defer mu.Unlock()
	var out []time.Duration
	for rows.Next() {
		var guid string
		var completed int64
		if err := rows.Scan(&guid, &completed); err != nil {
			b.Fatal(err)
		}
		if at := arrived[guid]; len(at) > 0 {
			out = append(out, at[0].Sub(time.Unix(0, completed)))
		}
	}
	if len(out) == 0 {
		b.Fatal("no completion events")
	}
	return out
}
