package workflows_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/model"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap/zaptest"
)

// taskCallbackHistories holds recorded TaskCallbackWorkflow histories (RECORD_HISTORIES=1
// go test ./workflows/ -run TaskCallbackOnDevServer records them). Keep them as they are.
const taskCallbackHistories = "testdata/task_callback"

// A callback on a real dev server and a real store: the receiver answers 503 twice, then
// takes it; the task is deleted, and a second delivery of the same task finds nothing to do.
func TestTaskCallbackOnDevServer(t *testing.T) {
	c := temporaltest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := dbtest.NewStore(t)
	var calls, accepted atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		accepted.Add(1)
	}))
	defer recv.Close()
	task := &model.Task{TaskGUID: "t1", Domain: "cf-tasks", TaskDefinition: model.TaskDefinition{RootFS: "preloaded:x",
		Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}, CompletionCallbackURL: recv.URL}}
	if _, err := store.DesireTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.StartTask(ctx, "t1", "cell"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CompleteTask(ctx, "t1", "cell", false, "", "ok"); err != nil {
		t.Fatal(err)
	}
	queue := "task-callback"
	w := bbsworker.New(c, queue, bbsworker.Deps{TaskStore: store, Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cb := &workflows.TaskCallbackClient{Client: c, TaskQueue: queue}
	run := func(name string) workflows.TaskCallbackOutput {
		if err := cb.DeliverCallback(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		wf := c.GetWorkflow(ctx, model.TaskCallbackWorkflowID("t1"), "")
		var out workflows.TaskCallbackOutput
		if err := wf.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("RECORD_HISTORIES") != "" {
			recordHistory(ctx, t, c, model.TaskCallbackWorkflowID("t1"), wf.GetRunID(), filepath.Join(taskCallbackHistories, name+".json"))
		}
		return out
	}
	if out := run("delivered"); !out.Delivered || out.Status != http.StatusOK || accepted.Load() != 1 {
		t.Fatalf("output %+v after %d calls, %d accepted", out, calls.Load(), accepted.Load())
	}
	if _, err := store.TaskByGUID(ctx, "t1"); !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("task after delivery: %v", err)
	}
	if out := run("gone"); out.Delivered || accepted.Load() != 1 {
		t.Fatalf("second delivery %+v, %d accepted", out, accepted.Load())
	}
}

// Replaying the recorded histories proves the workflow code still makes the same decisions.
func TestTaskCallbackWorkflowReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(taskCallbackHistories, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories in %s: %v", taskCallbackHistories, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			bbsworker.RegisterWorkflows(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(temporalzap.New(zaptest.NewLogger(t)), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
