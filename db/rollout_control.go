package db

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// RecordRolloutControl checks an operator's pause or resume (model.ControlPause,
// model.ControlResume) against the LRP's rollout in progress and records it as the rollout's
// last control (model.Rollout.LastControl), in one transaction: the row is locked while
// allow (if any) decides on it, so that two controls at once are decided one after the
// other, each on what the other wrote. An error from allow is answered as is and writes
// nothing; NoRolloutInProgress when the LRP has none. A control the row already has last is
// a repeat: nothing is written. No event either way: last_control is not part of what the
// API reports, and the state a pause or resume changes is the workflow's to record.
func (s *Store) RecordRolloutControl(ctx context.Context, guid, kind string, allow func(*model.Rollout) error) (*model.Rollout, error) {
	if kind != model.ControlPause && kind != model.ControlResume {
		return nil, model.Errorf(model.ErrInvalidRequest, "%q is not a control the rollout records", kind)
	}
	var out model.Rollout
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var row rolloutRow
		err := tx.GetContext(ctx, &row, `SELECT `+rolloutColumns+` FROM rollouts
WHERE process_guid = $1 AND state IN `+inProgressStates+` FOR UPDATE`, guid)
		if err == sql.ErrNoRows {
			return model.Errorf(model.ErrNoRolloutInProgress, "LRP %q has no rollout in progress", guid)
		}
		if err != nil {
			return err
		}
		out = row.model()
		if allow != nil {
			if err := allow(&out); err != nil {
				return err
			}
		}
		if out.LastControl == kind {
			return nil
		}
		var updated rolloutRow
		if err := tx.GetContext(ctx, &updated, `UPDATE rollouts SET last_control = $2 WHERE id = $1 RETURNING `+rolloutColumns,
			out.ID, kind); err != nil {
			return err
		}
		out = updated.model()
		return nil
	})
	if err != nil {
		return nil, mapError(err)
	}
	return &out, nil
}
