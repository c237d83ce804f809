package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskCallbackInput names the task whose completion callback a TaskCallbackWorkflow
// delivers.
type TaskCallbackInput struct {
	TaskGUID string `json:"task_guid"`
}

// TaskCallbackOutput is how the delivery ended: Delivered is false when there was nothing
// to deliver (the task was gone or had no callback); Status is the receiver's answer.
type TaskCallbackOutput struct {
	Delivered bool `json:"delivered"`
	Status    int  `json:"status,omitempty"`
}

// Retry of a callback: quickly at first, then every CallbackMaxInterval, for at most
// CallbackDeliveryWindow. By then convergence has deleted the task (2 minutes after its
// completion, BBS's default), but the delivery holds what it sends and keeps trying.
const (
	CallbackMaxInterval    = 30 * time.Second
	CallbackDeliveryWindow = time.Hour
)

// TaskCallbackWorkflow delivers one task's completion callback, durably: it claims the
// result (COMPLETED → RESOLVING), POSTs the TaskCallbackResponse until the receiver answers
// (connection errors, 503 and 504 are retried with backoff), and deletes the task. An API or
// worker dying mid-way resumes where it was; each step is idempotent, so a step that ran
// without its completion being recorded runs again harmlessly.
func TaskCallbackWorkflow(ctx workflow.Context, in TaskCallbackInput) (TaskCallbackOutput, error) {
	var a *activities.TaskCallbacks
	// Short timeouts: an attempt lost with a dying worker is retried on another soon.
	store := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	var cb *activities.TaskCallback
	if err := workflow.ExecuteActivity(store, a.ResolveTask, in.TaskGUID).Get(ctx, &cb); err != nil {
		return TaskCallbackOutput{}, err
	}
	if cb == nil {
		return TaskCallbackOutput{}, nil
	}
	post := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    activities.CallbackTimeout + 10*time.Second,
		HeartbeatTimeout:       5 * activities.CallbackHeartbeat,
		ScheduleToCloseTimeout: CallbackDeliveryWindow,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: CallbackMaxInterval},
	})
	var status int
	if err := workflow.ExecuteActivity(post, a.PostTaskCallback, *cb).Get(ctx, &status); err != nil {
		return TaskCallbackOutput{}, err
	}
	if err := workflow.ExecuteActivity(store, a.DeleteResolvedTask, in.TaskGUID).Get(ctx, nil); err != nil {
		return TaskCallbackOutput{Delivered: true, Status: status}, err
	}
	return TaskCallbackOutput{Delivered: true, Status: status}, nil
}

// TaskCallbackClient starts callback deliveries.
type TaskCallbackClient struct {
	Client    client.Client
	TaskQueue string
}

// DeliverCallback starts the delivery of a task's callback, or finds the one under way (the
// API, when the task completes, and convergence, when a delivery seems stuck, may both ask).
func (c *TaskCallbackClient) DeliverCallback(ctx context.Context, guid string) error {
	_, err := c.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       model.TaskCallbackWorkflowID(guid),
		TaskQueue:                c.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// A task guid may be desired again once the task is deleted.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:         fmt.Sprintf("completion callback of task `%s`", guid),
	}, TaskCallbackWorkflow, TaskCallbackInput{TaskGUID: guid})
	if err != nil {
		return fmt.Errorf("start the completion callback of task %s: %w", guid, err)
	}
	return nil
}
