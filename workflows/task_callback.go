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
// delivers. Patient is set when the worker's delivery pool handed the callback over after
// its own quick attempts (Attempts of them, the last failing with LastError): the workflow
// then goes straight to the retries with back-off. Runs started before the pools existed
// have neither.
type TaskCallbackInput struct {
	TaskGUID  string `json:"task_guid"`
	Patient   bool   `json:"patient,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// patientHandOverChange is the GetVersion change of a delivery handed over by a pool, which
// skips the quick attempts the pool made already.
const patientHandOverChange = "patient-hand-over"

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

// TaskCallbackWorkflow is the patient path of a task's completion callback: the worker's
// delivery pool (package callbacks) delivers callbacks whose receiver answers, and hands this
// workflow those whose receiver stays down, so that their retries with back-off, attempts
// and last error show in the Web UI. It claims the result for itself (COMPLETED →
// RESOLVING, the pools leaving it alone), POSTs the TaskCallbackResponse until the receiver
// answers (connection errors, 503 and 504 are retried with backoff), and deletes the task.
// A worker dying mid-way resumes where it was; each step is idempotent, so a step that ran
// without its completion being recorded runs again harmlessly.
//
// The claim and the delete are local activities; so is the POST's first few attempts for a
// run that was not handed over by a pool (those started before the pools existed). The POST
// with back-off is an ordinary activity, retried for CallbackDeliveryWindow.
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
	patient := in.Patient && workflow.GetVersion(ctx, patientHandOverChange, workflow.DefaultVersion, 1) >= 1
	status, err := postCallback(ctx, *cb, patient)
	if err != nil {
		return TaskCallbackOutput{}, err
	}
	out := TaskCallbackOutput{Delivered: true, Status: status}
	return out, workflow.ExecuteLocalActivity(local, a.DeleteResolvedTask, in.TaskGUID).Get(ctx, nil)
}

// postCallback POSTs the callback: first, unless patient, as a local activity with a few
// quick retries, then, if the receiver still cannot take it, as an activity retried with
// backoff.
func postCallback(ctx workflow.Context, cb activities.TaskCallback, patient bool) (int, error) {
	var a *activities.TaskCallbacks
	if patient {
		return postPatiently(ctx, cb)
	}
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
	return postPatiently(ctx, cb)
}

// postPatiently POSTs the callback as an activity retried with backoff for
// CallbackDeliveryWindow: each attempt and the last error show in the Web UI.
func postPatiently(ctx workflow.Context, cb activities.TaskCallback) (int, error) {
	var a *activities.TaskCallbacks
	patient := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    activities.CallbackTimeout + 10*time.Second,
		HeartbeatTimeout:       5 * activities.CallbackHeartbeat,
		ScheduleToCloseTimeout: CallbackDeliveryWindow,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: CallbackMaxInterval},
	})
	var status int
	err := workflow.ExecuteActivity(patient, a.PostTaskCallback, cb).Get(ctx, &status)
	return status, err
}

// TaskCallbackClient starts the workflows of callbacks handed over to Temporal.
type TaskCallbackClient struct {
	Client    client.Client
	TaskQueue string
}

// HandOverCallback starts the patient delivery of a task's callback after the pool's
// attempts failed, or finds the one under way (a pool and convergence may both ask).
func (c *TaskCallbackClient) HandOverCallback(ctx context.Context, guid string, attempts int, lastError string) error {
	summary := fmt.Sprintf("completion callback of task `%s`", guid)
	if attempts > 0 {
		summary += fmt.Sprintf(", handed over after %d failed attempts (last: %s)", attempts, lastError)
	}
	_, err := c.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       model.TaskCallbackWorkflowID(guid),
		TaskQueue:                c.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// A task guid may be desired again once the task is deleted.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:         summary,
	}, TaskCallbackWorkflow, TaskCallbackInput{TaskGUID: guid, Patient: true, Attempts: attempts, LastError: lastError})
	if err != nil {
		return fmt.Errorf("start the completion callback of task %s: %w", guid, err)
	}
	return nil
}

// DeliverCallback starts the patient delivery of a handed-over callback again, or finds the
// one under way: convergence asks for each that waited longer than its kick duration.
func (c *TaskCallbackClient) DeliverCallback(ctx context.Context, guid string) error {
	return c.HandOverCallback(ctx, guid, 0, "")
}
