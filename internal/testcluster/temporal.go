package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
)

// TemporalBin finds the temporal CLI: $TEMPORAL_BIN (`make test` sets it), else bin/temporal
// in the working directory or above it (the pinned build `make bin/temporal` makes). The error
// says why neither is usable.
func TemporalBin() (string, error) {
	if p := os.Getenv("TEMPORAL_BIN"); p != "" {
		if isFile(p) {
			return p, nil
		}
		return "", fmt.Errorf("TEMPORAL_BIN=%s is not a file", p)
	}
	for dir, _ := os.Getwd(); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "bin", "temporal"); isFile(p) {
			return p, nil
		}
	}
	return "", errors.New("no Temporal CLI: TEMPORAL_BIN is unset and there is no bin/temporal " +
		"(run `make bin/temporal`, or `make test`, which sets TEMPORAL_BIN)")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// startDevServer starts an in-memory Temporal dev server; it skips t when there is no
// temporal CLI to run.
func startDevServer(t testing.TB) *testsuite.DevServer {
	t.Helper()
	bin, err := TemporalBin()
	if err != nil {
		t.Skip(err)
	}
	args := []string{
		// One task-queue partition: every queue has one poller, and a partitioned queue makes
		// its tasks wait for forwarding (internal/temporaldev does the same).
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
	}
	// The rollout workflow's start carries these search attributes, so they must exist.
	for _, name := range slices.Sorted(maps.Keys(temporaldev.SearchAttributes)) {
		args = append(args, "--search-attribute", name+"="+temporaldev.SearchAttributes[name])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
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
	return ds
}

// shared is the dev server SharedTemporal hands out.
var shared struct {
	mu  sync.Mutex
	srv *testsuite.DevServer
}

// SharedTemporal returns a client of one dev server shared by every caller of the test binary,
// starting the server on first use (it skips t when there is no temporal CLI). Clusters on it
// need task queues of their own (Options.TaskQueue, TaskQueueFor). StopSharedTemporal stops it.
func SharedTemporal(t testing.TB) client.Client {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		shared.srv = startDevServer(t)
	}
	return shared.srv.Client()
}

// StopSharedTemporal stops the server SharedTemporal started, if it runs; a later
// SharedTemporal starts another. Call it once the tests using it are done (e.g. in the
// cleanup of their parent test).
func StopSharedTemporal() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		return
	}
	shared.srv.Client().Close()
	shared.srv.Stop()
	shared.srv = nil
}

var queueSeq atomic.Int64

var unsafeQueueChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// TaskQueueFor is a task queue of t's own, unique in the process and on the server, so that
// its cluster's worker runs only its workflows.
func TaskQueueFor(t testing.TB) string {
	name := strings.Trim(unsafeQueueChars.ReplaceAllString(t.Name(), "-"), "-")
	return fmt.Sprintf("testcluster-%s-%d-%d", name, os.Getpid(), queueSeq.Add(1))
}

// terminateOpenRollouts ends the workflows a test left running on its queue (a paused or
// failing rollout), so that nothing of it lingers on a shared server.
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
			_ = tc.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "test ended")
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}
