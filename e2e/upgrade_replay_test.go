package e2e

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporalzap"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// historiesReplay reads every workflow's history from the cluster's Temporal server — those
// BASE's workers recorded alone, those both builds did, those the new build did — and
// replays each with the working tree's workflow code: a change to a shipped workflow that is
// not guarded by workflow.GetVersion fails here. It also fails on a workflow task that a
// worker failed for nondeterminism or a panic while the cluster ran.
func historiesReplay(t *testing.T, address string, tlsConfig *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc, err := temporalclient.DialContext(ctx, temporalclient.Options{HostPort: address,
		ConnectionOptions: temporalclient.ConnectionOptions{TLS: tlsConfig}})
	if err != nil {
		t.Fatalf("dial Temporal: %v", err)
	}
	defer tc.Close()
	replayed := map[string]int{}
	var token []byte
	for {
		page, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 500, NextPageToken: token})
		if err != nil {
			t.Fatalf("list workflows: %v", err)
		}
		for _, ex := range page.Executions {
			id, run := ex.Execution.WorkflowId, ex.Execution.RunId
			history := &historypb.History{}
			it := tc.GetWorkflowHistory(ctx, id, run, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatalf("history of %s: %v", id, err)
				}
				history.Events = append(history.Events, ev)
				if f := ev.GetWorkflowTaskFailedEventAttributes(); f != nil &&
					(f.Cause == enums.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR || f.Cause == enums.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE) {
					t.Errorf("workflow %s: a worker failed its task at event %d (%s): %s", id, ev.EventId, f.Cause, f.GetFailure().GetMessage())
				}
			}
			r := worker.NewWorkflowReplayer()
			bbsworker.RegisterWorkflows(r)
			if err := r.ReplayWorkflowHistory(temporalzap.New(zap.NewNop()), history); err != nil {
				t.Errorf("the new build cannot replay workflow %s (%s, %d events): %v", id, ex.Type.GetName(), len(history.Events), err)
			}
			replayed[ex.Type.GetName()]++
		}
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	if replayed["Rollout"]+replayed["RolloutWorkflow"] == 0 {
		t.Errorf("no rollout history to replay among %v", replayed)
	}
	t.Logf("the new build replays every recorded history: %v", replayed)
}
