package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// TaskCallbackStore is what delivering a completion callback needs of the store.
type TaskCallbackStore interface {
	TaskByGUID(ctx context.Context, guid string) (*model.Task, error)
	ResolvingTask(ctx context.Context, guid string) (*db.TaskChange, error)
	DeleteTask(ctx context.Context, guid string) (*model.Task, error)
}

// TaskCallbacks are the activities of a task's completion callback (BBS's task completion
// work pool, made durable): claim the result, POST it, delete the task. Each is idempotent,
// so that a worker dying anywhere and the activity running again changes nothing.
type TaskCallbacks struct {
	Store TaskCallbackStore
	// HTTP sends the callbacks; nil means a client with CallbackTimeout.
	HTTP *http.Client
	Log  *zap.Logger
}

// CallbackTimeout bounds one callback request (BBS's default is 1 minute).
const CallbackTimeout = time.Minute

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

// ResolveTask claims a completed task for its callback (COMPLETED → RESOLVING) and returns
// what to send. A task already RESOLVING (an earlier attempt, or the delivery started again
// by convergence) is delivered as it is; nil means there is nothing to deliver: the task is
// gone, or has no callback.
func (a *TaskCallbacks) ResolveTask(ctx context.Context, guid string) (*TaskCallback, error) {
	t, err := a.Store.TaskByGUID(ctx, guid)
	if model.IsType(err, model.ErrResourceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch t.State {
	case model.TaskCompleted:
		ch, err := a.Store.ResolvingTask(ctx, guid)
		switch {
		case model.IsType(err, model.ErrResourceNotFound):
			return nil, nil
		case model.IsType(err, model.ErrInvalidStateTransition):
			// Resolved by another attempt meanwhile: read it again.
			return a.ResolveTask(ctx, guid)
		case err != nil:
			return nil, err
		}
		t = &ch.After
	case model.TaskResolving:
	default:
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("task %s is %s: only a completed task has a result to deliver", guid, t.State),
			string(model.ErrInvalidStateTransition), nil)
	}
	if t.CompletionCallbackURL == "" {
		return nil, nil
	}
	return &TaskCallback{URL: t.CompletionCallbackURL, Body: t.CallbackResponse()}, nil
}

// PostTaskCallback POSTs the callback and returns the receiver's status. Connection errors,
// timeouts, 503 and 504 are retried (ErrCallbackRetry); any other answer ends the delivery,
// as it does in BBS: a 2xx is a success, and anything else a refusal no retry would change,
// which is logged.
func (a *TaskCallbacks) PostTaskCallback(ctx context.Context, cb TaskCallback) (int, error) {
	body, err := json.Marshal(cb.Body)
	if err != nil {
		return 0, temporal.NewNonRetryableApplicationError("encode callback", "Encode", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cb.URL, bytes.NewReader(body))
	if err != nil {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("callback URL %q: %v", cb.URL, err), string(model.ErrInvalidRequest), nil)
	}
	req.Header.Set("Content-Type", "application/json")
	client := a.HTTP
	if client == nil {
		client = &http.Client{Timeout: CallbackTimeout}
	}
	// The request may take up to CallbackTimeout; heartbeats while it waits let Temporal
	// hand the attempt to another worker soon after this one dies, rather than after the
	// whole timeout.
	stopBeats := heartbeatEvery(ctx, CallbackHeartbeat)
	resp, err := client.Do(req)
	stopBeats()
	if err != nil {
		return 0, temporal.NewApplicationErrorWithCause("callback request failed", ErrCallbackRetry, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		return resp.StatusCode, temporal.NewApplicationError(fmt.Sprintf("callback receiver answered %d", resp.StatusCode), ErrCallbackRetry)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		a.log().Warn("callback receiver refused the task's result; the task is resolved anyway",
			zap.String("task_guid", cb.Body.TaskGUID), zap.Int("status", resp.StatusCode))
	}
	return resp.StatusCode, nil
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
