package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// One Temporal dev server serves every rollout scenario of the test binary: it is started on
// first use and stopped by stopTemporalDev.
//
// It cannot be stopped from TestMain: dbtest.Main runs m.Run and then calls os.Exit, so no
// code of ours runs after the tests (see the report that came with these tests for the
// one-line dbtest change that would allow it). TestRollout, the parent of every scenario that
// needs the server, stops it in its cleanup instead, which runs once all its (parallel)
// subtests are done.
var temporalDev struct {
	mu  sync.Mutex
	srv *testsuite.DevServer
}

// temporalBin is the temporal CLI the tests use: $TEMPORAL_BIN (make test sets it), else the
// pinned build in ../bin/temporal. missing says why neither is usable.
func temporalBin() (path, missing string) {
	if p := os.Getenv("TEMPORAL_BIN"); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, ""
		}
		return "", fmt.Sprintf("TEMPORAL_BIN=%s is not a file", p)
	}
	p, err := filepath.Abs(filepath.Join("..", "bin", "temporal"))
	if err == nil {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, ""
		}
	}
	return "", "no Temporal CLI: TEMPORAL_BIN is unset and ../bin/temporal does not exist " +
		"(run `make bin/temporal`, or `make test`, which sets TEMPORAL_BIN)"
}

// temporalClient returns a client of the shared dev server, starting the server on first use;
// it skips t when there is no temporal CLI to run.
func temporalClient(t *testing.T) client.Client {
	t.Helper()
	temporalDev.mu.Lock()
	defer temporalDev.mu.Unlock()
	if temporalDev.srv != nil {
		return temporalDev.srv.Client()
	}
	bin, missing := temporalBin()
	if missing != "" {
		t.Skip(missing)
	}
	args := []string{
		// One task-queue partition: every test's queue has one poller, and a partitioned
		// queue makes its tasks wait for forwarding (internal/temporaldev does the same).
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
	}
	// The rollout workflow's start carries these search attributes, so they must exist.
	for _, k := range []temporal.SearchAttributeKeyKeyword{workflows.SearchAttrProcessGUID, workflows.SearchAttrDomain,
		workflows.SearchAttrFromDefinition, workflows.SearchAttrToDefinition, workflows.SearchAttrRolloutState} {
		args = append(args, "--search-attribute", k.GetName()+"=Keyword")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  bin,
		LogLevel:      "error",
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ExtraArgs:     args,
		ClientOptions: &client.Options{Logger: temporalzap.New(zap.NewNop())},
	})
	if err != nil {
		t.Fatalf("start the Temporal dev server (%s): %v", bin, err)
	}
	temporalDev.srv = srv
	return srv.Client()
}

// stopTemporalDev stops the shared dev server, if it runs; a later temporalClient starts
// another.
func stopTemporalDev() {
	temporalDev.mu.Lock()
	defer temporalDev.mu.Unlock()
	if temporalDev.srv == nil {
		return
	}
	temporalDev.srv.Client().Close()
	temporalDev.srv.Stop()
	temporalDev.srv = nil
}

var queueSeq atomic.Int64

var unsafeQueueChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// taskQueue is a task queue of t's own, so that its worker runs only its workflows.
func taskQueue(t *testing.T) string {
	name := strings.Trim(unsafeQueueChars.ReplaceAllString(t.Name(), "-"), "-")
	return fmt.Sprintf("scenario-%s-%d-%d", name, os.Getpid(), queueSeq.Add(1))
}

// withTemporal attaches rollouts to the cluster: a worker on its own task queue running the
// rollout workflow and the activities exactly as worker.New registers them (worker.New is fixed
// to the task queue "bbs"), and the API's RolloutClient on that queue. The worker stops, and
// the rollout workflows it left open are terminated, before the cluster stops. beforeStop, when
// not nil, runs before each stop request of the rollout activities reaches the cells (to
// inject races with the cells' reports).
func withTemporal(tc client.Client, queue string, indexDeadline time.Duration,
	beforeStop func(c *cluster, lrps []model.ActualLRP)) clusterOption {
	return func(c *cluster, server *api.Server) {
		log := zap.NewNop()
		rc := &workflows.RolloutClient{Client: tc, TaskQueue: queue, IndexDeadline: indexDeadline}
		var stopper activities.Stopper = c.stopper
		if beforeStop != nil {
			stopper = hookedStopper{c: c, before: beforeStop}
		}
		waiter := activities.NewPGWaiter(c.store.URL(), log)
		w := sdkworker.New(tc, queue, sdkworker.Options{MaxConcurrentActivityExecutionSize: 10000})
		w.RegisterWorkflow(workflows.ConvergeWorkflow)
		w.RegisterWorkflow(workflows.RolloutWorkflow)
		w.RegisterActivity(&activities.Converger{Store: c.store, Stopper: stopper, Log: log})
		w.RegisterActivity(&activities.Resumer{Store: c.store, Starter: rc, Log: log})
		w.RegisterActivity(&activities.Rollouts{Store: c.store, Stopper: stopper, Waiter: waiter, Log: log})
		if err := w.Start(); err != nil {
			waiter.Close()
			c.t.Fatalf("start the rollout worker on %s: %v", queue, err)
		}
		c.onStop = append(c.onStop, func() {
			terminateOpenRollouts(tc, queue)
			w.Stop()
			waiter.Close()
		})
		server.WithRollouts(rc)
	}
}

type hookedStopper struct {
	c      *cluster
	before func(c *cluster, lrps []model.ActualLRP)
}

func (h hookedStopper) StopInstances(ctx context.Context, lrps []model.ActualLRP) error {
	h.before(h.c, lrps)
	return h.c.stopper.StopInstances(ctx, lrps)
}

// terminateOpenRollouts ends the workflows a test left running on its queue (a paused or
// failing rollout), so that nothing of it lingers on the shared server.
func terminateOpenRollouts(tc client.Client, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue),
			NextPageToken: token,
		})
		if err != nil {
			return
		}
		for _, e := range resp.GetExecutions() {
			_ = tc.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "scenario test ended")
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}

// withConvergence runs a convergence pass every `every` (what the convergence schedule does in
// a deployment, every 30 s) with the given restart policy, and asks cells to stop what a pass
// says to stop.
func withConvergence(every time.Duration, policy model.RestartPolicy) clusterOption {
	return func(c *cluster, _ *api.Server) {
		c.store.SetRestartPolicy(policy)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-c.ctx.Done():
					return
				case <-tick.C:
				}
				if res, err := c.store.Converge(c.ctx, db.ConvergeOptions{}); err == nil && len(res.ToStop) > 0 {
					_ = c.stopper.StopInstances(c.ctx, res.ToStop)
				}
			}
		}()
	}
}

// fastRestarts is DefaultRestartPolicy with a back-off in milliseconds, so that a failing
// instance is retried many times within a test.
func fastRestarts() model.RestartPolicy {
	p := model.DefaultRestartPolicy()
	p.BaseDelay, p.MaxDelay = 100*time.Millisecond, 300*time.Millisecond
	return p
}
