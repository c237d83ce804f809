package api_test

import (
	"net/http"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func taskObj(guid string) obj {
	return obj{"task_guid": guid, "domain": "cf-tasks", "rootfs": "preloaded:cflinuxfs4", "memory_mb": 16, "disk_mb": 16,
		"action": obj{"run": obj{"path": "/bin/true"}}, "result_file": "/tmp/r"}
}

// The task routes over a real store: the lifecycle a cell and a client drive, and every
// refusal with its type, status and no change.
func TestTaskRoutes(t *testing.T) {
	h := newHarness(t)
	got := h.ok("/v1/tasks/desire", obj{"task": taskObj("t1")}).obj(t, "task")
	if got.str(t, "state") != "PENDING" || got.str(t, "result_file") != "/tmp/r" {
		t.Fatalf("desired %v", got)
	}
	requireError(t, h.postJSON("/v1/tasks/desire", obj{"task": taskObj("t1")}), http.StatusConflict, model.ErrResourceExists)
	withState := taskObj("t2")
	withState["state"] = "COMPLETED"
	requireError(t, h.postJSON("/v1/tasks/desire", obj{"task": withState}), http.StatusBadRequest, model.ErrInvalidRequest)
	noAction := taskObj("t3")
	delete(noAction, "action")
	requireError(t, h.postJSON("/v1/tasks/desire", obj{"task": noAction}), http.StatusBadRequest, model.ErrInvalidRequest)
	badCallback := taskObj("t4")
	badCallback["completion_callback_url"] = "ftp://x"
	requireError(t, h.postJSON("/v1/tasks/desire", obj{"task": badCallback}), http.StatusBadRequest, model.ErrInvalidRequest)
	requireError(t, h.post("/v1/tasks/desire", `{"task": `), http.StatusBadRequest, model.ErrInvalidJSON)
	if n := h.count("tasks"); n != 1 {
		t.Fatalf("%d tasks stored after refusals, want 1", n)
	}

	requireError(t, h.postJSON("/v1/tasks/start", obj{"task_guid": "t1"}), http.StatusBadRequest, model.ErrInvalidRequest)
	if !h.ok("/v1/tasks/start", obj{"task_guid": "t1", "cell_id": "c1"})["should_start"].(bool) {
		t.Fatal("should_start false for a pending task")
	}
	if h.ok("/v1/tasks/start", obj{"task_guid": "t1", "cell_id": "c1"})["should_start"].(bool) {
		t.Fatal("should_start true for a task running on the same cell")
	}
	requireError(t, h.postJSON("/v1/tasks/complete", obj{"task_guid": "t1", "cell_id": "c2"}), http.StatusConflict, model.ErrRunningOnDifferentCell)
	requireError(t, h.postJSON("/v1/tasks/complete", obj{"task_guid": "t1", "cell_id": "c1", "failed": true, "result": "x"}),
		http.StatusBadRequest, model.ErrInvalidRequest)
	done := h.ok("/v1/tasks/complete", obj{"task_guid": "t1", "cell_id": "c1", "result": "42"}).obj(t, "task")
	if done.str(t, "state") != "COMPLETED" || done.str(t, "result") != "42" {
		t.Fatalf("completed %v", done)
	}
	requireError(t, h.postJSON("/v1/tasks/complete", obj{"task_guid": "t1", "cell_id": "c1"}), http.StatusConflict, model.ErrInvalidStateTransition)
	requireError(t, h.postJSON("/v1/tasks/cancel", obj{"task_guid": "t1"}), http.StatusConflict, model.ErrInvalidStateTransition)
	requireError(t, h.postJSON("/v1/tasks/delete", obj{"task_guid": "t1"}), http.StatusConflict, model.ErrInvalidStateTransition)

	list := h.ok("/v1/tasks/list", obj{"domain": "cf-tasks"}).list(t, "tasks")
	if len(list) != 1 || list[0].str(t, "task_guid") != "t1" {
		t.Fatalf("list %v", list)
	}
	if l := h.ok("/v1/tasks/list", obj{"cell_id": "c1"}).list(t, "tasks"); len(l) != 0 {
		t.Fatalf("a completed task is on no cell: %v", l)
	}
	h.ok("/v1/tasks/resolving", obj{"task_guid": "t1"})
	h.ok("/v1/tasks/delete", obj{"task_guid": "t1"})
	requireError(t, h.postJSON("/v1/tasks/get_by_task_guid", obj{"task_guid": "t1"}), http.StatusNotFound, model.ErrResourceNotFound)
	requireError(t, h.postJSON("/v1/tasks/get_by_task_guid", obj{"task_guid": "no such/guid"}), http.StatusBadRequest, model.ErrInvalidRequest)

	// Rejections: back to PENDING, then failed after the retries.
	h.ok("/v1/tasks/desire", obj{"task": taskObj("r1")})
	for range model.DefaultMaxTaskRetries {
		if st := h.ok("/v1/tasks/reject", obj{"task_guid": "r1", "rejection_reason": "full"}).obj(t, "task").str(t, "state"); st != "PENDING" {
			t.Fatalf("after a rejection: %s", st)
		}
	}
	failed := h.ok("/v1/tasks/reject", obj{"task_guid": "r1", "rejection_reason": "full"}).obj(t, "task")
	if failed.str(t, "state") != "COMPLETED" || failed.str(t, "failure_reason") != "full" {
		t.Fatalf("after the last rejection: %v", failed)
	}
}
