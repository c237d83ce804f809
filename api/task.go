package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/tasks"
)

// The task routes (docs/TASKS.md): BBS's task routes with JSON bodies. Clients desire,
// list, get, cancel, resolve and delete; cells start, complete and reject. Each changed task
// comes back in the answer.

// taskHandlers serve the task routes over the task service shared with the BBS protocol.
type taskHandlers struct{ tasks *tasks.Service }

type desireTaskRequest struct {
	Task model.Task `json:"task"`
}

// Validate checks the task at the edge; state fields a client may not set are refused.
func (r *desireTaskRequest) Validate() error {
	if r.Task.State != "" || r.Task.CellID != "" || r.Task.Result != "" || r.Task.Failed || r.Task.FailureReason != "" {
		return model.Errorf(model.ErrInvalidRequest, "a desired task must not carry state, cell_id, result, failed or failure_reason")
	}
	return r.Task.Validate()
}

type tasksRequest struct {
	model.TaskFilter
}

type taskGUIDRequest struct {
	TaskGUID string `json:"task_guid"`
}

func (r *taskGUIDRequest) Validate() error { return model.ValidateGUID("task_guid", r.TaskGUID) }

type startTaskRequest struct {
	TaskGUID string `json:"task_guid"`
	CellID   string `json:"cell_id"`
}

func (r *startTaskRequest) Validate() error {
	if r.CellID == "" {
		return model.Errorf(model.ErrInvalidRequest, "cell_id is required")
	}
	return model.ValidateGUID("task_guid", r.TaskGUID)
}

type completeTaskRequest struct {
	TaskGUID      string `json:"task_guid"`
	CellID        string `json:"cell_id"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
}

func (r *completeTaskRequest) Validate() error {
	if r.CellID == "" {
		return model.Errorf(model.ErrInvalidRequest, "cell_id is required")
	}
	if r.Failed && r.Result != "" {
		return model.Errorf(model.ErrInvalidRequest, "a failed task has no result")
	}
	return model.ValidateGUID("task_guid", r.TaskGUID)
}

type rejectTaskRequest struct {
	TaskGUID        string `json:"task_guid"`
	RejectionReason string `json:"rejection_reason"`
}

func (r *rejectTaskRequest) Validate() error { return model.ValidateGUID("task_guid", r.TaskGUID) }

type taskResponse struct {
	Task *model.Task `json:"task"`
}

type tasksResponse struct {
	Tasks []model.Task `json:"tasks"`
}

type startTaskResponse struct {
	ShouldStart bool `json:"should_start"`
}

func (h *taskHandlers) desireTask(ctx context.Context, req *desireTaskRequest) (taskResponse, error) {
	t, err := h.tasks.Desire(ctx, &req.Task)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) listTasks(ctx context.Context, req *tasksRequest) (tasksResponse, error) {
	l, err := h.tasks.List(ctx, req.TaskFilter)
	if l == nil {
		l = []model.Task{}
	}
	return tasksResponse{Tasks: l}, err
}

func (h *taskHandlers) taskByGUID(ctx context.Context, req *taskGUIDRequest) (taskResponse, error) {
	t, err := h.tasks.Get(ctx, req.TaskGUID)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) cancelTask(ctx context.Context, req *taskGUIDRequest) (taskResponse, error) {
	t, err := h.tasks.Cancel(ctx, req.TaskGUID)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) resolvingTask(ctx context.Context, req *taskGUIDRequest) (taskResponse, error) {
	t, err := h.tasks.Resolving(ctx, req.TaskGUID)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) deleteTask(ctx context.Context, req *taskGUIDRequest) (taskResponse, error) {
	t, err := h.tasks.Delete(ctx, req.TaskGUID)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) startTask(ctx context.Context, req *startTaskRequest) (startTaskResponse, error) {
	start, err := h.tasks.Start(ctx, req.TaskGUID, req.CellID)
	return startTaskResponse{ShouldStart: start}, err
}

func (h *taskHandlers) completeTask(ctx context.Context, req *completeTaskRequest) (taskResponse, error) {
	t, err := h.tasks.Complete(ctx, req.TaskGUID, req.CellID, req.Failed, req.FailureReason, req.Result)
	return taskResponse{Task: t}, err
}

func (h *taskHandlers) rejectTask(ctx context.Context, req *rejectTaskRequest) (taskResponse, error) {
	t, err := h.tasks.Reject(ctx, req.TaskGUID, req.RejectionReason)
	return taskResponse{Task: t}, err
}
