package scenario

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
)

// receiver stands in for Cloud Controller: it counts the completion callbacks per task and
// answers 503 to the first unavailable ones.
type receiver struct {
	*httptest.Server
	mu          sync.Mutex
	got         map[string][]model.TaskCallbackResponse
	unavailable int
	refused     int
}

func newReceiver(t *testing.T, unavailable int) *receiver {
	r := &receiver{got: map[string][]model.TaskCallbackResponse{}, unavailable: unavailable}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var cb model.TaskCallbackResponse
		if err := json.NewDecoder(req.Body).Decode(&cb); err != nil || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("callback body: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.refused < r.unavailable {
			r.refused++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.got[cb.TaskGUID] = append(r.got[cb.TaskGUID], cb)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) callbacks(guid string) []model.TaskCallbackResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.TaskCallbackResponse(nil), r.got[guid]...)
}

func (r *receiver) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func simTask(guid, callback string, env ...model.EnvironmentVariable) *model.Task {
	return &model.Task{TaskGUID: guid, Domain: "cf-tasks", TaskDefinition: model.TaskDefinition{
		RootFS: "preloaded:cflinuxfs4", MemoryMB: 32, DiskMB: 32, Env: env,
		Action:                &model.Action{Run: &model.RunAction{Path: "/bin/task"}},
		ResultFile:            "/tmp/result.json",
		CompletionCallbackURL: callback,
		Annotation:            "note-" + guid,
	}}
}

// Tasks run once on the cells beside instances, and each callback reaches the receiver
// exactly once, after 503s, with the result or the failure; the task is then deleted.
func TestTasksRunAndDeliverTheirCallbacksOnce(t *testing.T) {
	c := newCluster(t, 3, 1, roomy)
	recv := newReceiver(t, 3)
	const n = 20
	for i := range n {
		task := simTask(fmt.Sprintf("ok-%d", i), recv.URL+"/done", model.EnvironmentVariable{Name: "SIM_RESULT", Value: fmt.Sprintf(`{"n":%d}`, i)})
		if _, err := c.BBS.DesireTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.BBS.DesireTask(ctx, simTask("fails", recv.URL+"/done", model.EnvironmentVariable{Name: "SIM_CRASH_AFTER_MS", Value: "10"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every callback", 30*time.Second, func() bool { return recv.delivered() == n+1 })
	c.waitFor("every delivered task deleted", 15*time.Second, func() bool {
		l, err := c.BBS.Tasks(ctx, model.TaskFilter{})
		return err == nil && len(l) == 0
	})
	for i := range n {
		got := recv.callbacks(fmt.Sprintf("ok-%d", i))
		if len(got) != 1 || got[0].Failed || got[0].Result != fmt.Sprintf(`{"n":%d}`, i) || got[0].Annotation != fmt.Sprintf("note-ok-%d", i) || got[0].CreatedAt == 0 {
			t.Fatalf("callbacks of ok-%d: %+v", i, got)
		}
	}
	if got := recv.callbacks("fails"); len(got) != 1 || !got[0].Failed || got[0].FailureReason == "" || got[0].Result != "" {
		t.Fatalf("callbacks of the failing task: %+v", got)
	}
	// Nothing is left on the cells.
	for _, cell := range c.Cells {
		if n := len(cell.Exec.Containers()); n != 0 {
			t.Fatalf("cell %s still holds %d containers", cell.ID, n)
		}
	}
}

// Cancelling a running task stops its container and delivers "task was cancelled"; a task
// without a callback stays COMPLETED until a client resolves and deletes it.
func TestTaskCancelAndResolveByHand(t *testing.T) {
	c := newCluster(t, 1, 1, roomy)
	recv := newReceiver(t, 0)
	if _, err := c.BBS.DesireTask(ctx, simTask("long", recv.URL, model.EnvironmentVariable{Name: "SIM_EXIT_AFTER_MS", Value: "600000"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the long task to run", 15*time.Second, func() bool {
		task, err := c.BBS.TaskByGUID(ctx, "long")
		return err == nil && task.State == model.TaskRunning && len(c.Cells[0].Exec.Containers()) == 1
	})
	// While it exists, its guid is taken.
	if _, err := c.BBS.DesireTask(ctx, simTask("long", recv.URL)); !model.IsType(err, model.ErrResourceExists) {
		t.Fatalf("duplicate desire: %v", err)
	}
	task, err := c.BBS.CancelTask(ctx, "long")
	if err != nil || task.State != model.TaskCompleted || task.FailureReason != model.TaskCancelledReason {
		t.Fatalf("cancel = %+v, %v", task, err)
	}
	c.waitFor("the cancelled task's container to go", 15*time.Second, func() bool { return len(c.Cells[0].Exec.Containers()) == 0 })
	c.waitFor("the cancel's callback", 15*time.Second, func() bool { return len(recv.callbacks("long")) == 1 })
	if got := recv.callbacks("long")[0]; !got.Failed || got.FailureReason != model.TaskCancelledReason {
		t.Fatalf("cancel callback = %+v", got)
	}
	if _, err := c.BBS.CancelTask(ctx, "long"); err != nil && !model.IsType(err, model.ErrInvalidStateTransition) && !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("second cancel: %v", err)
	}

	if _, err := c.BBS.DesireTask(ctx, simTask("quiet", "", model.EnvironmentVariable{Name: "SIM_RESULT", Value: "done"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the quiet task to complete", 15*time.Second, func() bool {
		task, err := c.BBS.TaskByGUID(ctx, "quiet")
		return err == nil && task.State == model.TaskCompleted
	})
	task, _ = c.BBS.TaskByGUID(ctx, "quiet")
	if task.Failed || task.Result != "done" {
		t.Fatalf("quiet = %+v", task)
	}
	if _, err := c.BBS.DeleteTask(ctx, "quiet"); !model.IsType(err, model.ErrInvalidStateTransition) {
		t.Fatalf("delete before resolving: %v", err)
	}
	if _, err := c.BBS.ResolvingTask(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BBS.DeleteTask(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
}

// A draining cell does not move its tasks (seed 003): a task running on it finishes there,
// and its result is reported before the cell goes away.
func TestDrainingCellLetsItsTasksFinish(t *testing.T) {
	c := newCluster(t, 1, 1, roomy)
	if _, err := c.BBS.DesireTask(ctx, simTask("finishing", "", model.EnvironmentVariable{Name: "SIM_EXIT_AFTER_MS", Value: "1500"},
		model.EnvironmentVariable{Name: "SIM_RESULT", Value: "built"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the task to run", 15*time.Second, func() bool {
		task, err := c.BBS.TaskByGUID(ctx, "finishing")
		return err == nil && task.State == model.TaskRunning
	})
	c.Cells[0].Agent.Drain()
	exited, err := c.Cells[0].Wait(30 * time.Second)
	if !exited || err != nil {
		t.Fatalf("drained cell: exited %v, %v", exited, err)
	}
	task, err := c.BBS.TaskByGUID(ctx, "finishing")
	if err != nil || task.State != model.TaskCompleted || task.Failed || task.Result != "built" {
		t.Fatalf("task after the drain: %+v, %v", task, err)
	}
}

// A task still running when the drain times out is stopped and failed with the reason.
func TestDrainTimeoutFailsTheTasksLeft(t *testing.T) {
	c := startCluster(t, testcluster.Options{Cells: 1, Zones: 1, Capacity: roomy, EvacuationTimeout: time.Second})
	if _, err := c.BBS.DesireTask(ctx, simTask("endless", "", model.EnvironmentVariable{Name: "SIM_EXIT_AFTER_MS", Value: "600000"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the task to run", 15*time.Second, func() bool {
		task, err := c.BBS.TaskByGUID(ctx, "endless")
		return err == nil && task.State == model.TaskRunning
	})
	c.Cells[0].Agent.Drain()
	if exited, _ := c.Cells[0].Wait(30 * time.Second); !exited {
		t.Fatal("the drained cell did not exit")
	}
	task, err := c.BBS.TaskByGUID(ctx, "endless")
	if err != nil || task.State != model.TaskCompleted || !task.Failed || task.FailureReason != "cell was evacuated before the task completed" {
		t.Fatalf("task after the drain timed out: %+v, %v", task, err)
	}
	if n := len(c.Cells[0].Exec.Containers()); n != 0 {
		t.Fatalf("%d containers left", n)
	}
}
