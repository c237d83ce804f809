package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
)

// BenchmarkTenThousandTasks desires 10,000 sim tasks at once over 100 cells, three times in
// the same cluster: without a callback, a client resolving and deleting each task as its
// completion event arrives (what a client without callbacks does); then each with a
// completion callback to a receiver that counts them; then without again. It reports tasks
// per second with callbacks (desire to the last callback) and without (desire to the last
// delete, the mean of both runs), their ratio, and the callback
// latency: from the task's completion (its first_completed_at) to the receiver's arrival,
// p50 and p99. Every callback must arrive exactly once.
func BenchmarkTenThousandTasks(b *testing.B) { benchmarkTasks(b, 10000) }

// BenchmarkThreeHundredTasks is BenchmarkTenThousandTasks with 300 tasks: what a burst of
// staging looks like, where the callback latency is the figure that matters.
func BenchmarkThreeHundredTasks(b *testing.B) { benchmarkTasks(b, 300) }

func benchmarkTasks(b *testing.B, tasks int) {
	const cells = 100
	c := testcluster.New(b, testcluster.Options{Cells: cells, Zones: 2, TemporalClient: temporaltest.New(b),
		Capacity: model.CellCapacity{MemoryMB: 16384, DiskMB: 16384, Containers: 250}})
	tasksWithAndWithoutCallbacks(b, inProcess{c}, cells, tasks)
}

// tasksWithAndWithoutCallbacks is BenchmarkTenThousandTasks with tasks tasks on s, whose
// cells it names in its log.
func tasksWithAndWithoutCallbacks(b *testing.B, c target, cells, tasks int) {
	recv := newCallbackReceiver(b)
	defer recv.Close()
	for i := 0; i < b.N; i++ {
		plain := runTasksResolvedByClient(b, c, tasks, fmt.Sprintf("n%d-", i))
		recv.clear()
		prefix := fmt.Sprintf("c%d-", i)
		start := time.Now()
		desired := desireTasks(b, c, tasks, prefix, "bench", recv.URL)
		testwait.Until(b, 10*time.Minute, 20*time.Millisecond, "every callback", func() bool {
			return recv.count() == tasks
		})
		took := time.Since(start)
		latencies := callbackLatencies(b, c, prefix, recv)
		time.Sleep(2 * time.Second) // a duplicate would arrive now
		recv.checkOnce(b)
		// The run without callbacks again, after: the machine drifts, and the database grows
		// from run to run, so the figure with callbacks is compared with the mean of one
		// before and one after.
		plainAfter := runTasksResolvedByClient(b, c, tasks, fmt.Sprintf("m%d-", i))
		withCB := float64(tasks) / took.Seconds()
		without := (float64(tasks)/plain.Seconds() + float64(tasks)/plainAfter.Seconds()) / 2
		b.Logf("%d tasks on %d cells: without callbacks every task deleted in %s and %s (%.0f tasks/s); "+
			"with callbacks desired in %s, every callback in %s (%.0f tasks/s, %.2f of without); callback latency p50 %s p99 %s",
			tasks, cells, plain.Round(time.Millisecond), plainAfter.Round(time.Millisecond), without, desired.Round(time.Millisecond), took.Round(time.Millisecond),
			withCB, withCB/without, percentile(latencies, 0.5).Round(time.Millisecond), percentile(latencies, 0.99).Round(time.Millisecond))
		b.ReportMetric(withCB, "tasks/s")
		b.ReportMetric(without, "tasks/s-without-callbacks")
		b.ReportMetric(withCB/without, "ratio-to-without")
		b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "ms/callback-p50")
		b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "ms/callback-p99")
	}
	b.ReportMetric(0, "ns/op")
}

// desireTasks desires n sim tasks in domain, named prefix and a number, through 16 clients at once,
// each exiting 0 after 50 ms with a result and calling back callbackURL ("": none); it
// returns how long desiring them took.
func desireTasks(b *testing.B, c target, n int, prefix, domain, callbackURL string) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for k := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t := &model.Task{TaskGUID: fmt.Sprintf("%s%05d", prefix, k), Domain: domain, TaskDefinition: model.TaskDefinition{
				RootFS: "preloaded:cflinuxfs4", MemoryMB: 16, DiskMB: 16, ResultFile: "/r",
				Env:                   []model.EnvironmentVariable{{Name: "SIM_EXIT_AFTER_MS", Value: "50"}, {Name: "SIM_RESULT", Value: "ok"}},
				Action:                &model.Action{Run: &model.RunAction{Path: "/task"}},
				CompletionCallbackURL: callbackURL}}
			if _, err := c.API().DesireTask(ctx, t); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// runTasksResolvedByClient desires n tasks without a callback while a client follows the
// task events and, through 16 connections, resolves and deletes each task that completes;
// it returns the time from the first desire to the last delete. As a careful client does,
// it lists the tasks of its domain whenever a second passes without a completion (a stream
// that broke, or events it missed), and resubscribes to a stream that ended.
func runTasksResolvedByClient(b *testing.B, c target, n int, prefix string) time.Duration {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	domain := "bench-" + strings.TrimSuffix(prefix, "-")
	completed := make(chan string, n)
	var mu sync.Mutex
	seen := map[string]bool{}
	lastSeen := time.Now()
	found := func(guid string) {
		mu.Lock()
		defer mu.Unlock()
		lastSeen = time.Now()
		if !seen[guid] {
			seen[guid] = true
			completed <- guid
		}
	}
	go func() {
		for runCtx.Err() == nil {
			events, err := c.API().TaskEvents(runCtx)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for e := range events {
				if e.Name != model.EventTaskChanged {
					continue
				}
				var ch model.Change[model.Task]
				if err := json.Unmarshal(e.Data, &ch); err != nil {
					b.Errorf("task event: %v", err)
					continue
				}
				if ch.After.State == model.TaskCompleted && ch.Before.State != model.TaskCompleted && ch.After.Domain == domain {
					found(ch.After.TaskGUID)
				}
			}
		}
	}()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			stalled := time.Since(lastSeen) > time.Second
			mu.Unlock()
			if !stalled {
				continue
			}
			tasks, err := c.API().Tasks(runCtx, model.TaskFilter{Domain: domain})
			if err != nil {
				continue
			}
			for _, t := range tasks {
				if t.State == model.TaskCompleted {
					found(t.TaskGUID)
				}
			}
		}
	}()
	var deleted sync.WaitGroup
	deleted.Add(n)
	for range 16 {
		go func() {
			for {
				var guid string
				select {
				case <-runCtx.Done():
					return
				case guid = <-completed:
				}
				if _, err := c.API().ResolvingTask(ctx, guid); err != nil {
					b.Errorf("resolve %s: %v", guid, err)
				} else if _, err := c.API().DeleteTask(ctx, guid); err != nil {
					b.Errorf("delete %s: %v", guid, err)
				}
				deleted.Done()
			}
		}()
	}
	start := time.Now()
	desireTasks(b, c, n, prefix, domain, "")
	done := make(chan struct{})
	go func() { deleted.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatal("not every task was resolved and deleted within 10 minutes")
	}
	return time.Since(start)
}

// callbackReceiver counts the completion callbacks each task receives, and when.
type callbackReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	arrived map[string][]time.Time
}

func newCallbackReceiver(b *testing.B) *callbackReceiver {
	r := &callbackReceiver{arrived: map[string][]time.Time{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		var cb model.TaskCallbackResponse
		if err := json.NewDecoder(req.Body).Decode(&cb); err != nil {
			b.Errorf("callback: %v", err)
		}
		r.mu.Lock()
		r.arrived[cb.TaskGUID] = append(r.arrived[cb.TaskGUID], at)
		r.mu.Unlock()
	}))
	return r
}

func (r *callbackReceiver) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.arrived)
}

func (r *callbackReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// checkOnce fails the benchmark for any task called back more than once.
func (r *callbackReceiver) checkOnce(b *testing.B) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for guid, at := range r.arrived {
		if len(at) != 1 {
			b.Fatalf("task %s: %d callbacks", guid, len(at))
		}
	}
}

// callbackLatencies reads each task's completion time from its events and returns the
// time from it to the callback's arrival.
func callbackLatencies(b *testing.B, c database, prefix string, r *callbackReceiver) []time.Duration {
	rows, err := c.DB().Query(`SELECT data->'after'->>'task_guid', (data->'after'->>'first_completed_at')::bigint
FROM events WHERE name = 'task_changed' AND data->'after'->>'state' = 'COMPLETED' AND data->'after'->>'task_guid' LIKE $1`,
		prefix+"%")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for rows.Next() {
		var guid string
		var completed int64
		if err := rows.Scan(&guid, &completed); err != nil {
			b.Fatal(err)
		}
		if at := r.arrived[guid]; len(at) > 0 {
			out = append(out, at[0].Sub(time.Unix(0, completed)))
		}
	}
	if len(out) == 0 {
		b.Fatal("no completion events")
	}
	return out
}
