package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// Retiring and trimming LRP definitions, shared by the two places that do it: a convergence
// pass, over every LRP (pruneDefinitions), and a rollout's end, for its LRP alone
// (PruneDefinition). Both must agree on what "unused" means and on how much history is kept,
// so the statements live once, beside each other, rather than in convergence's file.

// defaultRetiredHistory is how many retired definitions each LRP keeps for rollback.
const defaultRetiredHistory = 10

// retireUnused retires the live definitions nothing uses — of one LRP and one definition
// when guid and def are given, else of all.
func retireUnused(ctx context.Context, tx *sqlx.Tx, guid, def string) (int, error) {
	// The definitions that are neither active, healthy nor previous come first, and only
	// those are probed for instances and rollouts (OFFSET 0 keeps each probe a per-row
	// index lookup): as one join, PostgreSQL anti-joined every live definition with the whole
	// fleet's instances before filtering (0.14-0.16 s a pass at 250,000 instances whose
	// definition ids are unique per LRP, against ~0.02 s this way).
	prefix, lrp := oneLRPOr(guid, "d.process_guid", "$1")
	r, err := tx.ExecContext(ctx, prefix+`WITH unused AS MATERIALIZED (
    SELECT d.process_guid, d.definition_id FROM lrp_definitions d
    JOIN desired_lrps l ON l.process_guid = d.process_guid
    WHERE d.live AND `+lrp+` AND ($2 = '' OR d.definition_id = $2)
      AND d.definition_id <> l.active_definition_id
      AND d.definition_id IS DISTINCT FROM l.healthy_definition_id
      AND d.definition_id IS DISTINCT FROM l.previous_definition_id)
UPDATE lrp_definitions d SET live = false, retired_at = now()
FROM unused u
WHERE d.process_guid = u.process_guid AND d.definition_id = u.definition_id AND d.live
  AND NOT EXISTS (SELECT 1 FROM actual_lrps a
      WHERE a.process_guid = d.process_guid AND a.definition_id = d.definition_id OFFSET 0)
  AND NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.process_guid = d.process_guid
      AND r.state IN `+inProgressStates+`
      AND d.definition_id IN (r.from_definition_id, r.to_definition_id) OFFSET 0)`, guid, def)
	if err != nil {
		return 0, err
	}
	return affected(r)
}

// trimRetired deletes retired definitions beyond the newest keep of each LRP (of one LRP when
// guid is given). A retired definition an instance still names (only a stray cell report
// makes one) is kept, so the instance can still be read and stopped.
func trimRetired(ctx context.Context, tx *sqlx.Tx, guid string, keep int) (int, error) {
	prefix, lrp := oneLRPOr(guid, "process_guid", "$2")
	r, err := tx.ExecContext(ctx, prefix+`DELETE FROM lrp_definitions d USING (
    SELECT process_guid, definition_id, row_number() OVER (PARTITION BY process_guid
        ORDER BY retired_at DESC, created_at DESC, definition_id DESC) AS n
    FROM lrp_definitions WHERE NOT live AND `+lrp+`) old
WHERE d.process_guid = old.process_guid AND d.definition_id = old.definition_id AND old.n > $1
  AND NOT EXISTS (SELECT 1 FROM actual_lrps a
      WHERE a.process_guid = d.process_guid AND a.definition_id = d.definition_id)`, keep, guid)
	if err != nil {
		return 0, err
	}
	return affected(r)
}

// oneLRPOr is how a statement that prunes the definitions of one LRP (guid given: a
// rollout's end) or of all (a convergence pass) is run, and its condition on the LRP (column
// equal to the parameter param holding guid): for one LRP prepared — its plan is the same
// for every LRP, and planning it cost more than running it (pg_stat_statements over 1,000
// rollouts: 1.3 ms against 0.03) —; for all, planned per call, the condition true for an
// empty guid.
func oneLRPOr(guid, column, param string) (prefix, cond string) {
	if guid != "" {
		return "", column + " = " + param
	}
	return planPerCall, "(" + param + " = '' OR " + column + " = " + param + ")"
}

// affected is the number of rows a statement changed, as the counts of ConvergeResult want it.
func affected(r interface{ RowsAffected() (int64, error) }) (int, error) {
	n, err := r.RowsAffected()
	return int(n), err
}

// PruneDefinition retires def from the LRP's definitions map when nothing uses it: no
// instance runs it and the LRP does not name it (seed 000), then trims the LRP's retired
// history to the newest ten.
func (s *Store) PruneDefinition(ctx context.Context, guid, def string) (pruned bool, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := lockDesired(ctx, tx, guid); err != nil {
			return err
		}
		n, err := retireUnused(ctx, tx, guid, def)
		if err != nil {
			return err
		}
		pruned = n > 0
		_, err = trimRetired(ctx, tx, guid, defaultRetiredHistory)
		return err
	})
	if model.IsType(err, model.ErrResourceNotFound) {
		return false, nil
	}
	return pruned, err
}
