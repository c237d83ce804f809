package db

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// An LRP's row lock: every writer of an LRP — its updates, a rollout's start and steps,
// convergence's fills of missing indices and removal of duplicates — takes it before it
// decides what to create, so that they see each other's work. It lives here, not with the
// desired LRP's reads and writes, because rollouts and convergence take it as often. A
// writer that also locks a rollout takes the LRP first (lockRolloutAfterLRP).

// lockDesired reads an LRP's row and locks it until the transaction ends, so that changes to
// one LRP are serialised.
func lockDesired(ctx context.Context, tx *sqlx.Tx, guid string) (*desiredRow, error) {
	var row desiredRow
	err := tx.GetContext(ctx, &row, `SELECT `+desiredColumns+` FROM desired_lrps l WHERE l.process_guid = $1 FOR UPDATE`, guid)
	if err == sql.ErrNoRows {
		return nil, notFound("desired LRP", guid)
	}
	return &row, err
}

// lockLRPs locks the rows of the LRPs named (those that still exist) until the transaction
// ends: the lock every writer of an LRP takes (lockDesired) before it decides what to
// create, so that convergence and those writers see each other's work. Rows are locked in
// process guid order, as markHealthyAll does, so that two multi-LRP writers never wait on
// each other in a cycle.
func lockLRPs(ctx context.Context, tx *sqlx.Tx, guids []string) error {
	_, err := tx.ExecContext(ctx, `SELECT 1 FROM desired_lrps
WHERE process_guid = ANY($1) ORDER BY process_guid FOR UPDATE`, pq.StringArray(guids))
	return err
}
