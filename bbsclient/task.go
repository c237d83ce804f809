package bbsclient

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// The task routes (docs/TASKS.md): what clients ask of tasks, and what cells report.

type taskResponse struct {
	Task *model.Task `json:"task"`
}

type taskGUIDRequest struct {
	TaskGUID string `json:"task_guid"`
}

// DesireTask stores a new task; ResourceExists when its guid is taken.
func (c *Client) DesireTask(ctx context.Context, t *model.Task) (*model.Task, error) {
	var resp taskResponse
	err := c.post(ctx, "/v1/tasks/desire", struct {
		Task *model.Task `json:"task"`
	}{t}, &resp)
	return resp.Task, err
}

// Tasks lists tasks by domain and cell.
func (c *Client) Tasks(ctx context.Context, f model.TaskFilter) ([]model.Task, error) {
	var resp struct {
		Tasks []model.Task `json:"tasks"`
	}
	err := c.post(ctx, "/v1/tasks/list", f, &resp)
	return resp.Tasks, err
}

// TaskByGUID reads one task.
func (c *Client) TaskByGUID(ctx context.Context, guid string) (*model.Task, error) {
	return c.taskChange(ctx, "get_by_task_guid", guid)
}

// CancelTask fails a task as cancelled; its cell stops it.
func (c *Client) CancelTask(ctx context.Context, guid string) (*model.Task, error) {
	return c.taskChange(ctx, "cancel", guid)
}

// ResolvingTask claims a completed task's result.
func (c *Client) ResolvingTask(ctx context.Context, guid string) (*model.Task, error) {
	return c.taskChange(ctx, "resolving", guid)
}

// DeleteTask removes a resolving task.
func (c *Client) DeleteTask(ctx context.Context, guid string) (*model.Task, error) {
	return c.taskChange(ctx, "delete", guid)
}

func (c *Client) taskChange(ctx context.Context, route, guid string) (*model.Task, error) {
	var resp taskResponse
	err := c.post(ctx, "/v1/tasks/"+route, taskGUIDRequest{TaskGUID: guid}, &resp)
	return resp.Task, err
}

// StartTask tells the BBS this cell starts a task; false means it must not run it.
func (c *Client) StartTask(ctx context.Context, guid, cellID string) (bool, error) {
	var resp struct {
		ShouldStart bool `json:"should_start"`
	}
	err := c.post(ctx, "/v1/tasks/start", struct {
		TaskGUID string `json:"task_guid"`
		CellID   string `json:"cell_id"`
	}{guid, cellID}, &resp)
	return resp.ShouldStart, err
}

// CompleteTask reports how a task ended on this cell.
func (c *Client) CompleteTask(ctx context.Context, guid, cellID string, failed bool, reason, result string) error {
	return c.post(ctx, "/v1/tasks/complete", struct {
		TaskGUID      string `json:"task_guid"`
		CellID        string `json:"cell_id"`
		Failed        bool   `json:"failed"`
		FailureReason string `json:"failure_reason"`
		Result        string `json:"result"`
	}{guid, cellID, failed, reason, result}, &taskResponse{})
}
