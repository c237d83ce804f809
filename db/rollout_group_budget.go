package db

import (
	"context"
	"fmt"
	"sort"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// A rollout group's max_concurrent_per_cell bounds the new instances of its members that
// start at once on one cell: those CLAIMED, not yet RUNNING, of a member rollout's target
// definition. Placement avoids a cell whose budget is spent, but placement works on a view
// that may be a moment old, and a new leader knows nothing of what the last one handed out;
// so the budget is held where an instance becomes "starting": in the claim's transaction.
// Claims of one group on one cell take an advisory lock on that pair, count what the cell
// has starting, and refuse what would pass the budget (the cell drops the work, and the
// instance, still UNCLAIMED, is placed again). The budget thus holds at every instant, by
// construction, across any number of API replicas and leaders.

// groupBudget is a claim's group and that group's per-cell budget.
type groupBudget struct {
	Claim   int64  `db:"i"`
	GroupID string `db:"group_id"`
	Max     int    `db:"max"`
}

// admitGroupClaims says which of claims (instances about to become CLAIMED on their cells,
// in the caller's transaction) the per-cell budgets of rollout groups admit: refused[i] is
// the refusal of claims[i], nil when admitted. A claim of no group's member costs one
// indexed query.
func admitGroupClaims(ctx context.Context, tx *sqlx.Tx, claims []model.ActualLRP) (refused []error, err error) {
	if len(claims) == 0 {
		return nil, nil
	}
	guids, defs := make([]string, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		guids[i], defs[i] = c.ProcessGUID, c.DefinitionID
	}
	var budgets []groupBudget
	if err := tx.SelectContext(ctx, &budgets, `
SELECT k.i - 1 AS i, r.group_id, (g.spec->>'max_concurrent_per_cell')::int AS max
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(g, d, i)
JOIN rollouts r ON r.process_guid = k.g AND r.to_definition_id = k.d AND r.state IN `+inProgressStates+`
JOIN rollout_groups g ON g.group_id = r.group_id
WHERE (g.spec->>'max_concurrent_per_cell')::int > 0`, pq.StringArray(guids), pq.StringArray(defs)); err != nil {
		return nil, err
	}
	if len(budgets) == 0 {
		return nil, nil
	}
	type pair struct{ group, cell string }
	var pairs []pair
	seen := map[pair]bool{}
	for _, b := range budgets {
		p := pair{b.GroupID, claims[b.Claim].CellID}
		if !seen[p] {
			seen[p] = true
			pairs = append(pairs, p)
		}
	}
	// Locked in one order, so that two claim transactions never wait on each other in a cycle.
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].group != pairs[j].group {
			return pairs[i].group < pairs[j].group
		}
		return pairs[i].cell < pairs[j].cell
	})
	groups, cells := make([]string, len(pairs)), make([]string, len(pairs))
	for i, p := range pairs {
		groups[i], cells[i] = p.group, p.cell
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, budgetLockName(p.group, p.cell)); err != nil {
			return nil, err
		}
	}
	var counts []struct {
		GroupID string `db:"group_id"`
		CellID  string `db:"cell_id"`
		N       int    `db:"n"`
	}
	if err := tx.SelectContext(ctx, &counts, `
SELECT r.group_id, a.cell_id, count(*) AS n
FROM unnest($1::text[], $2::text[]) AS k(g, c)
JOIN rollouts r ON r.group_id = k.g AND r.state IN `+inProgressStates+`
JOIN actual_lrps a ON a.process_guid = r.process_guid AND a.definition_id = r.to_definition_id
    AND a.cell_id = k.c AND a.state = 'CLAIMED' AND a.presence = 'ORDINARY'
GROUP BY r.group_id, a.cell_id`, pq.StringArray(groups), pq.StringArray(cells)); err != nil {
		return nil, err
	}
	starting := make(map[pair]int, len(counts))
	for _, c := range counts {
		starting[pair{c.GroupID, c.CellID}] = c.N
	}
	refused = make([]error, len(claims))
	for _, b := range budgets {
		c := claims[b.Claim]
		p := pair{b.GroupID, c.CellID}
		if starting[p] >= b.Max {
			refused[b.Claim] = model.Errorf(model.ErrCannotBeClaimed,
				"cell %q has %d new instances of rollout group %q starting, its max_concurrent_per_cell", c.CellID, starting[p], b.GroupID)
			continue
		}
		starting[p]++
	}
	return refused, nil
}

// budgetLockName names the advisory lock of a group's budget on one cell.
func budgetLockName(group, cell string) string {
	return fmt.Sprintf("rollout-group-cell:%s/%s", group, cell)
}

// groupCellsInUse is, for a group, the most new instances of its members starting on any one
// cell now (what get reports as per_cell_max_in_use, and what a sampler checks).
func groupCellsInUse(ctx context.Context, q sqlx.QueryerContext, groupID string) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `
SELECT COALESCE(max(n), 0) FROM (
    SELECT count(*) AS n FROM rollouts r
    JOIN actual_lrps a ON a.process_guid = r.process_guid AND a.definition_id = r.to_definition_id
        AND a.state = 'CLAIMED' AND a.presence = 'ORDINARY'
    WHERE r.group_id = $1 AND r.state IN `+inProgressStates+`
    GROUP BY a.cell_id) per_cell`, groupID)
	return n, err
}
