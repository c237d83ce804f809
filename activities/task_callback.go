package activities

import (
	"context"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/callbacks"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// TaskCallbackStore is what delivering a completion callback needs of the store.
type TaskCallbackStore interface {
	CallbackForWorkflow(ctx context.Context, guid string) (*model.Task, error)
	ResolvingTask(ctx context.Context, guid string) (*db.TaskChange, error)
	DeleteTask(ctx context.Context, guid string) (*model.Task, error)
}

// TaskCallbacks are the activities of a task's completion callback once the worker's
// delivery pool has handed it over (package callbacks): claim the result, POST it, delete
// the task. Each is idempotent, so that a worker dying anywhere and the activity running
// again changes nothing.
type TaskCallbacks struct {
	Store TaskCallbackStore
	// HTTP sends the callbacks; nil means a client with CallbackTimeout.
	HTTP *http.Client
	Log  *zap.Logger
}

// CallbackTimeout bounds one callback request (BBS's default is 1 minute).
const CallbackTimeout = callbacks.Timeout

// CallbackHeartbeat is how often a callback attempt heartbeats while it waits for the
// receiver; the workflow's heartbeat timeout is a few times longer.
const CallbackHeartbeat = 2 * time.Second

// heartbeatEvery records a heartbeat every interval until the returned stop is called.
func heartbeatEvery(ctx context.Context, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// ErrCallbackRetry is the application error type of an answer worth retrying: the receiver
// could not be reached, or answered 503 or 504.
const ErrCallbackRetry = "CallbackRetry"

// TaskCallback is what a delivery sends, and where.
type TaskCallback struct {
	URL  string                     `json:"url"`
	Body model.TaskCallbackResponse `json:"body"`
}

// ResolveTask claims a completed task's callback for the workflow (COMPLETED → RESOLVING,
// and the pools leave it alone from then on) and returns what to send. A task already
// RESOLVING that was handed over (an earlier attempt, or the delivery started again by
// convergence) is delivered as it is; nil means there is nothing for the workflow to
// deliver: the task is gone, has no callback, or a delivery pool holds it.
func (a *TaskCallbacks) ResolveTask(ctx context.Context, guid string) (*TaskCallback, error) {
	t, err := a.Store.CallbackForWorkflow(ctx, guid)
	if model.IsType(err, model.ErrInvalidStateTransition) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), string(model.ErrInvalidStateTransition), nil)
	}
	if err != nil || t == nil {
		return nil, err
	}
	return &TaskCallback{URL: t.CompletionCallbackURL, Body: t.CallbackResponse()}, nil
}

// PostTaskCallback POSTs the callback and returns the receiver's status. Connection errors,
// timeouts, 503 and 504 are retried (ErrCallbackRetry); any other answer ends the delivery,
// as it does in BBS: a 2xx is a success, and anything else a refusal no retry would change,
// which is logged.
func (a *TaskCallbacks) PostTaskCallback(ctx context.Context, cb TaskCallback) (int, error) {
	client := a.HTTP
	if client == nil {
		client = &http.Client{Timeout: CallbackTimeout}
	}
	// The request may take up to CallbackTimeout; heartbeats while it waits let Temporal
	// hand the attempt to another worker soon after this one dies, rather than after the
	// whole timeout.
	stopBeats := heartbeatEvery(ctx, CallbackHeartbeat)
	ans := callbacks.Post(ctx, client, cb.URL, cb.Body)
	stopBeats()
	switch {
	case ans.Retry:
		return ans.Status, temporal.NewApplicationErrorWithCause(ans.Err.Error(), ErrCallbackRetry, ans.Err)
	case ans.Status == 0 && ans.Err != nil:
		return 0, temporal.NewNonRetryableApplicationError(ans.Err.Error(), string(model.ErrInvalidRequest), nil)
	case ans.Err != nil:
		a.log().Warn("callback receiver refused the task's result; the task is resolved anyway",
			zap.String("task_guid", cb.Body.TaskGUID), zap.Int("status", ans.Status))
	}
	return ans.Status, nil
}

// DeleteResolvedTask deletes the task once its callback was answered. A task that
// convergence put back to COMPLETED meanwhile is claimed again first; one already gone is
// fine.
func (a *TaskCallbacks) DeleteResolvedTask(ctx context.Context, guid string) error {
	_, err := a.Store.DeleteTask(ctx, guid)
	if model.IsType(err, model.ErrInvalidStateTransition) {
		if _, err = a.Store.ResolvingTask(ctx, guid); err == nil || model.IsType(err, model.ErrInvalidStateTransition) {
			_, err = a.Store.DeleteTask(ctx, guid)
		}
	}
	if model.IsType(err, model.ErrResourceNotFound) {
		return nil
	}
	return err
}

func (a *TaskCallbacks) log() *zap.Logger {
	if a.Log == nil {
		return zap.NewNop()
	}
	return a.Log
}
