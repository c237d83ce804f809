package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// Completion callbacks, with the task's row as their durable record: a delivery pool in each
// worker process claims the completed tasks that have a callback, for a lease it renews
// while it works (so that a killed worker's claims expire and another pool delivers them),
// posts each, and deletes those the receiver answered. A receiver that cannot be reached is
// tried again after a back-off, then handed over to a Temporal workflow, which the pools
// leave alone (migration 0022).

// CallbacksChannel is the notification a task with a callback sends when it completes (a
// trigger of migration 0022): the pools wake on it rather than wait for their poll.
const CallbacksChannel = "bbs_task_callbacks"

// dueCallbacks selects the tasks a pool may claim: completed or resolving, with a callback,
// not handed over to Temporal (the condition of the tasks_callbacks_due index), completed by
// a build with pools (callback_next_at set), no other pool holding a live claim, and no
// back-off under way.
const dueCallbacks = `state IN ('COMPLETED', 'RESOLVING') AND callback_url <> '' AND NOT callback_handed_over
AND (callback_claimed_until IS NULL OR callback_claimed_until < now())
AND callback_next_at <= now()`

// completedBefore selects the tasks with a callback that a release before the pools
// completed (every completion since sets callback_next_at, which nothing clears) and no pool
// holds: that release's API started a workflow per task to deliver it, which a worker of
// that release may be running during a rolling upgrade with activities that know nothing of
// the pools' claims, so a pool claiming such a task would post it a second time. The pools
// leave them to their workflows; convergence starts the workflow of one left waiting (its
// start lost, or the task completed by a release that had pools but did not mark its
// completions yet), as it does for a handed-over callback.
const completedBefore = `NOT callback_handed_over AND callback_next_at IS NULL
AND (callback_claimed_until IS NULL OR callback_claimed_until < now())`

// CallbackClaim is a task whose callback a pool claimed: the task as it is now (RESOLVING)
// and the failed attempts before this one.
type CallbackClaim struct {
	Task     model.Task
	Attempts int
}

// ClaimCallbacks claims up to limit due callbacks, oldest first, for owner until lease from
// now (the database's clock, which every worker shares): COMPLETED ones become RESOLVING,
// with their task_changed events, as BBS's completion workers resolve a task before they
// post. Rows another transaction holds are skipped, not waited for, so that pools claim
// side by side.
func (s *Store) ClaimCallbacks(ctx context.Context, owner string, limit int, lease time.Duration) ([]CallbackClaim, error) {
	var out []CallbackClaim
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		out = nil
		var rows []struct {
			taskRow
			Attempts int `db:"callback_attempts"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT `+taskColumns+`, callback_attempts FROM tasks
WHERE `+dueCallbacks+` ORDER BY updated_at LIMIT $1 FOR UPDATE SKIP LOCKED`, limit); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		now := s.nowNanos()
		guids := make([]string, len(rows))
		var events []pendingEvent
		var resolved []string
		for i := range rows {
			before, err := rows[i].model()
			if err != nil {
				return err
			}
			after := before
			if before.State == model.TaskCompleted {
				after.State, after.UpdatedAt = model.TaskResolving, now
				events = append(events, changed(model.EventTaskChanged, model.NewTaskEvent(&before), model.NewTaskEvent(&after)))
				resolved = append(resolved, before.TaskGUID)
			}
			guids[i] = before.TaskGUID
			out = append(out, CallbackClaim{Task: after, Attempts: rows[i].Attempts})
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET callback_claimed_by = $2,
    callback_claimed_until = now() + $3 * interval '1 millisecond',
    state = CASE WHEN task_guid = ANY($4) THEN 'RESOLVING' ELSE state END,
    updated_at = CASE WHEN task_guid = ANY($4) THEN $5 ELSE updated_at END
WHERE task_guid = ANY($1)`, pq.StringArray(guids), owner, lease.Milliseconds(), pq.StringArray(resolved), now); err != nil {
			return err
		}
		return appendEvents(ctx, tx, events...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RenewCallbackClaims extends every claim owner holds to lease from now.
func (s *Store) RenewCallbackClaims(ctx context.Context, owner string, lease time.Duration) error {
	_, err := s.db.ExecContext(ctx, `UPDATE tasks SET callback_claimed_until = now() + $2 * interval '1 millisecond'
WHERE state = 'RESOLVING' AND callback_url <> '' AND NOT callback_handed_over AND callback_claimed_by = $1`,
		owner, lease.Milliseconds())
	return mapError(err)
}

// ResolveCallbacks deletes the tasks whose callbacks owner delivered, with their
// task_removed events, in one transaction. A task owner no longer holds (its claim expired
// and another pool took it, or it was deleted meanwhile) is left alone; how many were
// deleted is returned.
func (s *Store) ResolveCallbacks(ctx context.Context, owner string, guids []string) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []taskRow
		if err := tx.SelectContext(ctx, &rows, `DELETE FROM tasks
WHERE task_guid = ANY($1) AND state = 'RESOLVING' AND callback_claimed_by = $2 AND NOT callback_handed_over
RETURNING `+taskColumns, pq.StringArray(guids), owner); err != nil {
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

// CallbackRelease is how a pool gives up a claim whose receiver could not be reached: the
// error of that attempt, and either when to try again or that Temporal takes over.
type CallbackRelease struct {
	LastError string
	RetryIn   time.Duration
	HandOver  bool
}

// ReleaseCallback gives up owner's claim of a task after a failed attempt, counting it.
// False means owner no longer held it (its claim expired and another pool took it, or the
// task is gone).
func (s *Store) ReleaseCallback(ctx context.Context, owner, guid string, r CallbackRelease) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET callback_claimed_by = '', callback_claimed_until = NULL,
    callback_attempts = callback_attempts + 1, callback_last_error = $3,
    callback_next_at = now() + $4 * interval '1 millisecond', callback_handed_over = $5
WHERE task_guid = $1 AND state = 'RESOLVING' AND callback_claimed_by = $2 AND NOT callback_handed_over`,
		guid, owner, truncate(r.LastError, model.MaxTaskReasonBytes), r.RetryIn.Milliseconds(), r.HandOver)
	if err != nil {
		return false, mapError(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ReleaseCallbackClaims gives up every claim owner holds, without counting an attempt: a
// pool that stops lets the others deliver at once rather than after its leases expire.
func (s *Store) ReleaseCallbackClaims(ctx context.Context, owner string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE tasks SET callback_claimed_by = '', callback_claimed_until = NULL
WHERE state = 'RESOLVING' AND callback_url <> '' AND NOT callback_handed_over AND callback_claimed_by = $1`, owner)
	return mapError(err)
}

// CallbackForWorkflow claims a task's callback for its Temporal workflow and returns the
// task (RESOLVING) to deliver: a task a pool handed over, or one no pool holds (a workflow
// started before the pools existed, or by convergence), which is marked handed over so that
// the pools leave it alone from now on. Nil, with no error, means there is nothing for the
// workflow to deliver: the task is gone, has no callback, or a pool holds a live claim on it
// (the pool delivers it, or hands it over). Only a completed or resolving task has a
// result: any other state is InvalidStateTransition.
func (s *Store) CallbackForWorkflow(ctx context.Context, guid string) (*model.Task, error) {
	var out *model.Task
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			taskRow
			HandedOver bool `db:"callback_handed_over"`
			PoolHolds  bool `db:"pool_holds"`
		}
		err := tx.GetContext(ctx, &row, `SELECT `+taskColumns+`, callback_handed_over,
    coalesce(callback_claimed_until >= now(), false) AS pool_holds
FROM tasks WHERE task_guid = $1 FOR UPDATE`, guid)
		if model.IsType(mapError(err), model.ErrResourceNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		before, err := row.model()
		if err != nil {
			return err
		}
		if before.State != model.TaskCompleted && before.State != model.TaskResolving {
			return model.Errorf(model.ErrInvalidStateTransition,
				"task %s is %s: only a completed task has a result to deliver", guid, before.State)
		}
		if before.CompletionCallbackURL == "" || (!row.HandedOver && row.PoolHolds) {
			return nil
		}
		after := before
		if before.State == model.TaskCompleted {
			after.State, after.UpdatedAt = model.TaskResolving, s.nowNanos()
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = $2, updated_at = $3, callback_handed_over = true,
    callback_claimed_by = '', callback_claimed_until = NULL WHERE task_guid = $1`, guid, after.State, after.UpdatedAt); err != nil {
			return err
		}
		out = &after
		if before.State == after.State {
			return nil
		}
		return appendEvents(ctx, tx, changed(model.EventTaskChanged, model.NewTaskEvent(&before), model.NewTaskEvent(&after)))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
