package db

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// lockRolloutAfterLRP locks a rollout's LRP row and then the rollout row, the order in which
// a rollout's start takes them (the LRP, then its rollouts): a change to a rollout that also
// writes its LRP, taking the rollout first, deadlocked with an update of the LRP made at the
// same moment — PostgreSQL aborted one, and the client was told "concurrent change, retry"
// (found by the soak). An LRP already removed is no obstacle: its rollout is locked alone.
func lockRolloutAfterLRP(ctx context.Context, tx *sqlx.Tx, id string) (*model.Rollout, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return nil, err
	}
	var guid string
	err := tx.GetContext(ctx, &guid, `SELECT process_guid FROM rollouts WHERE id = $1`, id)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout", id)
	}
	if err != nil {
		return nil, err
	}
	if _, err := lockDesired(ctx, tx, guid); err != nil && !model.IsType(err, model.ErrResourceNotFound) {
		return nil, err
	}
	return lockRollout(ctx, tx, id)
}

// lockRollout reads a rollout's row and locks it until the transaction ends. A writer that
// also changes the rollout's LRP takes lockRolloutAfterLRP instead.
func lockRollout(ctx context.Context, tx *sqlx.Tx, id string) (*model.Rollout, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return nil, err
	}
	var r rolloutRow
	err := tx.GetContext(ctx, &r, `SELECT `+rolloutColumns+` FROM rollouts WHERE id = $1 FOR UPDATE`, id)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout", id)
	}
	if err != nil {
		return nil, err
	}
	ro := r.model()
	return &ro, nil
}
