package workflows_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/model"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap/zaptest"
)

// taskCallbackHistories holds recorded TaskCallbackWorkflow histories (RECORD_HISTORIES=1
// go test ./workflows/ -run TaskCallbackOnDevServer records them). Keep them as they are.
const taskCallbackHistories = "testdata/task_callback"

// Callbacks on a real dev server and a real store. The receiver answers 503 to the first
// calls of each task: twice for "quick" (the local retries take it), five times for
// "patient" (the POST moves to an activity with backoff), both started as before the
// delivery pools (no hand-over); twice for "handed-over", which a pool handed over after its
// own attempts (straight to the activity with backoff). Each task is deleted once its
// callback is taken, and a second delivery of the same task finds nothing to do.
func TestTaskCallbackOnDevServer(t *testing.T) {
	c := temporaltest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := dbtest.NewStore(t)
	refuse := map[string]int{"quick": 2, "patient": 5, "handed-over": 2}
	var mu sync.Mutex
	calls, accepted := map[string]int{}, map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb model.TaskCallbackResponse
		json.NewDecoder(r.Body).Decode(&cb)
		mu.Lock()
		defer mu.Unlock()
		calls[cb.TaskGUID]++
		if calls[cb.TaskGUID] <= refuse[cb.TaskGUID] {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		accepted[cb.TaskGUID]++
	}))
	defer recv.Close()
	queue := "task-callback"
	w := bbsworker.New(c, queue, bbsworker.Deps{TaskStore: store, Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cb := &workflows.TaskCallbackClient{Client: c, TaskQueue: queue}
	deliver := func(guid, history string) workflows.TaskCallbackOutput {
		var err error
		if guid == "handed-over" {
			err = cb.HandOverCallback(ctx, guid, 3, "callback receiver answered 503")
		} else {
			// As the API started deliveries before the pools: no hand-over.
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: model.TaskCallbackWorkflowID(guid), TaskQueue: queue,
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
				workflows.TaskCallbackWorkflow, workflows.TaskCallbackInput{TaskGUID: guid})
		}
		if err != nil {
			t.Fatal(err)
		}
		wf := c.GetWorkflow(ctx, model.TaskCallbackWorkflowID(guid), "")
		var out workflows.TaskCallbackOutput
		if err := wf.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("RECORD_HISTORIES") != "" {
			recordHistory(ctx, t, c, model.TaskCallbackWorkflowID(guid), wf.GetRunID(), filepath.Join(taskCallbackHistories, history+".json"))
		}
		return out
	}
	for _, guid := range []string{"quick", "patient", "handed-over"} {
		task := &model.Task{TaskGUID: guid, Domain: "cf-tasks", TaskDefinition: model.TaskDefinition{RootFS: "preloaded:x",
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}, CompletionCallbackURL: recv.URL}}
		if _, err := store.DesireTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.StartTask(ctx, guid, "cell"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.CompleteTask(ctx, guid, "cell", false, "", "ok"); err != nil {
			t.Fatal(err)
		}
		out := deliver(guid, guid)
		mu.Lock()
		got, n := accepted[guid], calls[guid]
		mu.Unlock()
		if !out.Delivered || out.Status != http.StatusOK || got != 1 || n != refuse[guid]+1 {
			t.Fatalf("%s: output %+v after %d calls, %d accepted", guid, out, n, got)
		}
		if _, err := store.TaskByGUID(ctx, guid); !model.IsType(err, model.ErrResourceNotFound) {
			t.Fatalf("%s after delivery: %v", guid, err)
		}
	}
	if out := deliver("quick", "gone"); out.Delivered || accepted["quick"] != 1 {
		t.Fatalf("second delivery %+v, %d accepted", out, accepted["quick"])
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
