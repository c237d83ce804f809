package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// A cell reports its instances in batches: the claims of the work one placement round gave
// it, the starts of the containers that came up meanwhile. Each instance follows exactly
// the rule of its single write (claimed, started) and gets its own answer; what differs is
// the cost: a batch locks, writes, records its events and marks healthy definitions with one
// statement each, in one transaction, where single writes take a transaction per instance.

// InstanceReport is one instance in a batch: the slot, the cell's instance key and, for a
// start, where the instance listens.
type InstanceReport struct {
	Key         model.ActualLRPKey
	InstanceKey model.ActualLRPInstanceKey
	NetInfo     model.ActualLRPNetInfo
	// NotReady, in a start, says the instance's readiness checks do not pass (yet): it runs
	// but must not be routed to (BBS's routable = false).
	NotReady bool
}

// BatchResult is one instance's outcome in a batch: the instance as stored, or why its
// write was refused.
type BatchResult struct {
	ActualLRP *model.ActualLRP
	Err       error
}

// ClaimActualLRPs claims each instance as ClaimActualLRP would, in one transaction.
func (s *Store) ClaimActualLRPs(ctx context.Context, reports []InstanceReport) ([]BatchResult, error) {
	return s.reportInstances(ctx, reports, false)
}

// StartActualLRPs records each instance RUNNING as StartActualLRP would, in one
// transaction (an instance the store does not know is then created on its own).
func (s *Store) StartActualLRPs(ctx context.Context, reports []InstanceReport) ([]BatchResult, error) {
	return s.reportInstances(ctx, reports, true)
}

// batchAttempts is how often a batch is tried when PostgreSQL breaks a deadlock by aborting
// it: two batches meet on the LRPs they mark healthy, or a batch meets single writes.
const batchAttempts = 3

// reportInstances writes reports with the next transaction of their kind's group (see
// reportGroup), together with other cells' reports that arrive meanwhile.
func (s *Store) reportInstances(ctx context.Context, reports []InstanceReport, start bool) ([]BatchResult, error) {
	if len(reports) == 0 {
		return []BatchResult{}, nil
	}
	g := &s.claims
	if start {
		g = &s.starts
	}
	return g.do(ctx, reports, func(ctx context.Context, reports []InstanceReport) ([]BatchResult, error) {
		return s.reportTogether(ctx, reports, start)
	})
}

// reportTogether writes reports in one transaction (and those that need a single write
// after it) and answers each.
func (s *Store) reportTogether(ctx context.Context, reports []InstanceReport, start bool) ([]BatchResult, error) {
	results := make([]BatchResult, len(reports))
	alone := make([]int, 0) // reports answered by the single write after the batch
	var err error
	for range batchAttempts {
		if err = s.inTx(ctx, func(tx *sqlx.Tx) error {
			return s.reportInTx(ctx, tx, reports, start, results, &alone)
		}); !model.IsType(err, model.ErrResourceConflict) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	for _, i := range alone {
		r := reports[i]
		if start {
			results[i].ActualLRP, results[i].Err = s.StartReported(ctx, r, nil)
		} else {
			results[i].ActualLRP, results[i].Err = s.ClaimActualLRP(ctx, r.Key, r.InstanceKey, nil)
		}
		if results[i].Err != nil {
			results[i].ActualLRP = nil
		}
	}
	return results, nil
}

// reportInTx is one attempt at a batch: it fills results, and alone with the reports left
// for the single writes.
func (s *Store) reportInTx(ctx context.Context, tx *sqlx.Tx, reports []InstanceReport, start bool, results []BatchResult, alone *[]int) error {
	clear(results)
	*alone = (*alone)[:0]
	var keys []slotKey
	for _, r := range reports {
		if r.Key.DefinitionID != "" {
			keys = append(keys, slotKey{r.Key.ProcessGUID, r.Key.DefinitionID, r.Key.Index})
		}
	}
	rows, err := lockInstances(ctx, tx, keys)
	if err != nil {
		return err
	}
	var befores, afters []model.ActualLRP
	var of []int             // the report of each after
	at := map[slotKey]bool{} // slots with a write
	for i, r := range reports {
		k := slotKey{r.Key.ProcessGUID, r.Key.DefinitionID, r.Key.Index}
		row, ok := rows[k]
		if r.Key.DefinitionID == "" || !ok {
			*alone = append(*alone, i)
			continue
		}
		if _, dup := at[k]; dup {
			*alone = append(*alone, i) // the same slot twice: the second sees the first's write
			continue
		}
		before, err := row.model()
		if err != nil {
			return err
		}
		var after model.ActualLRP
		var write bool
		if start {
			after, write, err = s.started(before, r)
		} else {
			after, write, err = s.claimed(before, r.InstanceKey)
		}
		if err != nil {
			results[i].Err = err
			continue
		}
		if !write {
			results[i].ActualLRP = &after
			continue
		}
		at[k] = true
		befores, afters, of = append(befores, before), append(afters, after), append(of, i)
	}
	if !start {
		if befores, afters, of, err = admitClaims(ctx, tx, befores, afters, of, results); err != nil {
			return err
		}
	}
	stored, err := writeInstances(ctx, tx, afters)
	if err != nil {
		return err
	}
	events := make([]pendingEvent, len(stored))
	for i := range stored {
		events[i] = changed(model.EventActualLRPChanged, befores[i], stored[i])
	}
	if err := appendEvents(ctx, tx, events...); err != nil {
		return err
	}
	if start {
		if err := markHealthyAll(ctx, tx, stored); err != nil {
			return err
		}
	}
	for j, i := range of {
		results[i].ActualLRP = &stored[j]
	}
	return nil
}

// lockInstances finds and locks the ordinary instances of keys, in key order (so that two
// batches never wait on each other in a cycle).
func lockInstances(ctx context.Context, tx *sqlx.Tx, keys []slotKey) (map[slotKey]*actualRow, error) {
	out := make(map[slotKey]*actualRow, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	guids, defs, indices := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		guids[i], defs[i], indices[i] = k.guid, k.def, int64(k.index)
	}
	rows, err := queryActualRows(ctx, tx, `SELECT `+actualColumns+` FROM actual_lrps
WHERE (process_guid, definition_id, instance_index) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::int[]))
  AND presence = 'ORDINARY'
ORDER BY process_guid, definition_id, instance_index
FOR UPDATE`, pq.StringArray(guids), pq.StringArray(defs), pq.Int64Array(indices))
	if err != nil {
		return nil, err
	}
	for i := range rows {
		r := &rows[i]
		out[slotKey{r.ProcessGUID, r.DefinitionID, r.Index}] = r
	}
	return out, nil
}

// writeInstances is writeInstance for many ordinary instances with one statement; it returns
// them as stored, in the order given.
func writeInstances(ctx context.Context, tx *sqlx.Tx, lrps []model.ActualLRP) ([]model.ActualLRP, error) {
	if len(lrps) == 0 {
		return nil, nil
	}
	n := len(lrps)
	guids, defs, states, igs, cells := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	addrs, ports, iaddrs, perrs, reasons := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	prefs := make([]string, n)
	notReady := make(pq.BoolArray, n)
	indices, since, crashes := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range lrps {
		a := &lrps[i]
		p, err := portsJSON(a.Ports)
		if err != nil {
			return nil, err
		}
		guids[i], defs[i], indices[i], states[i] = a.ProcessGUID, a.DefinitionID, int64(a.Index), string(a.State)
		igs[i], cells[i], addrs[i], ports[i], iaddrs[i] = a.InstanceGUID, a.CellID, a.Address, string(p), a.InstanceAddress
		perrs[i], since[i], crashes[i], reasons[i] = a.PlacementError, a.Since, int64(a.CrashCount), a.CrashReason
		prefs[i], notReady[i] = a.PreferredAddress, a.NotReady
	}
	rows, err := queryActualRows(ctx, tx, `UPDATE actual_lrps SET
    state = u.u_state, instance_guid = u.u_ig, cell_id = u.u_cell, address = u.u_addr, ports = u.u_ports::json,
    instance_address = u.u_iaddr, placement_error = u.u_perr, since = u.u_since, crash_count = u.u_crashes,
    crash_reason = u.u_reason, preferred_address = u.u_pref, availability_zone = `+cellZone("u.u_cell")+`,
    not_ready = (u.u_state = 'RUNNING' AND u.u_not_ready),
    `+startReport("u.u_state", "u.u_ig")+`, modification_index = modification_index + 1
FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::text[], $10::text[], $11::bigint[], $12::int[], $13::text[], $14::text[], $15::bool[])
    AS u(u_guid, u_def, u_index, u_state, u_ig, u_cell, u_addr, u_ports, u_iaddr, u_perr, u_since, u_crashes, u_reason, u_pref, u_not_ready)
WHERE process_guid = u.u_guid AND definition_id = u.u_def AND instance_index = u.u_index AND presence = 'ORDINARY'
RETURNING `+actualColumns,
		pq.StringArray(guids), pq.StringArray(defs), pq.Int64Array(indices), pq.StringArray(states), pq.StringArray(igs),
		pq.StringArray(cells), pq.StringArray(addrs), pq.StringArray(ports), pq.StringArray(iaddrs), pq.StringArray(perrs),
		pq.Int64Array(since), pq.Int64Array(crashes), pq.StringArray(reasons), pq.StringArray(prefs), notReady)
	if err != nil {
		return nil, err
	}
	byKey := make(map[slotKey]*actualRow, len(rows))
	for i := range rows {
		byKey[slotKey{rows[i].ProcessGUID, rows[i].DefinitionID, rows[i].Index}] = &rows[i]
	}
	out := make([]model.ActualLRP, n)
	for i := range lrps {
		r, ok := byKey[slotKey{lrps[i].ProcessGUID, lrps[i].DefinitionID, lrps[i].Index}]
		if !ok {
			return nil, model.Errorf(model.ErrUnknown, "instance %s/%d vanished under its lock", lrps[i].ProcessGUID, lrps[i].Index)
		}
		a, err := r.model()
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// markHealthyAll is markHealthy for every serving instance's definition, in one statement.
func markHealthyAll(ctx context.Context, tx *sqlx.Tx, lrps []model.ActualLRP) error {
	var guids, defs []string
	for i := range lrps {
		if lrps[i].State == model.StateRunning && !lrps[i].NotReady {
			guids, defs = append(guids, lrps[i].ProcessGUID), append(defs, lrps[i].DefinitionID)
		}
	}
	if len(guids) == 0 {
		return nil
	}
	// Only LRPs whose healthy definition changes are locked, in process guid order, so that
	// two batches never wait on each other in a cycle.
	_, err := tx.ExecContext(ctx, `WITH due AS (
    SELECT l.process_guid, u.def FROM desired_lrps l
    JOIN (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS u(guid, def) ON l.process_guid = u.guid
    WHERE l.active_definition_id = u.def AND l.healthy_definition_id IS DISTINCT FROM u.def
    ORDER BY l.process_guid
    FOR UPDATE OF l)
UPDATE desired_lrps l SET healthy_definition_id = due.def, updated_at = now()
FROM due WHERE l.process_guid = due.process_guid`,
		pq.StringArray(guids), pq.StringArray(defs))
	return err
}

// admitClaims drops from a batch the claims the rollout groups' per-cell budgets refuse
// (admitGroupClaims), answering each refused report with its refusal.
func admitClaims(ctx context.Context, tx *sqlx.Tx, befores, afters []model.ActualLRP, of []int, results []BatchResult) ([]model.ActualLRP, []model.ActualLRP, []int, error) {
	refused, err := admitGroupClaims(ctx, tx, afters)
	if err != nil || refused == nil {
		return befores, afters, of, err
	}
	n := 0
	for j := range afters {
		if refused[j] != nil {
			results[of[j]].Err = refused[j]
			continue
		}
		befores[n], afters[n], of[n] = befores[j], afters[j], of[j]
		n++
	}
	return befores[:n], afters[:n], of[:n], nil
}
