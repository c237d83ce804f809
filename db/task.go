package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// Tasks (BBS's task DB): each change locks the task's row, checks BBS's state machine, and
// writes the change with its event in one transaction.

const taskColumns = `task_guid, domain, state, cell_id, definition, protobuf, created_at, updated_at,
first_completed_at, result, failed, failure_reason, rejection_count, rejection_reason`

// taskRow is one row of the tasks table.
type taskRow struct {
	TaskGUID         string   `db:"task_guid"`
	Domain           string   `db:"domain"`
	State            string   `db:"state"`
	CellID           string   `db:"cell_id"`
	Definition       jsonText `db:"definition"`
	Protobuf         []byte   `db:"protobuf"`
	CreatedAt        int64    `db:"created_at"`
	UpdatedAt        int64    `db:"updated_at"`
	FirstCompletedAt int64    `db:"first_completed_at"`
	Result           string   `db:"result"`
	Failed           bool     `db:"failed"`
	FailureReason    string   `db:"failure_reason"`
	RejectionCount   int32    `db:"rejection_count"`
	RejectionReason  string   `db:"rejection_reason"`
}

func (r *taskRow) model() (model.Task, error) {
	t := model.Task{TaskGUID: r.TaskGUID, Domain: r.Domain, State: model.TaskState(r.State), CellID: r.CellID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FirstCompletedAt: r.FirstCompletedAt, Result: r.Result,
		Failed: r.Failed, FailureReason: r.FailureReason, RejectionCount: r.RejectionCount, RejectionReason: r.RejectionReason}
	if err := json.Unmarshal(r.Definition, &t.TaskDefinition); err != nil {
		return t, fmt.Errorf("decode definition of task %q: %w", r.TaskGUID, err)
	}
	t.Protobuf = r.Protobuf
	return t, nil
}

func taskModels(rows []taskRow) ([]model.Task, error) {
	out := make([]model.Task, len(rows))
	for i := range rows {
		t, err := rows[i].model()
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// truncate cuts s to at most n bytes, as BBS cuts failure and rejection reasons.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// DesireTask stores a new PENDING task; ResourceExists when the guid is taken.
func (s *Store) DesireTask(ctx context.Context, t *model.Task) (*model.Task, error) {
	def, err := json.Marshal(&t.TaskDefinition)
	if err != nil {
		return nil, model.Errorf(model.ErrInvalidRequest, "task definition cannot be stored: %v", err)
	}
	now := s.nowNanos()
	out := *t
	out.State, out.CellID, out.CreatedAt, out.UpdatedAt = model.TaskPending, "", now, now
	out.FirstCompletedAt, out.Result, out.Failed, out.FailureReason = 0, "", false, ""
	out.RejectionCount, out.RejectionReason = 0, ""
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `
INSERT INTO tasks (task_guid, domain, state, definition, protobuf, memory_mb, disk_mb, placement_tags,
    callback_url, created_at, updated_at)
VALUES ($1, $2, 'PENDING', $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (task_guid) DO NOTHING`,
			t.TaskGUID, t.Domain, jsonText(def), t.Protobuf, t.MemoryMB, t.DiskMB,
			pq.StringArray(nonNil(t.PlacementTags)), t.CompletionCallbackURL, now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.Errorf(model.ErrResourceExists, "task %q already exists", t.TaskGUID)
		}
		return appendEvents(ctx, tx, event(model.EventTaskCreated, model.NewTaskEvent(&out)))
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Tasks lists the tasks of a domain and/or a cell (all when the filter is empty), oldest
// first.
func (s *Store) Tasks(ctx context.Context, f model.TaskFilter) ([]model.Task, error) {
	var rows []taskRow
	err := s.db.SelectContext(ctx, &rows, planPerCall+`SELECT `+taskColumns+` FROM tasks
WHERE ($1 = '' OR domain = $1) AND ($2 = '' OR cell_id = $2) ORDER BY created_at, task_guid`, f.Domain, f.CellID)
	if err != nil {
		return nil, mapError(err)
	}
	return taskModels(rows)
}

// TaskByGUID returns one task; ResourceNotFound when there is none.
func (s *Store) TaskByGUID(ctx context.Context, guid string) (*model.Task, error) {
	var row taskRow
	if err := s.db.GetContext(ctx, &row, `SELECT `+taskColumns+` FROM tasks WHERE task_guid = $1`, guid); err != nil {
		return nil, taskError(err, guid)
	}
	t, err := row.model()
	return &t, err
}

// taskError names the task in a not-found error.
func taskError(err error, guid string) error {
	err = mapError(err)
	if model.IsType(err, model.ErrResourceNotFound) {
		return model.Errorf(model.ErrResourceNotFound, "no task %q", guid)
	}
	return err
}

// TaskChange is one task before and after a change.
type TaskChange struct {
	Before, After model.Task
}

// changeTask locks the task, lets fn change a copy of it (returning false to leave it as it
// is), and stores the change with its task_changed event.
func (s *Store) changeTask(ctx context.Context, guid string, fn func(t *model.Task) (bool, error)) (*TaskChange, error) {
	var ch *TaskChange
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row taskRow
		if err := tx.GetContext(ctx, &row, `SELECT `+taskColumns+` FROM tasks WHERE task_guid = $1 FOR UPDATE`, guid); err != nil {
			return taskError(err, guid)
		}
		before, err := row.model()
		if err != nil {
			return err
		}
		after := before
		write, err := fn(&after)
		if err != nil {
			return err
		}
		ch = &TaskChange{Before: before, After: after}
		if !write {
			return nil
		}
		after.UpdatedAt = s.nowNanos()
		completes := after.State == model.TaskCompleted && before.State != model.TaskCompleted && before.State != model.TaskResolving
		if completes {
			after.FirstCompletedAt = after.UpdatedAt
		}
		ch.After = after
		// A completion sets callback_next_at: its callback is the pools' to deliver, not a
		// workflow's of the release before them (completedBefore).
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = $2, cell_id = $3, updated_at = $4,
    first_completed_at = $5, result = $6, failed = $7, failure_reason = $8, rejection_count = $9, rejection_reason = $10,
    callback_next_at = CASE WHEN $11 THEN now() ELSE callback_next_at END
WHERE task_guid = $1`, guid, after.State, after.CellID, after.UpdatedAt, after.FirstCompletedAt, after.Result,
			after.Failed, after.FailureReason, after.RejectionCount, after.RejectionReason, completes); err != nil {
			return err
		}
		return appendEvents(ctx, tx, changed(model.EventTaskChanged, model.NewTaskEvent(&before), model.NewTaskEvent(&after)))
	})
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// complete makes t COMPLETED with the outcome given (BBS's completeTask): the cell no longer
// holds it.
func complete(t *model.Task, failed bool, reason, result string) {
	t.State, t.CellID = model.TaskCompleted, ""
	t.Failed, t.FailureReason, t.Result = failed, truncate(reason, model.MaxTaskReasonBytes), result
	if failed {
		t.Result = ""
	}
}

// StartTask records that cellID starts the task (PENDING → RUNNING). shouldStart is false,
// with no error, when the task already runs on that cell (a repeated request): the cell must
// not start it twice. From any other state it is InvalidStateTransition.
func (s *Store) StartTask(ctx context.Context, guid, cellID string) (shouldStart bool, ch *TaskChange, err error) {
	if cellID == "" {
		return false, nil, model.Errorf(model.ErrInvalidRequest, "cell_id is required")
	}
	ch, err = s.changeTask(ctx, guid, func(t *model.Task) (bool, error) {
		if t.State == model.TaskRunning && t.CellID == cellID {
			return false, nil
		}
		if err := t.ValidateTransitionTo(model.TaskRunning); err != nil {
			return false, err
		}
		t.State, t.CellID = model.TaskRunning, cellID
		shouldStart = true
		return true, nil
	})
	return shouldStart, ch, err
}

// CompleteTask records how the task ended on cellID (RUNNING → COMPLETED). A task running on
// another cell is RunningOnDifferentCell; any state but RUNNING is InvalidStateTransition.
func (s *Store) CompleteTask(ctx context.Context, guid, cellID string, failed bool, reason, result string) (*TaskChange, error) {
	if len(result) > model.MaxTaskResultBytes {
		return nil, model.Errorf(model.ErrInvalidRequest, "result is %d bytes, more than the limit of %d", len(result), model.MaxTaskResultBytes)
	}
	return s.changeTask(ctx, guid, func(t *model.Task) (bool, error) {
		if t.State == model.TaskRunning && t.CellID != cellID {
			return false, model.Errorf(model.ErrRunningOnDifferentCell, "task %q runs on cell %q, not %q", guid, t.CellID, cellID)
		}
		if err := t.ValidateTransitionTo(model.TaskCompleted); err != nil {
			return false, err
		}
		complete(t, failed, reason, result)
		return true, nil
	})
}

// FailTask completes a PENDING or RUNNING task as failed with reason (BBS's FailTask, also
// what a cancel does).
func (s *Store) FailTask(ctx context.Context, guid, reason string) (*TaskChange, error) {
	return s.changeTask(ctx, guid, func(t *model.Task) (bool, error) {
		if t.State != model.TaskPending {
			if err := t.ValidateTransitionTo(model.TaskCompleted); err != nil {
				return false, err
			}
		}
		complete(t, true, reason, "")
		return true, nil
	})
}

// CancelTask fails the task with "task was cancelled". The change's Before.CellID is the
// cell to tell to stop it ("" when it had not started).
func (s *Store) CancelTask(ctx context.Context, guid string) (*TaskChange, error) {
	return s.FailTask(ctx, guid, model.TaskCancelledReason)
}

// RejectTask records that a cell refused the task: it is PENDING again for another try,
// with the reason and one more rejection. A task rejected maxRetries times already is failed
// with the reason instead (BBS's max_task_retries). Only PENDING and RUNNING tasks can be
// rejected.
func (s *Store) RejectTask(ctx context.Context, guid, reason string, maxRetries int) (*TaskChange, error) {
	return s.changeTask(ctx, guid, func(t *model.Task) (bool, error) {
		if t.State != model.TaskPending && t.State != model.TaskRunning {
			return false, model.Errorf(model.ErrInvalidRequest, "task %q is %s: only a PENDING or RUNNING task can be rejected", guid, t.State)
		}
		if int(t.RejectionCount) >= maxRetries {
			complete(t, true, reason, "")
			return true, nil
		}
		t.RejectionCount++
		t.RejectionReason = truncate(reason, model.MaxTaskReasonBytes)
		t.State, t.CellID = model.TaskPending, ""
		return true, nil
	})
}

// ResolvingTask claims a COMPLETED task's result (COMPLETED → RESOLVING), so that only one
// resolver handles it.
func (s *Store) ResolvingTask(ctx context.Context, guid string) (*TaskChange, error) {
	return s.changeTask(ctx, guid, func(t *model.Task) (bool, error) {
		if err := t.ValidateTransitionTo(model.TaskResolving); err != nil {
			return false, err
		}
		t.State = model.TaskResolving
		return true, nil
	})
}

// DeleteTask removes a RESOLVING task; any other state is InvalidStateTransition.
func (s *Store) DeleteTask(ctx context.Context, guid string) (*model.Task, error) {
	var gone model.Task
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row taskRow
		if err := tx.GetContext(ctx, &row, `DELETE FROM tasks WHERE task_guid = $1 RETURNING `+taskColumns, guid); err != nil {
			return taskError(err, guid)
		}
		t, err := row.model()
		if err != nil {
			return err
		}
		if t.State != model.TaskResolving {
			// The transaction is rolled back: nothing was deleted.
			return model.Errorf(model.ErrInvalidStateTransition, "Cannot transition from %s to %s", t.State, model.TaskResolving)
		}
		gone = t
		return appendEvents(ctx, tx, event(model.EventTaskRemoved, model.NewTaskEvent(&t)))
	})
	if err != nil {
		return nil, err
	}
	return &gone, nil
}
