package db

import (
	"context"
	"encoding/json"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// The writes of one instance under its row lock, shared by the cells' lifecycle writes
// (actual_lrp_lifecycle.go) and evacuation (evacuation.go): lock the row, check the
// modification tag, store or delete the instance with its event (portsJSON also serves the
// cells' batched reports). Each of those files keeps only its own rules of BBS's state
// machine.

// instanceChange is one lifecycle write's own rule: given the locked row of an instance and
// the instance it holds, it decides, writes the change with its events in tx, and returns
// the instance to report.
type instanceChange func(tx *sqlx.Tx, row *actualRow, before model.ActualLRP) (model.ActualLRP, error)

// changeInstance runs change in a transaction of its own on the instance of key at presence,
// locked, once tag (when given) matches it.
func (s *Store) changeInstance(ctx context.Context, key model.ActualLRPKey, presence string, tag *model.ModificationTag, change instanceChange) (*model.ActualLRP, error) {
	return s.changeInstanceOr(ctx, key, presence, tag, nil, change)
}

// changeInstanceOr is changeInstance that runs missing instead, in the same transaction, when
// there is no such instance.
func (s *Store) changeInstanceOr(ctx context.Context, key model.ActualLRPKey, presence string, tag *model.ModificationTag,
	missing func(tx *sqlx.Tx) (model.ActualLRP, error), change instanceChange) (*model.ActualLRP, error) {
	var out model.ActualLRP
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		row, err := lockInstance(ctx, tx, key, presence)
		if missing != nil && model.IsType(err, model.ErrResourceNotFound) {
			out, err = missing(tx)
			return err
		}
		if err != nil {
			return err
		}
		if err := checkTag(row, tag); err != nil {
			return err
		}
		before, err := row.model()
		if err != nil {
			return err
		}
		out, err = change(tx, row, before)
		return err
	})
	return &out, err
}

// writeChange stores after, the new state of before, and records the change as an
// ActualLRPChanged event; it returns the stored instance.
func writeChange(ctx context.Context, tx *sqlx.Tx, before model.ActualLRP, after *model.ActualLRP) (model.ActualLRP, error) {
	out, err := writeInstance(ctx, tx, after)
	if err != nil {
		return out, err
	}
	return out, appendEvents(ctx, tx, changed(model.EventActualLRPChanged, before, out))
}

// refused is the error for a transition BBS's state machine does not allow the cell of ik
// (verb says which: "claimed", "started", "crashed").
func refused(t model.ErrorType, verb string, a model.ActualLRP, ik model.ActualLRPInstanceKey) error {
	return model.Errorf(t, "instance %s/%d is %s on %q and cannot be %s by %q",
		a.ProcessGUID, a.Index, a.State, a.CellID, verb, ik.CellID)
}

// lockInstance finds and locks the instance of key at presence. A key without a definition id
// (an older client) means the active definition's instance, else the only one at the index.
func lockInstance(ctx context.Context, tx *sqlx.Tx, key model.ActualLRPKey, presence string) (*actualRow, error) {
	var rows []actualRow
	err := tx.SelectContext(ctx, &rows, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = $3 AND ($4 = '' OR definition_id = $4)
ORDER BY definition_id = coalesce((SELECT active_definition_id FROM desired_lrps WHERE process_guid = $1), '') DESC, definition_id
FOR UPDATE`, key.ProcessGUID, key.Index, presence, key.DefinitionID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, model.Errorf(model.ErrResourceNotFound, "no %s instance of %q at index %d", presence, key.ProcessGUID, key.Index)
	}
	return &rows[0], nil
}

// checkTag refuses a write whose modification tag, when given, is not the row's: the
// compare-and-swap BBS's clients rely on.
func checkTag(row *actualRow, tag *model.ModificationTag) error {
	if tag != nil && (tag.Epoch != row.ModificationEpoch || tag.Index != row.ModificationIndex) {
		return model.Errorf(model.ErrResourceConflict, "instance %s/%d changed since modification tag %s/%d (now %s/%d)",
			row.ProcessGUID, row.Index, tag.Epoch, tag.Index, row.ModificationEpoch, row.ModificationIndex)
	}
	return nil
}

// writeInstance stores every mutable field of a, bumping its modification index, and returns
// the stored instance. The availability zone is not a's but the cell's (cellZone).
func writeInstance(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) (model.ActualLRP, error) {
	ports, err := portsJSON(a.Ports)
	if err != nil {
		return model.ActualLRP{}, err
	}
	var row actualRow
	err = tx.GetContext(ctx, &row, `UPDATE actual_lrps SET
    state = $5, instance_guid = $6, cell_id = $7, address = $8, ports = $9, instance_address = $10,
    placement_error = $11, since = $12, crash_count = $13, crash_reason = $14, preferred_address = $15,
    not_ready = ($5 = 'RUNNING' AND $16),
    availability_zone = `+cellZone("$7")+`, `+startReport("$5", "$6")+`,
    modification_index = modification_index + 1
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = $4
RETURNING `+actualColumns,
		a.ProcessGUID, a.DefinitionID, a.Index, a.Presence, a.State, a.InstanceGUID, a.CellID, a.Address,
		ports, a.InstanceAddress, a.PlacementError, a.Since, a.CrashCount, a.CrashReason, a.PreferredAddress, a.NotReady)
	if err != nil {
		return model.ActualLRP{}, err
	}
	return row.model()
}

// portsJSON encodes ports for the ports column, where none is the empty array.
func portsJSON(ports []model.PortMapping) (jsonText, error) {
	if ports == nil {
		return jsonText("[]"), nil
	}
	return json.Marshal(ports)
}

// stillDesired reports whether the LRP still wants an instance of a's definition at a's index.
func stillDesired(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) (bool, error) {
	var ok bool
	err := tx.GetContext(ctx, &ok, `SELECT EXISTS (
    SELECT 1 FROM desired_lrps l JOIN lrp_definitions d ON d.process_guid = l.process_guid
    WHERE l.process_guid = $1 AND d.definition_id = $2 AND d.live AND $3 < l.instances)`,
		a.ProcessGUID, a.DefinitionID, a.Index)
	return ok, err
}

// deleteInstance deletes a's record (its key and presence).
func deleteInstance(ctx context.Context, tx *sqlx.Tx, a *model.ActualLRP) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM actual_lrps
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = $4`,
		a.ProcessGUID, a.DefinitionID, a.Index, a.Presence)
	return err
}
