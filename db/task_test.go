package db_test

import (
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func newTask(guid string) *model.Task {
	return &model.Task{
		TaskGUID: guid,
		Domain:   "cf-tasks",
		TaskDefinition: model.TaskDefinition{
			RootFS:                "docker:///busybox",
			MemoryMB:              64,
			DiskMB:                32,
			Action:                &model.Action{Run: &model.RunAction{Path: "/bin/true"}},
			ResultFile:            "/tmp/result",
			CompletionCallbackURL: "http://127.0.0.1:9/done",
			Annotation:            "staging",
			PlacementTags:         []string{"blue"},
		},
	}
}

func desireTask(t *testing.T, s *db.Store, task *model.Task) *model.Task {
	t.Helper()
	out, err := s.DesireTask(ctx, task)
	if err != nil {
		t.Fatalf("DesireTask(%s): %v", task.TaskGUID, err)
	}
	return out
}

func eventNames(t *testing.T, s *db.Store) []string {
	t.Helper()
	evs, err := s.EventsAfter(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		if strings.HasPrefix(e.Name, "task_") {
			names = append(names, e.Name)
		}
	}
	return names
}

func TestTaskLifecycle(t *testing.T) {
	s := dbtest.NewStore(t)
	got := desireTask(t, s, newTask("t1"))
	if got.State != model.TaskPending || got.CreatedAt == 0 || got.CreatedAt != got.UpdatedAt {
		t.Fatalf("desired task = %+v", got)
	}
	_, err := s.DesireTask(ctx, newTask("t1"))
	wantType(t, err, model.ErrResourceExists)

	read, err := s.TaskByGUID(ctx, "t1")
	if err != nil || read.ResultFile != "/tmp/result" || read.Annotation != "staging" || read.PlacementTags[0] != "blue" {
		t.Fatalf("TaskByGUID = %+v, %v", read, err)
	}

	// Completing a PENDING task, or resolving one, is refused and changes nothing.
	_, err = s.CompleteTask(ctx, "t1", "cell-1", false, "", "")
	wantType(t, err, model.ErrInvalidStateTransition)
	_, err = s.ResolvingTask(ctx, "t1")
	wantType(t, err, model.ErrInvalidStateTransition)
	_, err = s.DeleteTask(ctx, "t1")
	wantType(t, err, model.ErrInvalidStateTransition)

	start, _, err := s.StartTask(ctx, "t1", "cell-1")
	if err != nil || !start {
		t.Fatalf("StartTask = %v, %v", start, err)
	}
	// A repeated start from the same cell does not start it twice; another cell cannot.
	if again, _, err := s.StartTask(ctx, "t1", "cell-1"); err != nil || again {
		t.Fatalf("repeated StartTask = %v, %v", again, err)
	}
	_, _, err = s.StartTask(ctx, "t1", "cell-2")
	wantType(t, err, model.ErrInvalidStateTransition)

	_, err = s.CompleteTask(ctx, "t1", "cell-2", false, "", "x")
	wantType(t, err, model.ErrRunningOnDifferentCell)
	_, err = s.CompleteTask(ctx, "t1", "cell-1", false, "", strings.Repeat("x", model.MaxTaskResultBytes+1))
	wantType(t, err, model.ErrInvalidRequest)

	ch, err := s.CompleteTask(ctx, "t1", "cell-1", false, "", `{"droplet":"/x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a := ch.After; a.State != model.TaskCompleted || a.CellID != "" || a.Result != `{"droplet":"/x"}` || a.FirstCompletedAt == 0 {
		t.Fatalf("completed = %+v", a)
	}
	// Completing twice, or cancelling a completed task, is InvalidStateTransition.
	_, err = s.CompleteTask(ctx, "t1", "cell-1", false, "", "")
	wantType(t, err, model.ErrInvalidStateTransition)
	_, err = s.CancelTask(ctx, "t1")
	wantType(t, err, model.ErrInvalidStateTransition)

	if _, err := s.ResolvingTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.CancelTask(ctx, "t1")
	wantType(t, err, model.ErrInvalidStateTransition)
	if gone, err := s.DeleteTask(ctx, "t1"); err != nil || gone.TaskGUID != "t1" {
		t.Fatalf("DeleteTask = %+v, %v", gone, err)
	}
	_, err = s.TaskByGUID(ctx, "t1")
	wantType(t, err, model.ErrResourceNotFound)

	want := []string{"task_created", "task_changed", "task_changed", "task_changed", "task_removed"}
	if got := eventNames(t, s); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v (refused requests must write nothing)", got, want)
	}
}

func TestTaskCancelRejectAndFilters(t *testing.T) {
	s := dbtest.NewStore(t)
	desireTask(t, s, newTask("pending"))
	ch, err := s.CancelTask(ctx, "pending")
	if err != nil || !ch.After.Failed || ch.After.FailureReason != model.TaskCancelledReason || ch.Before.CellID != "" {
		t.Fatalf("cancel pending = %+v, %v", ch, err)
	}

	running := newTask("running")
	running.Domain = "cf-app-staging"
	desireTask(t, s, running)
	if _, _, err := s.StartTask(ctx, "running", "cell-1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Tasks(ctx, model.TaskFilter{CellID: "cell-1"}); len(l) != 1 || l[0].TaskGUID != "running" {
		t.Fatalf("tasks on cell-1 = %+v", l)
	}
	if l, _ := s.Tasks(ctx, model.TaskFilter{Domain: "cf-tasks"}); len(l) != 1 || l[0].TaskGUID != "pending" {
		t.Fatalf("tasks of cf-tasks = %+v", l)
	}
	ch, err = s.CancelTask(ctx, "running")
	if err != nil || ch.Before.CellID != "cell-1" || ch.After.CellID != "" || ch.After.State != model.TaskCompleted {
		t.Fatalf("cancel running = %+v, %v", ch, err)
	}

	// Rejections put the task back to PENDING until the retries are used up, then fail it.
	desireTask(t, s, newTask("rejected"))
	for i := 1; i <= 2; i++ {
		ch, err := s.RejectTask(ctx, "rejected", "insufficient resources", 2)
		if err != nil || ch.After.State != model.TaskPending || ch.After.RejectionCount != int32(i) {
			t.Fatalf("reject %d = %+v, %v", i, ch, err)
		}
	}
	ch, err = s.RejectTask(ctx, "rejected", "insufficient resources", 2)
	if err != nil || ch.After.State != model.TaskCompleted || !ch.After.Failed || ch.After.FailureReason != "insufficient resources" {
		t.Fatalf("last reject = %+v, %v", ch, err)
	}
	_, err = s.RejectTask(ctx, "rejected", "again", 2)
	wantType(t, err, model.ErrInvalidRequest)
	_, err = s.RejectTask(ctx, "nope", "x", 2)
	wantType(t, err, model.ErrResourceNotFound)
}

func TestConvergeTasks(t *testing.T) {
	s := dbtest.NewStore(t)
	if err := s.UpsertCell(ctx, model.CellPresence{CellID: "alive", RepAddress: "http://127.0.0.1:1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"old-pending", "young-pending", "on-alive", "on-gone", "completed", "old-completed", "no-callback", "handed-over"} {
		task := newTask(g)
		if g == "no-callback" {
			task.CompletionCallbackURL = ""
		}
		desireTask(t, s, task)
	}
	for g, cell := range map[string]string{"on-alive": "alive", "on-gone": "gone", "completed": "alive", "old-completed": "alive", "no-callback": "alive", "handed-over": "alive"} {
		if _, _, err := s.StartTask(ctx, g, cell); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"completed", "old-completed", "no-callback", "handed-over"} {
		if _, err := s.CompleteTask(ctx, g, "alive", false, "", "ok"); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, s, `UPDATE tasks SET created_at = created_at - 3600e9 WHERE task_guid = 'old-pending'`)
	exec(t, s, `UPDATE tasks SET first_completed_at = first_completed_at - 180e9 WHERE task_guid = 'old-completed'`)
	if got, err := s.CallbackForWorkflow(ctx, "handed-over"); err != nil || got == nil || got.State != model.TaskResolving {
		t.Fatalf("hand over = %+v, %v", got, err)
	}
	exec(t, s, `UPDATE tasks SET updated_at = updated_at - 60e9 WHERE task_guid IN ('completed', 'no-callback', 'handed-over')`)

	res, err := s.ConvergeTasks(ctx, db.TaskConvergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExpiredPending != 1 || res.CellDisappeared != 1 || res.Deleted != 1 {
		t.Fatalf("result = %+v", res)
	}
	var deliver []string
	for _, d := range res.ToDeliver {
		deliver = append(deliver, d.TaskGUID)
	}
	// Only the callback handed over to Temporal is kicked: the pools claim the others.
	if strings.Join(deliver, ",") != "handed-over" {
		t.Fatalf("to deliver = %v", deliver)
	}
	for g, reason := range map[string]string{"old-pending": model.TaskNotStartedReason, "on-gone": model.TaskCellDisappearedReason} {
		got, _ := s.TaskByGUID(ctx, g)
		if got.State != model.TaskCompleted || !got.Failed || got.FailureReason != reason {
			t.Fatalf("%s = %+v", g, got)
		}
	}
	if got, _ := s.TaskByGUID(ctx, "young-pending"); got.State != model.TaskPending {
		t.Fatalf("young-pending = %+v", got)
	}
	if got, _ := s.TaskByGUID(ctx, "on-alive"); got.State != model.TaskRunning {
		t.Fatalf("on-alive = %+v", got)
	}
	_, err = s.TaskByGUID(ctx, "old-completed")
	wantType(t, err, model.ErrResourceNotFound)

	// Running tasks count against their cell's capacity.
	loads, err := s.CellLoads(ctx, nil)
	if err != nil || len(loads) != 1 || loads[0].Held.Containers != 1 || loads[0].Held.MemoryMB != 64 {
		t.Fatalf("loads = %+v, %v", loads, err)
	}
	pending, err := s.PendingTasks(ctx, 10)
	if err != nil || len(pending) != 1 || pending[0].TaskGUID != "young-pending" || pending[0].MemoryMB != 64 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
}
