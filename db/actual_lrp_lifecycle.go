package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// The lifecycle writes cells make as they run instances (BBS's ActualLRP lifecycle): each
// locks the instance's row, checks BBS's state machine and, when given, the modification tag,
// and writes the change with its events in one transaction.

// ClaimActualLRP records that a cell is starting the instance (UNCLAIMED → CLAIMED).
func (s *Store) ClaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, tag *model.ModificationTag) (*model.ActualLRP, error) {
	return s.changeInstance(ctx, key, model.PresenceOrdinary, tag, func(tx *sqlx.Tx, _ *actualRow, before model.ActualLRP) (model.ActualLRP, error) {
		after, write, err := s.claimed(before, ik)
		if err != nil || !write {
			return after, err
		}
		refused, err := admitGroupClaims(ctx, tx, []model.ActualLRP{after})
		if err != nil {
			return after, err
		}
		if refused != nil && refused[0] != nil {
			return model.ActualLRP{}, refused[0]
		}
		return writeChange(ctx, tx, before, &after)
	})
}

// claimed is the claim rule: the instance after ik claims before, and whether that is a
// change to write.
func (s *Store) claimed(before model.ActualLRP, ik model.ActualLRPInstanceKey) (model.ActualLRP, bool, error) {
	if before.State == model.StateClaimed && before.ActualLRPInstanceKey == ik {
		return before, false, nil
	}
	if !before.AllowsTransitionTo(ik, model.StateClaimed) {
		return model.ActualLRP{}, false, refused(model.ErrCannotBeClaimed, "claimed", before, ik)
	}
	after := before
	after.State, after.ActualLRPInstanceKey = model.StateClaimed, ik
	after.ActualLRPNetInfo, after.PlacementError, after.Since = model.ActualLRPNetInfo{}, "", s.nowNanos()
	return after, true, nil
}

// StartActualLRP records that the instance runs on a cell (→ RUNNING), creating the record
// when the store has none (a cell reports what really runs, seed 003). The first RUNNING
// instance of the active definition makes it the LRP's healthy definition (seed 000).
func (s *Store) StartActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo, tag *model.ModificationTag) (*model.ActualLRP, error) {
	return s.StartReported(ctx, InstanceReport{Key: key, InstanceKey: ik, NetInfo: net}, tag)
}

// StartReported is StartActualLRP with all a cell reports of a running instance: its
// readiness too (BBS's routable), which changes a RUNNING instance's record when it changes.
func (s *Store) StartReported(ctx context.Context, r InstanceReport, tag *model.ModificationTag) (*model.ActualLRP, error) {
	create := func(tx *sqlx.Tx) (model.ActualLRP, error) {
		out, err := s.createRunning(ctx, tx, r)
		if err != nil {
			return out, err
		}
		return out, s.markHealthy(ctx, tx, &out)
	}
	return s.changeInstanceOr(ctx, r.Key, model.PresenceOrdinary, tag, create, func(tx *sqlx.Tx, _ *actualRow, before model.ActualLRP) (model.ActualLRP, error) {
		after, write, err := s.started(before, r)
		if err != nil || !write {
			return after, err
		}
		out, err := writeChange(ctx, tx, before, &after)
		if err != nil {
			return out, err
		}
		return out, s.markHealthy(ctx, tx, &out)
	})
}

// started is the start rule: the instance after its cell reports before running as r says
// (with r's instance key, net info and readiness), and whether that is a change to write.
func (s *Store) started(before model.ActualLRP, r InstanceReport) (model.ActualLRP, bool, error) {
	ik, net := r.InstanceKey, r.NetInfo
	if before.State == model.StateRunning && before.ActualLRPInstanceKey == ik && sameNetInfo(before.ActualLRPNetInfo, net) &&
		before.NotReady == r.NotReady {
		return before, false, nil
	}
	// A cell running an instance the store thinks CRASHED is believed (seed 003): BBS's
	// UNCLAIMED and then RUNNING, in one step, keeping the crash count.
	if before.State != model.StateCrashed && !before.AllowsTransitionTo(ik, model.StateRunning) {
		return model.ActualLRP{}, false, refused(model.ErrCannotBeStarted, "started", before, ik)
	}
	after := before
	after.State, after.ActualLRPInstanceKey, after.ActualLRPNetInfo = model.StateRunning, ik, net
	after.PlacementError, after.NotReady = "", r.NotReady
	if before.State != model.StateRunning {
		after.Since = s.nowNanos()
	}
	return after, true, nil
}

func sameNetInfo(a, b model.ActualLRPNetInfo) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func (s *Store) createRunning(ctx context.Context, tx *sqlx.Tx, r InstanceReport) (model.ActualLRP, error) {
	key, ik, net := r.Key, r.InstanceKey, r.NetInfo
	if key.DefinitionID == "" {
		err := tx.GetContext(ctx, &key.DefinitionID, `SELECT active_definition_id FROM desired_lrps WHERE process_guid = $1`, key.ProcessGUID)
		if err == sql.ErrNoRows {
			key.DefinitionID = key.ProcessGUID // promotion's default id (seed 000)
		} else if err != nil {
			return model.ActualLRP{}, err
		}
	}
	if key.Domain == "" {
		return model.ActualLRP{}, model.Errorf(model.ErrInvalidRequest, "actual_lrp_key.domain is required to record an instance the store does not know")
	}
	ports, err := portsJSON(net.Ports)
	if err != nil {
		return model.ActualLRP{}, err
	}
	var row actualRow
	err = tx.GetContext(ctx, &row, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain,
    state, instance_guid, cell_id, address, ports, instance_address, preferred_address, since, modification_epoch,
    availability_zone, internal_routes, metric_tags, not_ready)
VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6, $7, $8, $9, $10, $11, gen_random_uuid()::text,
    coalesce((SELECT c.zone FROM cells c WHERE c.cell_id = $6), ''),
    `+lrpInternalRoutes("$1")+`, `+lrpMetricTags("$1", "$3::int", "$5")+`, $12)
RETURNING `+actualColumns, key.ProcessGUID, key.DefinitionID, key.Index, key.Domain, ik.InstanceGUID, ik.CellID,
		net.Address, ports, net.InstanceAddress, net.PreferredAddress, s.nowNanos(), r.NotReady)
	if err != nil {
		return model.ActualLRP{}, err
	}
	a, err := row.model()
	if err != nil {
		return a, err
	}
	return a, appendEvents(ctx, tx, event(model.EventActualLRPCreated, a))
}

// markHealthy sets the LRP's healthy definition when a, an instance of its active definition,
// serves: RUNNING and ready. A definition whose readiness checks never pass has not proven it
// can run, and must not become the one that missing indices and crashes restart on.
func (s *Store) markHealthy(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) error {
	if a.State != model.StateRunning || a.NotReady {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE desired_lrps SET healthy_definition_id = $2, updated_at = now()
WHERE process_guid = $1 AND active_definition_id = $2 AND healthy_definition_id IS DISTINCT FROM $2`, a.ProcessGUID, a.DefinitionID)
	return err
}

// CrashActualLRP records that a claimed or running instance crashed and applies the rep's
// crash dance (seed 003): the first crashes go straight back to UNCLAIMED, for placement;
// later ones wait as CRASHED for the converger's backoff. An instance that is no longer
// desired (LRP removed, index beyond the count, definition gone) is removed instead.
func (s *Store) CrashActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, reason string, tag *model.ModificationTag) (*model.ActualLRP, error) {
	return s.changeInstance(ctx, key, model.PresenceOrdinary, tag, func(tx *sqlx.Tx, row *actualRow, before model.ActualLRP) (model.ActualLRP, error) {
		if !before.AllowsTransitionTo(ik, model.StateCrashed) {
			return model.ActualLRP{}, refused(model.ErrCannotBeCrashed, "crashed", before, ik)
		}
		now := s.now()
		// Only time spent RUNNING earns a reset of the crash count, not a long failed start.
		var runningSince time.Time
		if before.State == model.StateRunning {
			runningSince = timeFromNanos(before.Since)
		}
		count, restartNow := s.restartPolicy.CrashDance(before.CrashCount, runningSince, now)
		after := before
		after.ActualLRPInstanceKey, after.ActualLRPNetInfo = model.ActualLRPInstanceKey{}, model.ActualLRPNetInfo{}
		after.CrashCount, after.CrashReason, after.Since = count, reason, now.UnixNano()
		after.State = model.StateCrashed
		if restartNow {
			after.State = model.StateUnclaimed
		}
		wanted, err := stillDesired(ctx, tx, &before)
		if err != nil {
			return model.ActualLRP{}, err
		}
		if !wanted || row.Retiring {
			if err := deleteInstance(ctx, tx, &before); err != nil {
				return model.ActualLRP{}, err
			}
			return after, appendEvents(ctx, tx, crashed(before, after), event(model.EventActualLRPRemoved, before))
		}
		// Seed 000: a restart outside the rolling walk uses the healthy definition — unless
		// another instance holds this index (the walk is replacing it right now).
		if target, err := restartDefinition(ctx, tx, &before); err != nil {
			return model.ActualLRP{}, err
		} else if target != before.DefinitionID {
			if _, err := tx.ExecContext(ctx, `UPDATE actual_lrps SET definition_id = $5
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = $4`,
				before.ProcessGUID, before.DefinitionID, before.Index, before.Presence, target); err != nil {
				return model.ActualLRP{}, err
			}
			after.DefinitionID = target
		}
		out, err := writeInstance(ctx, tx, &after)
		if err != nil {
			return out, err
		}
		return out, appendEvents(ctx, tx, crashed(before, out), changed(model.EventActualLRPChanged, before, out))
	})
}

// FailActualLRP records why an UNCLAIMED instance could not be placed.
func (s *Store) FailActualLRP(ctx context.Context, key model.ActualLRPKey, placementError string, tag *model.ModificationTag) (*model.ActualLRP, error) {
	return s.changeInstance(ctx, key, model.PresenceOrdinary, tag, func(tx *sqlx.Tx, _ *actualRow, before model.ActualLRP) (model.ActualLRP, error) {
		if before.State != model.StateUnclaimed {
			return model.ActualLRP{}, model.Errorf(model.ErrCannotBeFailed, "instance %s/%d is %s; only an UNCLAIMED instance can fail placement",
				before.ProcessGUID, before.Index, before.State)
		}
		if before.PlacementError == placementError {
			return before, nil
		}
		after := before
		after.PlacementError = placementError
		return writeChange(ctx, tx, before, &after)
	})
}

// RemoveActualLRP deletes an instance record at presence: compare-and-delete on the instance
// key when one is given (a cell removes only what it runs) and on the tag when given.
func (s *Store) RemoveActualLRP(ctx context.Context, key model.ActualLRPKey, presence string, ik *model.ActualLRPInstanceKey, tag *model.ModificationTag) error {
	_, err := s.changeInstance(ctx, key, presence, tag, func(tx *sqlx.Tx, _ *actualRow, a model.ActualLRP) (model.ActualLRP, error) {
		if ik != nil && a.ActualLRPInstanceKey != *ik {
			return a, model.Errorf(model.ErrCannotBeRemoved, "instance %s/%d belongs to %q/%q, not %q/%q",
				a.ProcessGUID, a.Index, a.CellID, a.InstanceGUID, ik.CellID, ik.InstanceGUID)
		}
		if err := deleteInstance(ctx, tx, &a); err != nil {
			return a, err
		}
		return a, appendEvents(ctx, tx, event(model.EventActualLRPRemoved, a))
	})
	return err
}

// restartDefinition is the definition a crashed instance restarts with: the LRP's healthy
// definition when it has one (live) and no other ordinary instance shares the index, else
// the instance's own.
func restartDefinition(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) (string, error) {
	var healthy sql.NullString
	err := tx.GetContext(ctx, &healthy, `SELECT l.healthy_definition_id FROM desired_lrps l
JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = l.healthy_definition_id AND d.live
WHERE l.process_guid = $1
  AND NOT EXISTS (SELECT 1 FROM actual_lrps o WHERE o.process_guid = $1 AND o.instance_index = $2
      AND o.presence = 'ORDINARY' AND o.definition_id <> $3)`, a.ProcessGUID, a.Index, a.DefinitionID)
	if err == sql.ErrNoRows || (err == nil && !healthy.Valid) {
		return a.DefinitionID, nil
	}
	return healthy.String, err
}
