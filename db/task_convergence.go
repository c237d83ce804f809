package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// TaskConvergeOptions are BBS's task convergence settings; zero values take BBS's defaults.
type TaskConvergeOptions struct {
	// KickDuration is how long a task whose callback was handed over to Temporal may stay
	// unchanged before its workflow is started again (a running one is found); default 30 s.
	KickDuration time.Duration
	// ExpirePending is how long a task may stay PENDING before it fails; default 30 min.
	ExpirePending time.Duration
	// ExpireCompleted is how long after its first completion a COMPLETED or RESOLVING task is
	// kept before it is deleted; default 2 min.
	ExpireCompleted time.Duration
}

// Defaults of task convergence (BBS's).
const (
	DefaultTaskKickDuration    = 30 * time.Second
	DefaultTaskExpirePending   = 30 * time.Minute
	DefaultTaskExpireCompleted = 2 * time.Minute
)

func (o TaskConvergeOptions) withDefaults() TaskConvergeOptions {
	if o.KickDuration <= 0 {
		o.KickDuration = DefaultTaskKickDuration
	}
	if o.ExpirePending <= 0 {
		o.ExpirePending = DefaultTaskExpirePending
	}
	if o.ExpireCompleted <= 0 {
		o.ExpireCompleted = DefaultTaskExpireCompleted
	}
	return o
}

// TaskConvergeResult says what a task convergence pass did. ToDeliver are the tasks whose
// callback was handed over to Temporal and whose workflow must be (re)started: those
// unchanged for longer than the kick duration. (The tasks the pass completed need nothing
// more: the delivery pools claim them, as every completed task with a callback.)
type TaskConvergeResult struct {
	ExpiredPending  int
	CellDisappeared int
	Deleted         int
	ToDeliver       []model.Task
}

// ConvergeTasks runs one pass of BBS's task convergence: PENDING tasks past ExpirePending
// fail ("not started within time limit"), RUNNING tasks whose cell has no presence fail
// ("cell disappeared before completion"), COMPLETED or RESOLVING tasks past ExpireCompleted
// are deleted, and tasks whose callback was handed over to Temporal and that have not
// changed for KickDuration are listed for delivery. Each step is one transaction and may be
// repeated.
func (s *Store) ConvergeTasks(ctx context.Context, opts TaskConvergeOptions) (*TaskConvergeResult, error) {
	opts = opts.withDefaults()
	now := s.nowNanos()
	res := &TaskConvergeResult{}

	expired, err := s.failTasksWhere(ctx, `state = 'PENDING' AND created_at < $1`, model.TaskNotStartedReason,
		now-opts.ExpirePending.Nanoseconds())
	if err != nil {
		return nil, err
	}
	res.ExpiredPending = len(expired)

	lost, err := s.failTasksWhere(ctx, `state = 'RUNNING' AND cell_id NOT IN (SELECT cell_id FROM cells WHERE expires_at > now())`,
		model.TaskCellDisappearedReason)
	if err != nil {
		return nil, err
	}
	res.CellDisappeared = len(lost)

	if res.Deleted, err = s.deleteExpiredTasks(ctx, now-opts.ExpireCompleted.Nanoseconds()); err != nil {
		return nil, err
	}

	var rows []taskRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+taskColumns+` FROM tasks
WHERE state IN ('COMPLETED', 'RESOLVING') AND callback_url <> '' AND updated_at < $1
AND (callback_handed_over OR (`+completedBefore+`))
ORDER BY updated_at`, now-opts.KickDuration.Nanoseconds()); err != nil {
		return nil, mapError(err)
	}
	if res.ToDeliver, err = taskModels(rows); err != nil {
		return nil, err
	}
	return res, nil
}

// failTasksWhere completes as failed, with reason, every task the condition selects, in one
// transaction with their events, and returns them as they are now.
func (s *Store) failTasksWhere(ctx context.Context, where, reason string, args ...any) ([]model.Task, error) {
	var out []model.Task
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		out = nil
		var rows []taskRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+taskColumns+` FROM tasks WHERE `+where+
			` ORDER BY task_guid FOR UPDATE SKIP LOCKED`, args...); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		before, err := taskModels(rows)
		if err != nil {
			return err
		}
		now := s.nowNanos()
		guids := make([]string, len(before))
		events := make([]pendingEvent, len(before))
		for i, b := range before {
			a := b
			complete(&a, true, reason, "")
			a.UpdatedAt, a.FirstCompletedAt = now, now
			guids[i] = b.TaskGUID
			events[i] = changed(model.EventTaskChanged, model.NewTaskEvent(&b), model.NewTaskEvent(&a))
			out = append(out, a)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'COMPLETED', cell_id = '', failed = true,
    failure_reason = $2, result = '', updated_at = $3, first_completed_at = $3, callback_next_at = now()
WHERE task_guid = ANY($1)`, pq.StringArray(guids), truncate(reason, model.MaxTaskReasonBytes), now); err != nil {
			return err
		}
		return appendEvents(ctx, tx, events...)
	})
	return out, err
}

// deleteExpiredTasks deletes the COMPLETED and RESOLVING tasks first completed before cut,
// with their events.
func (s *Store) deleteExpiredTasks(ctx context.Context, cut int64) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []taskRow
		if err := tx.SelectContext(ctx, &rows, `DELETE FROM tasks
WHERE state IN ('COMPLETED', 'RESOLVING') AND first_completed_at < $1 RETURNING `+taskColumns, cut); err != nil {
			return err
		}
		gone, err := taskModels(rows)
		if err != nil {
			return err
		}
		n = len(gone)
		events := make([]pendingEvent, len(gone))
		for i := range gone {
			events[i] = event(model.EventTaskRemoved, model.NewTaskEvent(&gone[i]))
		}
		return appendEvents(ctx, tx, events...)
	})
	return n, err
}

// PendingTask is a PENDING task as placement sees it.
type PendingTask struct {
	TaskGUID      string
	Domain        string
	MemoryMB      int32
	DiskMB        int32
	PlacementTags []string
	// UpdatedAt changes whenever the task does (a rejection): placement re-offers a task it
	// handed out when it changed, without waiting for the resend delay.
	UpdatedAt int64
}

// PendingTasks lists up to limit PENDING tasks, oldest first.
func (s *Store) PendingTasks(ctx context.Context, limit int) ([]PendingTask, error) {
	var rows []struct {
		TaskGUID      string         `db:"task_guid"`
		Domain        string         `db:"domain"`
		MemoryMB      int32          `db:"memory_mb"`
		DiskMB        int32          `db:"disk_mb"`
		PlacementTags pq.StringArray `db:"placement_tags"`
		UpdatedAt     int64          `db:"updated_at"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT task_guid, domain, memory_mb, disk_mb, placement_tags, updated_at
FROM tasks WHERE state = 'PENDING' ORDER BY created_at, task_guid LIMIT $1`, limit); err != nil {
		return nil, mapError(err)
	}
	out := make([]PendingTask, len(rows))
	for i, r := range rows {
		out[i] = PendingTask{TaskGUID: r.TaskGUID, Domain: r.Domain, MemoryMB: r.MemoryMB, DiskMB: r.DiskMB,
			PlacementTags: r.PlacementTags, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// TaskDefinitions returns the definitions of the given tasks (those that still exist), for
// placement to hand to cells.
func (s *Store) TaskDefinitions(ctx context.Context, guids []string) (map[string]model.Task, error) {
	var rows []taskRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+taskColumns+` FROM tasks WHERE task_guid = ANY($1)`,
		pq.StringArray(guids)); err != nil {
		return nil, mapError(err)
	}
	tasks, err := taskModels(rows)
	if err != nil {
		return nil, err
	}
	out := make(map[string]model.Task, len(tasks))
	for _, t := range tasks {
		out[t.TaskGUID] = t
	}
	return out, nil
}
