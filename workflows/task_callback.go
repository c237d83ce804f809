package workflows

import (
	"context"
	"errors"
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
//
// The steps are local activities, so that a delivery whose receiver answers costs one
// workflow task: a callback per task is Temporal work per task, and 10,000 staging tasks
// must not wait on it. Only a receiver that keeps failing moves the POST to an ordinary
// activity, which retries for CallbackDeliveryWindow and shows its attempts in the Web UI.
func TaskCallbackWorkflow(ctx workflow.Context, in TaskCallbackInput) (TaskCallbackOutput, error) {
	var a *activities.TaskCallbacks
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
	})
	var cb *activities.TaskCallback
	if err := workflow.ExecuteLocalActivity(local, a.ResolveTask, in.TaskGUID).Get(ctx, &cb); err != nil {
		return TaskCallbackOutput{}, err
	}
	if cb == nil {
		return TaskCallbackOutput{}, nil
	}
	status, err := postCallback(ctx, *cb)
	if err != nil {
		return TaskCallbackOutput{}, err
	}
	out := TaskCallbackOutput{Delivered: true, Status: status}
	return out, workflow.ExecuteLocalActivity(local, a.DeleteResolvedTask, in.TaskGUID).Get(ctx, nil)
}

// postCallback POSTs the callback: first as a local activity with a few quick retries,
// then, if the receiver still cannot take it, as an activity retried with backoff.
func postCallback(ctx workflow.Context, cb activities.TaskCallback) (int, error) {
	var a *activities.TaskCallbacks
	quick := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: activities.CallbackTimeout + 10*time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
			MaximumAttempts: 3},
	})
	var status int
	err := workflow.ExecuteLocalActivity(quick, a.PostTaskCallback, cb).Get(ctx, &status)
	var appErr *temporal.ApplicationError
	if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		return status, err
	}
	workflow.GetLogger(ctx).Info("callback receiver unavailable: retrying with backoff", "task_guid", cb.Body.TaskGUID, "error", err)
	patient := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    activities.CallbackTimeout + 10*time.Second,
		HeartbeatTimeout:       5 * activities.CallbackHeartbeat,
		ScheduleToCloseTimeout: CallbackDeliveryWindow,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: CallbackMaxInterval},
	})
	err = workflow.ExecuteActivity(patient, a.PostTaskCallback, cb).Get(ctx, &status)
	return status, err
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
