package db

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// Statements over many instances at once, shared by the subjects that change instances in
// bulk: convergence, rollouts, scale-downs, retirements. They live here, not in the file of
// whichever subject first needed them, so that each subject's file holds only its own
// decisions; the predicates that encode a decision (which instances are extra, stale,
// restartable) stay with their subject.

// selectActual runs a statement returning actualColumns rows and converts them.
func selectActual(ctx context.Context, tx *sqlx.Tx, query string, args ...any) ([]model.ActualLRP, error) {
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	return actualModels(rows)
}

// actualChangeRow is an instance before and after one UPDATE.
type actualChangeRow struct {
	Before actualRow `db:"b"`
	After  actualRow `db:"a"`
}

// transition updates every instance (alias a) that matches where with set, bumping its
// modification index, and returns each one before and after: one statement, whatever the
// number of rows. The rows are locked in key order first, so that two passes, or a pass and
// a multi-row writer, do not deadlock, and a row changed concurrently is re-checked against
// where after the lock (PostgreSQL's READ COMMITTED re-evaluation): a compare-and-swap in bulk.
func transition(ctx context.Context, tx *sqlx.Tx, where, set string, args ...any) ([]model.Change[model.ActualLRP], error) {
	var rows []actualChangeRow
	err := tx.SelectContext(ctx, &rows, `WITH prev AS (
    SELECT a.* FROM actual_lrps a WHERE `+where+`
    ORDER BY a.process_guid, a.definition_id, a.instance_index, a.presence FOR UPDATE OF a)
UPDATE actual_lrps a SET `+set+`, modification_index = a.modification_index + 1
FROM prev
WHERE a.process_guid = prev.process_guid AND a.definition_id = prev.definition_id
  AND a.instance_index = prev.instance_index AND a.presence = prev.presence
RETURNING `+aliased("prev", "b")+`, `+aliased("a", "a"), args...)
	if err != nil {
		return nil, err
	}
	out := make([]model.Change[model.ActualLRP], len(rows))
	for i := range rows {
		if out[i].Before, err = rows[i].Before.model(); err != nil {
			return nil, err
		}
		if out[i].After, err = rows[i].After.model(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// aliased lists actualColumns of table as "prefix.column", for sqlx's nested structs.
func aliased(table, prefix string) string {
	cols := strings.Split(actualColumns, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		cols[i] = fmt.Sprintf(`%s.%s AS "%s.%s"`, table, c, prefix, c)
	}
	return strings.Join(cols, ", ")
}

// changeEvents are the actual_lrp_changed events of transition's changes.
func changeEvents(changes []model.Change[model.ActualLRP]) []pendingEvent {
	out := make([]pendingEvent, len(changes))
	for i, c := range changes {
		out[i] = changed(model.EventActualLRPChanged, c.Before, c.After)
	}
	return out
}

// markRetiring marks the instances matching where (with args) retiring, adding a change
// event for each newly marked one to events so that routers deregister it before its cell
// stops it, and returns every matching instance. One statement: the instances it marks, and
// those that were retiring already as the statement began. (An instance another transaction
// retires while this one waits for its lock is in neither: that transaction stops it.
// Callers that hold the LRP's lock never meet one.)
func markRetiring(ctx context.Context, tx *sqlx.Tx, events *eventBatch, where string, args ...any) ([]model.ActualLRP, error) {
	var rows []struct {
		actualRow
		Marked bool `db:"marked"`
	}
	if err := tx.SelectContext(ctx, &rows, `WITH marked AS (
    UPDATE actual_lrps SET retiring = true, modification_index = modification_index + 1
    WHERE `+where+` AND NOT retiring RETURNING `+actualColumns+`)
SELECT `+actualColumns+`, true AS marked FROM marked
UNION ALL
SELECT `+actualColumns+`, false FROM actual_lrps WHERE `+where+` AND retiring
ORDER BY instance_index, definition_id, presence`, args...); err != nil {
		return nil, err
	}
	all := make([]model.ActualLRP, len(rows))
	var marked []model.ActualLRP
	for i := range rows {
		a, err := rows[i].model()
		if err != nil {
			return nil, err
		}
		all[i] = a
		if rows[i].Marked {
			marked = append(marked, a)
		}
	}
	events.add(retirementChanged(marked)...)
	return all, nil
}

// slotKey names an instance slot without its presence: the LRP, the definition and the index.
// Cells' batched reports lock instances by it; convergence names the duplicates it removes by it.
type slotKey struct {
	guid, def string
	index     int32
}

// slotArrays are keys as the three arrays of an unnest($1::text[], $2::text[], $3::int[]).
func slotArrays(keys []slotKey) []any {
	guids, defs, indices := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		guids[i], defs[i], indices[i] = k.guid, k.def, int64(k.index)
	}
	return []any{pq.StringArray(guids), pq.StringArray(defs), pq.Int64Array(indices)}
}

// retirementChanged is the change event of each instance whose retirement was just given (or
// withdrawn): as it is now, and as it was, one modification before with the other flag, so
// that routers deregister (or register again) it.
func retirementChanged(lrps []model.ActualLRP) []pendingEvent {
	events := make([]pendingEvent, len(lrps))
	for i, after := range lrps {
		before := after
		before.Retiring = !after.Retiring
		before.ModificationTag.Index--
		events[i] = changed(model.EventActualLRPChanged, before, after)
	}
	return events
}
