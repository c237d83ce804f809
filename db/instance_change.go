package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

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
