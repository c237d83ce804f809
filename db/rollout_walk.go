package db

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// The steps of a rollout's walk, as the rollout activities call them. Each is idempotent:
// Temporal retries activities, so doing a step twice must leave the same state as once.

// RolloutByID returns a rollout.
func (s *Store) RolloutByID(ctx context.Context, id string) (*model.Rollout, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return nil, err
	}
	var r rolloutRow
	err := s.db.GetContext(ctx, &r, `SELECT `+rolloutColumns+` FROM rollouts WHERE id = $1`, id)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout", id)
	}
	if err != nil {
		return nil, mapError(err)
	}
	ro := r.model()
	return &ro, nil
}

// DesiredInstances returns an LRP's instance count and healthy definition; exists is false
// once the LRP is gone.
func (s *Store) DesiredInstances(ctx context.Context, guid string) (instances int32, healthy string, exists bool, err error) {
	var row struct {
		Instances int32          `db:"instances"`
		Healthy   sql.NullString `db:"healthy_definition_id"`
	}
	err = s.db.GetContext(ctx, &row, `SELECT instances, healthy_definition_id FROM desired_lrps WHERE process_guid = $1`, guid)
	if err == sql.ErrNoRows {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, mapError(err)
	}
	return row.Instances, row.Healthy.String, true, nil
}

// DesireInstance makes sure an ORDINARY instance of def exists at index, creating it
// UNCLAIMED (for placement) when there is none, and returns it. An index at or beyond the
// LRP's instance count (a scale-down raced the walk) creates nothing and returns an
// instance with no state.
func (s *Store) DesireInstance(ctx context.Context, guid, def string, index int32) (*model.ActualLRP, error) {
	var out *model.ActualLRP
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		l, err := lockDesired(ctx, tx, guid)
		if err != nil {
			return err
		}
		var events eventBatch
		if out, err = s.desireInTx(ctx, tx, &events, guid, def, index, l.Instances); err != nil {
			return err
		}
		return events.flush(ctx, tx)
	})
	return out, err
}

// desireInTx is DesireInstance inside a transaction that holds the LRP's lock; instances is
// the LRP's count.
func (s *Store) desireInTx(ctx context.Context, tx *sqlx.Tx, events *eventBatch, guid, def string, index, instances int32) (*model.ActualLRP, error) {
	if index >= instances {
		// Scaled below this index since the walk read the count: nothing to start.
		return &model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: guid, DefinitionID: def, Index: index}}, nil
	}
	// The insert comes first: the index's instance of def is new but for a walk back or a
	// repeated step, and one statement is then all it costs.
	var rows []actualRow
	for attempt := 1; ; attempt++ {
		rows = rows[:0]
		err := tx.SelectContext(ctx, &rows, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain,
    state, since, modification_epoch)
SELECT l.process_guid, d.definition_id, $3, l.domain, 'UNCLAIMED', $4, gen_random_uuid()::text
FROM desired_lrps l JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = $2 AND d.live
WHERE l.process_guid = $1
ON CONFLICT DO NOTHING
RETURNING `+actualColumns, guid, def, index, s.nowNanos())
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 {
			break
		}
		// There is one already (possibly a retiring one: a walk back over an index whose old
		// instance is still draining; it stays retiring, and the wait treats it as not there
		// yet), or def is not live.
		a, err := instanceInTx(ctx, tx, guid, def, index)
		if !model.IsType(err, model.ErrResourceNotFound) {
			return a, err
		}
		// Nothing there now: def is not live, or the instance the insert met was removed in
		// between (a walk back over an index whose old instance its cell had claimed the stop
		// of, and removed): the next insert finds the place free.
		var live bool
		if err := tx.GetContext(ctx, &live, `SELECT EXISTS (SELECT 1 FROM lrp_definitions
WHERE process_guid = $1 AND definition_id = $2 AND live)`, guid, def); err != nil {
			return nil, err
		}
		if !live || attempt == 3 {
			return nil, model.Errorf(model.ErrResourceNotFound, "LRP %q has no live definition %q", guid, def)
		}
	}
	out, err := rows[0].model()
	if err != nil {
		return nil, err
	}
	events.add(event(model.EventActualLRPCreated, out))
	return &out, nil
}

// Instance returns the ORDINARY instance of def at index.
func (s *Store) Instance(ctx context.Context, guid, def string, index int32) (*model.ActualLRP, error) {
	var row actualRow
	err := s.db.GetContext(ctx, &row, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY'`, guid, def, index)
	if err == sql.ErrNoRows {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance of %q definition %q at index %d", guid, def, index)
	}
	if err != nil {
		return nil, mapError(err)
	}
	a, err := row.model()
	return &a, err
}

func instanceInTx(ctx context.Context, tx *sqlx.Tx, guid, def string, index int32) (*model.ActualLRP, error) {
	var row actualRow
	err := tx.GetContext(ctx, &row, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY' FOR UPDATE`, guid, def, index)
	if err == sql.ErrNoRows {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance of %q definition %q at index %d", guid, def, index)
	}
	if err != nil {
		return nil, err
	}
	a, err := row.model()
	return &a, err
}

// RetireOthers retires every ORDINARY instance at index not of definition keep.
func (s *Store) RetireOthers(ctx context.Context, guid, keep string, index int32) ([]model.ActualLRP, error) {
	return s.retireAt(ctx, guid, index, matchOthers, keep)
}

// RetireInstance retires the ORDINARY instance of def at index — unless it is all the index
// has while the LRP still wants the index: a rollout interrupted at an index that a scale-up
// during it created on the target, with no old instance to keep serving, would leave the
// index empty. The instance then stays for the walk (back) to replace.
func (s *Store) RetireInstance(ctx context.Context, guid, def string, index int32) ([]model.ActualLRP, error) {
	return s.retireAt(ctx, guid, index, matchInstance, def)
}

// retireAt deletes the matching UNCLAIMED and CRASHED instances at index and marks the
// CLAIMED and RUNNING ones retiring and returns them: their cells must stop them (and then
// remove the records), and until then a crash must not bring them back.
func (s *Store) retireAt(ctx context.Context, guid string, index int32, match, def string) ([]model.ActualLRP, error) {
	var toStop []model.ActualLRP
	err := s.inTx(ctx, func(tx *sqlx.Tx) (err error) {
		var events eventBatch
		if toStop, err = retireAtTx(ctx, tx, &events, guid, index, match, def); err != nil {
			return err
		}
		return events.flush(ctx, tx)
	})
	return toStop, err
}

// The matches of retireAt: RetireOthers' and RetireInstance's.
const (
	matchOthers   = `definition_id <> $3`
	matchInstance = `definition_id = $3 AND (
    instance_index >= (SELECT coalesce(max(l.instances), 0) FROM desired_lrps l WHERE l.process_guid = $1)
    OR EXISTS (SELECT 1 FROM actual_lrps o WHERE o.process_guid = $1 AND o.instance_index = $2
        AND o.presence = 'ORDINARY' AND NOT o.retiring AND o.definition_id <> $3))`
)

func retireAtTx(ctx context.Context, tx *sqlx.Tx, events *eventBatch, guid string, index int32, match, def string) ([]model.ActualLRP, error) {
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, `DELETE FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = 'ORDINARY' AND `+match+`
  AND state IN ('UNCLAIMED', 'CRASHED')
RETURNING `+actualColumns, guid, index, def); err != nil {
		return nil, err
	}
	removed, err := actualModels(rows)
	if err != nil {
		return nil, err
	}
	events.add(instanceEvents(model.EventActualLRPRemoved, removed)...)
	return markRetiring(ctx, tx, events, `process_guid = $1 AND instance_index = $2 AND presence = 'ORDINARY' AND `+match, guid, index, def)
}

// RecordRolloutProgress stores where a rollout's walk is.
func (s *Store) RecordRolloutProgress(ctx context.Context, id string, p model.RolloutProgress) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := recordProgressRow(ctx, tx, id, p)
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, event(model.EventRolloutChanged, r.model()))
	})
}

// recordProgressRow writes p into the rollout row and returns the row.
func recordProgressRow(ctx context.Context, tx *sqlx.Tx, id string, p model.RolloutProgress) (*rolloutRow, error) {
	given := p.GivenUpIndices
	if given == nil {
		given = []int32{}
	}
	failure, err := encodeFailure(p.Failure)
	if err != nil {
		return nil, err
	}
	revertFailure, err := encodeFailure(p.RevertFailure)
	if err != nil {
		return nil, err
	}
	var r rolloutRow
	err = tx.GetContext(ctx, &r, `UPDATE rollouts SET
    state = CASE WHEN state IN `+inProgressStates+` AND $2 IN `+inProgressStates+` THEN $2 ELSE state END,
    current_index = $3, updated_instances = $4, instances = $5, given_up_indices = $6,
    run_id = CASE WHEN $7 = '' THEN run_id ELSE $7 END,
    failure = COALESCE(failure, $8), revert_failure = COALESCE(revert_failure, $9),
    phase = $10, step = $11
WHERE id = $1 RETURNING `+rolloutColumns, id, p.State, p.CurrentIndex, p.UpdatedInstances, p.Instances, pq.Int32Array(given), p.RunID,
		failure, revertFailure, p.Phase, nullInt32(p.Step))
	if err == sql.ErrNoRows {
		return nil, notFound("rollout", id)
	}
	return &r, err
}

// RecordRolloutState stores a rollout's walk state (and run id, unless empty) and leaves its
// counts: an index run in flight writes those itself.
func (s *Store) RecordRolloutState(ctx context.Context, id, state, runID string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var r rolloutRow
		err := tx.GetContext(ctx, &r, `UPDATE rollouts SET
    state = CASE WHEN state IN `+inProgressStates+` AND $2 IN `+inProgressStates+` THEN $2 ELSE state END,
    run_id = CASE WHEN $3 = '' THEN run_id ELSE $3 END
WHERE id = $1 RETURNING `+rolloutColumns, id, state, runID)
		if err == sql.ErrNoRows {
			return notFound("rollout", id)
		}
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, event(model.EventRolloutChanged, r.model()))
	})
}

// BeginCancel turns a rollout in progress into a walk back to its from definition: that
// definition becomes the LRP's active and healthy one again, the abandoned target its
// previous one until the walk back is done.
func (s *Store) BeginCancel(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := lockRolloutAfterLRP(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.State == model.RolloutCanceling {
			return nil
		}
		if !r.InProgress() {
			return model.Errorf(model.ErrNoUpdateInProgress, "rollout %s is %s", id, r.State)
		}
		events, err := s.changeDesired(ctx, tx, r.ProcessGUID, `UPDATE desired_lrps SET active_definition_id = $2, healthy_definition_id = $2,
    previous_definition_id = $3, modification_index = modification_index + 1, updated_at = now()
WHERE process_guid = $1`, r.ProcessGUID, r.FromDefinitionID, r.ToDefinitionID)
		if err != nil {
			return err
		}
		var row rolloutRow
		if err := tx.GetContext(ctx, &row, `UPDATE rollouts SET state = 'canceling' WHERE id = $1 RETURNING `+rolloutColumns, id); err != nil {
			return err
		}
		return appendEvents(ctx, tx, append(events, event(model.EventRolloutChanged, row.model()))...)
	})
}

// FinishRollout ends a rollout; a completed or canceled one clears the LRP's previous
// definition. Finishing a finished rollout changes nothing: finished says whether this call
// ended it, so that a retried call is not counted twice.
func (s *Store) FinishRollout(ctx context.Context, id, state, reason string) (finished bool, err error) {
	if state != model.RolloutCompleted && state != model.RolloutCanceled && state != model.RolloutFailed && state != model.RolloutReverted {
		return false, model.Errorf(model.ErrInvalidRequest, "a rollout cannot finish as %q", state)
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := lockRolloutAfterLRP(ctx, tx, id)
		if err != nil || !r.InProgress() {
			return err
		}
		done, events, err := s.finishLocked(ctx, tx, r, state, reason)
		if err != nil {
			return err
		}
		finished = true
		return appendEvents(ctx, tx, append(events, event(model.EventRolloutChanged, done))...)
	})
	return finished && err == nil, err
}

// finishLocked ends the locked rollout r in state: completed and canceled clear its LRP's
// previous definition, which the walk no longer needs. events are the LRP's change.
func (s *Store) finishLocked(ctx context.Context, tx *sqlx.Tx, r *model.Rollout, state, reason string) (done *model.Rollout, events []pendingEvent, err error) {
	if state != model.RolloutFailed {
		events, err = s.changeDesired(ctx, tx, r.ProcessGUID, `UPDATE desired_lrps SET previous_definition_id = NULL,
    modification_index = modification_index + 1, updated_at = now()
WHERE process_guid = $1 AND previous_definition_id IS NOT NULL`, r.ProcessGUID)
		if err != nil {
			return nil, nil, err
		}
	}
	done, err = finishRolloutRow(ctx, tx, r.ID, state, reason)
	return done, events, err
}

// changeDesired runs update, a statement that changes the LRP of guid (at most its one row),
// and returns the desired_lrp_changed event of the change, or none when it changed nothing or
// the LRP is gone. Every change of a desired LRP is an event, as in BBS: a client of the event
// streams (Cloud Controller's half of definition updates, docs/CLOUD_CONTROLLER.md) sees a
// rollout's cancel and its end — the definition back, previous_definition_id cleared — as it
// sees its start.
func (s *Store) changeDesired(ctx context.Context, tx *sqlx.Tx, guid, update string, args ...any) ([]pendingEvent, error) {
	before, err := s.desiredInTx(ctx, tx, guid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, update, args...)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err
	}
	after, err := s.desiredInTx(ctx, tx, guid)
	if err != nil {
		return nil, err
	}
	return []pendingEvent{changed(model.EventDesiredLRPChanged, model.NewDesiredLRPEvent(before), model.NewDesiredLRPEvent(after))}, nil
}

// CompleteRollout ends a rollout whose walk went through every index, in one transaction:
// where the walk ended (p), its final state (completed, or canceled after a walk back), and
// then each definition of prune the LRP no longer runs retired from its definitions (seed
// 000) — after the finish, which releases the ones the rollout itself held. A definition
// whose instances are still stopping stays, for convergence to prune later. finished is
// false when the rollout had already ended (a retry): nothing is written then.
func (s *Store) CompleteRollout(ctx context.Context, id string, p model.RolloutProgress, state string, prune []string) (finished bool, err error) {
	if state != model.RolloutCompleted && state != model.RolloutCanceled && state != model.RolloutReverted {
		return false, model.Errorf(model.ErrInvalidRequest, "a rollout cannot complete as %q", state)
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := lockRolloutAfterLRP(ctx, tx, id)
		if err != nil || !r.InProgress() {
			return err
		}
		if _, err := recordProgressRow(ctx, tx, id, p); err != nil {
			return err
		}
		done, events, err := s.finishLocked(ctx, tx, r, state, "")
		if err != nil {
			return err
		}
		for _, def := range prune {
			if _, err := retireUnused(ctx, tx, r.ProcessGUID, def); err != nil {
				return err
			}
		}
		if len(prune) > 0 {
			if _, err := trimRetired(ctx, tx, r.ProcessGUID, defaultRetiredHistory); err != nil {
				return err
			}
		}
		finished = true
		return appendEvents(ctx, tx, append(events, event(model.EventRolloutChanged, done))...)
	})
	return finished && err == nil, err
}

// RolloutInProgress is a rollout still under way, with its LRP's domain.
type RolloutInProgress struct {
	Rollout model.Rollout
	Domain  string
}

// RolloutsInProgress lists every rollout still under way, so that convergence can make sure
// each has its workflow (the API may have died between its commit and the start).
func (s *Store) RolloutsInProgress(ctx context.Context) ([]RolloutInProgress, error) {
	var rows []struct {
		rolloutRow
		Domain string `db:"domain"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT r.id, r.process_guid, r.kind, r.from_definition_id, r.to_definition_id, r.state,
    r.current_index, r.updated_instances, r.instances, r.given_up_indices,
    (extract(epoch FROM r.started_at) * 1e9)::bigint AS started_at,
    (extract(epoch FROM r.finished_at) * 1e9)::bigint AS finished_at,
    r.workflow_id, r.run_id, r.reason, l.domain
FROM rollouts r JOIN desired_lrps l ON l.process_guid = r.process_guid
WHERE r.state IN `+inProgressStates+` ORDER BY r.started_at`)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]RolloutInProgress, len(rows))
	for i := range rows {
		out[i] = RolloutInProgress{Rollout: rows[i].model(), Domain: rows[i].Domain}
	}
	return out, nil
}
