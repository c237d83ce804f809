package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/worker"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The floor: a workflow of a rollout's shape that does no work, run on the same Temporal
// server with the BBS worker's settings. In the stepwise shape each of its steps is what an
// index costs Temporal when every index is a step — four local activities (load, desire,
// retire, record) around one activity (the wait) — so a rollout's figure beside it says how
// much of an index is ours. In the shape of an index run (the default walk), the local
// activities of a rollout's start and end surround one activity that takes every step
// itself: what is left of Temporal's cost, spread over the steps.

// floorInput is how many steps the floor workflow takes, and in which shape.
type floorInput struct {
	Steps int
	Runs  bool
}

// floorActivities do nothing; step records when each step ended, for the per-step times.
type floorActivities struct {
	mu    sync.Mutex
	ended map[string][]time.Time
}

func (a *floorActivities) Noop(context.Context) error { return nil }

// Run takes steps steps in one activity, as an index run does, recording each.
func (a *floorActivities) Run(ctx context.Context, id string, steps int) error {
	for range steps {
		if err := a.Record(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (a *floorActivities) Record(ctx context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended[id] = append(a.ended[id], time.Now())
	return nil
}

// floorWorkflow takes its steps in order, each shaped as a rollout index.
func floorWorkflow(ctx workflow.Context, in floorInput) error {
	var acts *floorActivities
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 10 * time.Second})
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	if in.Runs {
		local := func(n int) error {
			for range n {
				if err := workflow.ExecuteLocalActivity(lctx, acts.Noop).Get(ctx, nil); err != nil {
					return err
				}
			}
			return nil
		}
		if err := local(3); err != nil { // load, record, open the run
			return err
		}
		if err := workflow.ExecuteActivity(actx, acts.Run, id, in.Steps).Get(ctx, nil); err != nil {
			return err
		}
		return local(3) // record, prune, finish
	}
	for range in.Steps {
		for _, step := range []func() error{
			func() error { return workflow.ExecuteLocalActivity(lctx, acts.Noop).Get(ctx, nil) }, // load
			func() error { return workflow.ExecuteLocalActivity(lctx, acts.Noop).Get(ctx, nil) }, // desire
			func() error { return workflow.ExecuteActivity(actx, acts.Noop).Get(ctx, nil) },      // the wait
			func() error { return workflow.ExecuteLocalActivity(lctx, acts.Noop).Get(ctx, nil) }, // retire
			func() error { return workflow.ExecuteLocalActivity(lctx, acts.Record, id).Get(ctx, nil) },
		} {
			if err := step(); err != nil {
				return err
			}
		}
	}
	return nil
}

// floor runs n floor workflows of steps each at once on c, in the shape of index runs if
// inRuns says so, and returns every step's time and the steps per second over the whole run.
func floor(b *testing.B, c client.Client, n, steps int, inRuns bool) ([]time.Duration, float64) {
	b.Helper()
	queue := fmt.Sprintf("floor-%d", time.Now().UnixNano())
	acts := &floorActivities{ended: map[string][]time.Time{}}
	w := sdkworker.New(c, queue, worker.Options())
	w.RegisterWorkflow(floorWorkflow)
	w.RegisterActivity(acts)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	runs := make([]client.WorkflowRun, n)
	began := make([]time.Time, n)
	parallel(b, n, func(i int) error {
		began[i] = time.Now()
		var err error
		runs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", queue, i), TaskQueue: queue},
			floorWorkflow, floorInput{Steps: steps, Runs: inRuns})
		return err
	})
	for _, r := range runs {
		if r == nil {
			b.Fatal("a floor workflow did not start")
		}
		if err := r.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	var all []time.Duration
	for i, r := range runs {
		prev := began[i]
		for _, t := range acts.ended[r.GetID()] {
			all = append(all, t.Sub(prev))
			prev = t
		}
	}
	return all, float64(n*steps) / took.Seconds()
}
