package testcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// forget removes what a cluster leaves on a Temporal server it shares with others: the
// workflows still running on its queue (a paused or failing rollout) are terminated and its
// convergence schedule deleted.
func forget(tc client.Client, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = tc.ScheduleClient().GetHandle(ctx, workflows.ConvergenceScheduleIDFor(queue)).Delete(ctx)
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
