package db

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// A retiring instance keeps running for its cell's drain, while routers deregister it. Until
// its cell stops it, its retirement may be withdrawn — by a scale-up over its index
// (unretireIndicesBelow) or by a walk back that returns to its definition
// (withdrawRetirementTx) — and it serves on at once, without a new start. The cell, its drain
// over, claims the stop (ClaimStop) in the statement that reads whether the retirement still
// holds: a claimed stop is never withdrawn, a withdrawn retirement is never stopped.

// ClaimStop is the cell's question once the drain of instance ik at key is over: stop says
// whether to stop it. A retiring instance the cell holds is claimed for the stop (its
// retirement can no longer be withdrawn); one whose retirement was withdrawn is kept; one the
// BBS no longer knows there (removed, or another instance in the slot) is stopped.
func (s *Store) ClaimStop(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (stop bool, err error) {
	// One UPDATE that matches the instance whether it retires or not: it waits for a
	// withdrawal under way (the row's lock) and reads the row as that left it. (A claim that
	// read a snapshot beside its update answered stop for an instance withdrawn meanwhile.)
	var retiring bool
	err = s.db.GetContext(ctx, &retiring, `UPDATE actual_lrps SET stop_claimed = stop_claimed OR retiring
WHERE process_guid = $1 AND instance_index = $2 AND definition_id = $3 AND presence = 'ORDINARY'
  AND instance_guid = $4 AND cell_id = $5
RETURNING retiring`, key.ProcessGUID, key.Index, key.DefinitionID, ik.InstanceGUID, ik.CellID)
	if err == sql.ErrNoRows {
		return true, nil
	}
	if err != nil {
		return false, mapError(err)
	}
	return retiring, nil
}

// withdrawRetirementTx withdraws the retirement of def's instance at index, if it is still
// CLAIMED or RUNNING and its cell has not claimed the stop: it serves on at once, and a walk
// back to def has no new instance to start there. It returns the withdrawn instance's events.
func withdrawRetirementTx(ctx context.Context, tx *sqlx.Tx, events *eventBatch, guid, def string, index int32) error {
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, `UPDATE actual_lrps SET retiring = false, modification_index = modification_index + 1
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY'
  AND retiring AND NOT stop_claimed AND state IN ('CLAIMED', 'RUNNING')
RETURNING `+actualColumns, guid, def, index); err != nil {
		return err
	}
	kept, err := actualModels(rows)
	if err != nil {
		return err
	}
	events.add(retirementChanged(kept)...)
	return nil
}
