package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// UnclaimActualLRP hands an instance a cell claimed or ran back for placement (seed 003: a
// cell that has no container for an instance the store says it runs).
func (s *Store) UnclaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error) {
	return s.changeInstance(ctx, key, model.PresenceOrdinary, nil, func(tx *sqlx.Tx, row *actualRow, before model.ActualLRP) (model.ActualLRP, error) {
		if before.ActualLRPInstanceKey != ik || (before.State != model.StateClaimed && before.State != model.StateRunning) {
			return model.ActualLRP{}, model.Errorf(model.ErrInvalidStateTransition, "instance %s/%d is %s on %q; only its own cell can unclaim it",
				before.ProcessGUID, before.Index, before.State, before.CellID)
		}
		if row.Retiring {
			// Being retired anyway: gone rather than placed again.
			if err := deleteInstance(ctx, tx, &before); err != nil {
				return before, err
			}
			return before, appendEvents(ctx, tx, event(model.EventActualLRPRemoved, before))
		}
		return writeChange(ctx, tx, before, unclaimed(before, s.nowNanos()))
	})
}

func unclaimed(a model.ActualLRP, now int64) *model.ActualLRP {
	a.State = model.StateUnclaimed
	a.ActualLRPInstanceKey, a.ActualLRPNetInfo = model.ActualLRPInstanceKey{}, model.ActualLRPNetInfo{}
	a.PlacementError, a.Since = "", now
	return &a
}

// EvacuateRunningActualLRP is a draining cell's report on one of its RUNNING instances (seed
// 003's evacuation). The first report keeps the instance as EVACUATING and puts the ordinary
// instance back to UNCLAIMED, so that a replacement is placed elsewhere while the old one
// still serves. Later reports answer whether the cell must keep running it: not once the
// replacement is RUNNING and ready (its readiness checks, if any, pass), nor when the
// instance crashed or is no longer desired; the
// EVACUATING record is then deleted, and the cell stops the container.
func (s *Store) EvacuateRunningActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo) (keep bool, err error) {
	gone := func(tx *sqlx.Tx) (model.ActualLRP, error) {
		return model.ActualLRP{}, s.dropEvacuating(ctx, tx, key, ik)
	}
	_, err = s.changeInstanceOr(ctx, key, model.PresenceOrdinary, nil, gone, func(tx *sqlx.Tx, _ *actualRow, ordinary model.ActualLRP) (model.ActualLRP, error) {
		wanted, err := stillDesired(ctx, tx, &ordinary)
		if err != nil {
			return model.ActualLRP{}, err
		}
		mine := ordinary.ActualLRPInstanceKey == ik
		switch {
		// Its replacement serves (RUNNING and ready: one still failing its readiness
		// checks does not take the traffic over), or there is nothing to keep.
		case !wanted, ordinary.State == model.StateCrashed, ordinary.State == model.StateRunning && !ordinary.NotReady && !mine:
			return model.ActualLRP{}, s.dropEvacuating(ctx, tx, ordinary.ActualLRPKey, ik)
		case mine && ordinary.State == model.StateClaimed:
			// Not yet serving: nothing to keep; it goes straight back for placement.
			return writeChange(ctx, tx, ordinary, unclaimed(ordinary, s.nowNanos()))
		}
		keep = true
		evac := ordinary
		evac.Presence, evac.State = model.PresenceEvacuating, model.StateRunning
		evac.ActualLRPInstanceKey, evac.ActualLRPNetInfo = ik, net
		created, err := upsertEvacuating(ctx, tx, &evac)
		if err != nil {
			return model.ActualLRP{}, err
		}
		var events []pendingEvent
		if created {
			events = append(events, event(model.EventActualLRPCreated, evac))
		}
		if mine {
			// Not writeChange: this change and the EVACUATING copy's creation go in one append.
			after, err := writeInstance(ctx, tx, unclaimed(ordinary, s.nowNanos()))
			if err != nil {
				return model.ActualLRP{}, err
			}
			events = append(events, changed(model.EventActualLRPChanged, ordinary, after))
		}
		return model.ActualLRP{}, appendEvents(ctx, tx, events...)
	})
	return keep, err
}

// upsertEvacuating stores the EVACUATING copy of an instance; created says it is new.
func upsertEvacuating(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) (created bool, err error) {
	var inserted bool
	err = tx.GetContext(ctx, &inserted, `
INSERT INTO actual_lrps (process_guid, definition_id, instance_index, presence, domain, state,
    instance_guid, cell_id, address, ports, instance_address, preferred_address, since, crash_count,
    modification_epoch, availability_zone, internal_routes, metric_tags, not_ready)
SELECT process_guid, definition_id, instance_index, 'EVACUATING', domain, 'RUNNING',
    $5, $6, address, ports, instance_address, preferred_address, since, crash_count, gen_random_uuid()::text,
    `+cellZone("$6")+`, internal_routes, metric_tags, not_ready AND state = 'RUNNING'
FROM actual_lrps WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = $4
ON CONFLICT (process_guid, definition_id, instance_index, presence) DO UPDATE SET modification_index = actual_lrps.modification_index
RETURNING xmax = 0`, a.ProcessGUID, a.DefinitionID, a.Index, model.PresenceOrdinary, a.InstanceGUID, a.CellID)
	return inserted, err
}

// dropEvacuating deletes the cell's EVACUATING record of key, if any.
func (s *Store) dropEvacuating(ctx context.Context, tx *sqlx.Tx, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) error {
	var rows []actualRow
	err := tx.SelectContext(ctx, &rows, `DELETE FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = 'EVACUATING' AND ($3 = '' OR definition_id = $3)
  AND instance_guid = $4 AND cell_id = $5
RETURNING `+actualColumns, key.ProcessGUID, key.Index, key.DefinitionID, ik.InstanceGUID, ik.CellID)
	if err != nil {
		return err
	}
	removed, err := actualModels(rows)
	if err != nil {
		return err
	}
	return appendEvents(ctx, tx, instanceEvents(model.EventActualLRPRemoved, removed)...)
}

// RemoveEvacuatingActualLRP deletes a cell's EVACUATING record of an instance.
func (s *Store) RemoveEvacuatingActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error { return s.dropEvacuating(ctx, tx, key, ik) })
}
