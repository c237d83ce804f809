package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// candidates are the LRPs a pass looks at again, each list in process guid order: extra,
// those (desired or not) with an ordinary or suspect instance at an index no LRP wants, for
// removeExtras; missing, those with an index below their count that no ordinary instance (not
// retiring) holds; duplicated, those, with no rollout in progress, with an index that more
// than one holds. The last two are handled under the LRPs' locks.
type candidates struct {
	extra, missing, duplicated []string
}

// findCandidates finds them without reading the instances twice: a pass that finds none must
// stay cheap at 250,000 instances, and the exact test of an LRP's indices (distinct indices
// counted per LRP, which sorts) over the whole fleet cost more than the rest of the pass.
//
// A first statement reads every instance once, in primary key order (an index-only scan of
// the key once vacuumed), and keeps the LRPs that may need work: per LRP the number of
// instances, the highest index and whether they are of more than one definition, against
// the LRP's count. Where every instance of an LRP is ordinary and not retiring, all of one
// definition, as many as its count and all below it, each index is held exactly once (the
// key makes an index of one definition unique): the LRP is left out, as is one with no
// instance and a count of 0. An LRP with a retiring, suspect or evacuating instance (found
// through their partial indexes) is kept whatever its counts. What remains (LRPs mid-rollout,
// scaled, missing or with extra instances) gets the exact test, by a second statement over
// those LRPs alone. Aggregates without FILTER, and definition ids compared bytewise, halve
// the first statement's time.
func (s *Store) findCandidates(ctx context.Context) (candidates, error) {
	var out candidates
	var coarse []struct {
		ProcessGUID string `db:"process_guid"`
		Extra       bool   `db:"extra"`
		Check       bool   `db:"check_indices"`
	}
	err := s.db.SelectContext(ctx, &coarse, `SELECT coalesce(l.process_guid, a.process_guid) AS process_guid,
    coalesce(a.unusual OR a.top >= coalesce(l.instances, 0), false) AS extra,
    l.process_guid IS NOT NULL AND (a.process_guid IS NULL OR a.unusual OR a.n <> l.instances
        OR a.top >= l.instances OR a.mixed) AS check_indices
FROM (SELECT process_guid, count(*) AS n, max(instance_index) AS top,
        min(definition_id COLLATE "C") <> max(definition_id COLLATE "C") AS mixed,
        process_guid IN (SELECT u.process_guid FROM actual_lrps u WHERE u.presence <> 'ORDINARY' OR u.retiring) AS unusual
    FROM actual_lrps GROUP BY process_guid) a
FULL JOIN desired_lrps l ON l.process_guid = a.process_guid
WHERE CASE WHEN l.process_guid IS NULL THEN true
    WHEN a.process_guid IS NULL THEN l.instances > 0
    ELSE a.unusual OR a.n <> l.instances OR a.top >= l.instances OR a.mixed END
ORDER BY 1`)
	if err != nil {
		return out, err
	}
	var check []string
	for _, c := range coarse {
		if c.Extra {
			out.extra = append(out.extra, c.ProcessGUID)
		}
		if c.Check {
			check = append(check, c.ProcessGUID)
		}
	}
	if len(check) == 0 {
		return out, nil
	}
	var rows []struct {
		ProcessGUID string `db:"process_guid"`
		Missing     bool   `db:"missing"`
		Duplicated  bool   `db:"duplicated"`
		Rolling     bool   `db:"rolling"`
	}
	// The select list is computed only for the groups HAVING keeps: the rollout probe runs
	// for those alone.
	err = s.db.SelectContext(ctx, &rows, `SELECT l.process_guid,
    count(DISTINCT a.instance_index) < l.instances AS missing,
    count(a.instance_index) > count(DISTINCT a.instance_index) AS duplicated,
    EXISTS (SELECT 1 FROM rollouts r WHERE r.process_guid = l.process_guid AND r.state IN `+inProgressStates+`) AS rolling
FROM desired_lrps l LEFT JOIN actual_lrps a ON a.process_guid = l.process_guid
    AND a.presence = 'ORDINARY' AND NOT a.retiring AND a.instance_index < l.instances
WHERE l.process_guid = ANY($1)
GROUP BY l.process_guid
HAVING count(DISTINCT a.instance_index) < l.instances OR count(a.instance_index) > count(DISTINCT a.instance_index)
ORDER BY l.process_guid`, pq.StringArray(check))
	for _, r := range rows {
		if r.Missing {
			out.missing = append(out.missing, r.ProcessGUID)
		}
		if r.Duplicated && !r.Rolling {
			out.duplicated = append(out.duplicated, r.ProcessGUID)
		}
	}
	return out, err
}

// duplicateRank orders the ordinary instances at one index (alias a, of LRP l) best first:
// the one that serves (RUNNING and ready), or is closest to serving, then the healthy
// definition's (the one a restart would use, seed 000), then the active one's.
const duplicateRank = `CASE WHEN a.state = 'RUNNING' AND NOT a.not_ready THEN 0 WHEN a.state = 'RUNNING' THEN 1
    WHEN a.state = 'CLAIMED' THEN 2 WHEN a.state = 'UNCLAIMED' THEN 3 ELSE 4 END,
    a.definition_id IS DISTINCT FROM coalesce(l.healthy_definition_id, l.active_definition_id),
    a.definition_id <> l.active_definition_id, a.definition_id`

// removeDuplicates leaves one ordinary instance at each index of an LRP that no rollout is
// replacing. Instances of one definition cannot share an index (the primary key), but two
// definitions' can: during a rollout the index being replaced holds the old definition's
// instance and the new one's until the new one runs (seed 000) — the walk retires the old
// one then, so convergence leaves the indices of an LRP with a rollout in progress to it.
// Anywhere else a second instance is a duplicate: a writer that filled an index without the
// LRP's lock, a rollout that failed with a step in flight, a cell reporting an instance the
// store had replaced. The best one (duplicateRank) stays; of the others, UNCLAIMED and
// CRASHED records are deleted and CLAIMED and RUNNING ones retired for their cells to stop.
// An index the LRP wants keeps an instance, so unlike removeExtras this needs no fresh
// domain: nothing the desired state may still want is lost.
//
// guids are the LRPs findCandidates found with a duplicated index.
func (s *Store) removeDuplicates(ctx context.Context, res *ConvergeResult, guids []string) error {
	if len(guids) == 0 {
		return nil
	}
	var removed, toStop []model.ActualLRP
	err := s.inTxRetried(ctx, func(tx *sqlx.Tx) error {
		removed, toStop = nil, nil
		if err := lockLRPs(ctx, tx, guids); err != nil {
			return err
		}
		// Under the lock no rollout can start and no writer of the LRP can fill an index;
		// cells may still change the instances' states, which the statements below re-check.
		var dups []struct {
			ProcessGUID  string `db:"process_guid"`
			DefinitionID string `db:"definition_id"`
			Index        int32  `db:"instance_index"`
		}
		if err := tx.SelectContext(ctx, &dups, `SELECT process_guid, definition_id, instance_index FROM (
    SELECT a.process_guid, a.definition_id, a.instance_index,
        row_number() OVER (PARTITION BY a.process_guid, a.instance_index ORDER BY `+duplicateRank+`) AS rank
    FROM actual_lrps a JOIN desired_lrps l ON l.process_guid = a.process_guid AND a.instance_index < l.instances
    WHERE l.process_guid = ANY($1) AND a.presence = 'ORDINARY' AND NOT a.retiring
      AND NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.process_guid = l.process_guid AND r.state IN `+inProgressStates+`)) ranked
WHERE rank > 1
ORDER BY process_guid, definition_id, instance_index`, pq.StringArray(guids)); err != nil {
			return err
		}
		if len(dups) == 0 {
			return nil
		}
		keys := make([]slotKey, len(dups))
		for i, d := range dups {
			keys[i] = slotKey{d.ProcessGUID, d.DefinitionID, d.Index}
		}
		args := slotArrays(keys)
		inDups := `(process_guid, definition_id, instance_index) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::int[]))
  AND presence = 'ORDINARY'`
		var err error
		removed, err = selectActual(ctx, tx, `DELETE FROM actual_lrps WHERE `+inDups+` AND state IN ('UNCLAIMED', 'CRASHED')
RETURNING `+actualColumns, args...)
		if err != nil {
			return err
		}
		events := eventBatch(instanceEvents(model.EventActualLRPRemoved, removed))
		// What was not deleted has a cell (or got one since the ranking): it must stop it.
		if toStop, err = markRetiring(ctx, tx, &events, inDups, args...); err != nil {
			return err
		}
		return events.flush(ctx, tx)
	})
	if err != nil {
		return err
	}
	res.DuplicatesRemoved, res.DuplicatesToStop = len(removed), len(toStop)
	res.ToStop = append(res.ToStop, toStop...)
	return nil
}
