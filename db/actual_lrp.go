package db

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// actualRow is one row of actual_lrps.
type actualRow struct {
	ProcessGUID       string `db:"process_guid"`
	DefinitionID      string `db:"definition_id"`
	Index             int32  `db:"instance_index"`
	Presence          string `db:"presence"`
	Domain            string `db:"domain"`
	State             string `db:"state"`
	InstanceGUID      string `db:"instance_guid"`
	CellID            string `db:"cell_id"`
	Address           string `db:"address"`
	Ports             []byte `db:"ports"`
	InstanceAddress   string `db:"instance_address"`
	PlacementError    string `db:"placement_error"`
	Since             int64  `db:"since"`
	CrashCount        int32  `db:"crash_count"`
	CrashReason       string `db:"crash_reason"`
	ModificationEpoch string `db:"modification_epoch"`
	ModificationIndex uint32 `db:"modification_index"`
	// Retiring marks an instance handed to its cell to stop for good (see migration 0004).
	Retiring         bool   `db:"retiring"`
	AvailabilityZone string `db:"availability_zone"`
	PreferredAddress string `db:"preferred_address"`
	// InternalRoutes and MetricTags are the LRP's, taken at the instance's last start
	// (migration 0009): the raw route value and tags, resolved for the instance in model.
	InternalRoutes []byte `db:"internal_routes"`
	MetricTags     []byte `db:"metric_tags"`
	NotReady       bool   `db:"not_ready"`
}

const actualColumns = `process_guid, definition_id, instance_index, presence, domain, state,
    instance_guid, cell_id, address, ports, instance_address, placement_error, since,
    crash_count, crash_reason, modification_epoch, modification_index, retiring,
    availability_zone, preferred_address, internal_routes, metric_tags, not_ready`

// actualColumnCount is how many columns actualColumns names.
const actualColumnCount = 23

// cellZone is the SQL for the zone of an instance moving to the cell named by the SQL
// expression newCell, in an UPDATE of actual_lrps (whose cell_id and availability_zone are
// the row's before the update): the zone recorded when the instance came to its cell stays
// while it keeps that cell; a new cell's zone is read from its presence; no cell, no zone.
func cellZone(newCell string) string {
	return `CASE WHEN ` + newCell + ` = '' THEN ''
    WHEN ` + newCell + ` = cell_id AND availability_zone <> '' THEN availability_zone
    ELSE coalesce((SELECT c.zone FROM cells c WHERE c.cell_id = ` + newCell + `), '') END`
}

// startReport is the SQL setting internal_routes and metric_tags in an UPDATE of actual_lrps
// to newState (an SQL expression) by the cell of instance guid newGUID: taken from the LRP
// when the instance starts (a state other than RUNNING, or another instance, becoming
// RUNNING), as a Diego cell reports them then; kept otherwise.
func startReport(newState, newGUID string) string {
	starts := newState + ` = 'RUNNING' AND (state <> 'RUNNING' OR instance_guid <> ` + newGUID + `)`
	return `internal_routes = CASE WHEN ` + starts + ` THEN ` + lrpInternalRoutes("actual_lrps.process_guid") + ` ELSE internal_routes END,
    metric_tags = CASE WHEN ` + starts + ` THEN ` + lrpMetricTags("actual_lrps.process_guid", "actual_lrps.instance_index", newGUID) + ` ELSE metric_tags END`
}

// lrpInternalRoutes is the SQL for the "internal-router" route value of the LRP named by the
// SQL expression guid, NULL when it has none. Routes are opaque to the store: the value is
// kept as it is and read leniently (model.InternalRouteHostnames).
func lrpInternalRoutes(guid string) string {
	return `(SELECT l.routes->'` + model.InternalRouter + `' FROM desired_lrps l WHERE l.process_guid = ` + guid + `)`
}

// lrpMetricTags is the SQL for the metric tags an instance of the LRP named by guid, at index
// with instance guid instanceGUID (SQL expressions), reports: a JSON object of strings, each
// dynamic value (by name or by BBS's number, the two validation admits) filled in as BBS's
// ConvertMetricTags does, NULL when the LRP has none. Resolved when written, so that a crash,
// which clears the instance guid, leaves the tags as the cell reported them.
func lrpMetricTags(guid, index, instanceGUID string) string {
	return `(SELECT json_object_agg(t.key, CASE
        WHEN t.value->>'dynamic' IN ('INDEX', '1') THEN (` + index + `)::text
        WHEN t.value->>'dynamic' IN ('INSTANCE_GUID', '2') THEN ` + instanceGUID + `
        ELSE coalesce(t.value->>'static', '') END)
    FROM desired_lrps l, json_each(l.metric_tags) t WHERE l.process_guid = ` + guid + `)`
}

func (r *actualRow) model() (model.ActualLRP, error) {
	a := model.ActualLRP{
		ActualLRPKey: model.ActualLRPKey{
			ProcessGUID: r.ProcessGUID, DefinitionID: r.DefinitionID, Index: r.Index, Domain: r.Domain,
		},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: r.InstanceGUID, CellID: r.CellID},
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: r.Address, InstanceAddress: r.InstanceAddress,
			PreferredAddress: r.PreferredAddress},
		State:            r.State,
		PlacementError:   r.PlacementError,
		Since:            r.Since,
		CrashCount:       r.CrashCount,
		CrashReason:      r.CrashReason,
		Presence:         r.Presence,
		ModificationTag:  model.ModificationTag{Epoch: r.ModificationEpoch, Index: r.ModificationIndex},
		AvailabilityZone: r.AvailabilityZone,
		Retiring:         r.Retiring,
		InternalRoutes:   model.InternalRouteHostnames(r.InternalRoutes),
		NotReady:         r.NotReady,
	}
	ports, err := decodePorts(r.Ports)
	if err != nil {
		return a, fmt.Errorf("instance %s/%s/%d: %w", r.ProcessGUID, r.DefinitionID, r.Index, err)
	}
	a.Ports = ports
	if len(r.MetricTags) > 0 {
		// Into a variable of its own: a pointer into a would move a to the heap on every
		// call, an allocation per instance listed.
		var tags map[string]string
		if err := json.Unmarshal(r.MetricTags, &tags); err != nil {
			return a, fmt.Errorf("instance %s/%s/%d: metric tags: %w", r.ProcessGUID, r.DefinitionID, r.Index, err)
		}
		a.MetricTags = tags
	}
	return a, nil
}

func actualModels(rows []actualRow) ([]model.ActualLRP, error) {
	out := make([]model.ActualLRP, 0, len(rows))
	for i := range rows {
		a, err := rows[i].model()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// createMissingInstances creates an UNCLAIMED instance of definition def for every index
// below n that insertMissingInstances finds free, and returns them.
func (s *Store) createMissingInstances(ctx context.Context, tx *sqlx.Tx, guid, domain, def string, n int32) ([]model.ActualLRP, error) {
	if n <= 0 {
		return nil, nil
	}
	query, args, err := tx.BindNamed(insertMissingInstances("CAST(:instances AS integer)", "CAST(gen_random_uuid() AS text)")+`
RETURNING `+actualColumns, map[string]any{
		"process_guid": guid, "definition_id": def, "domain": domain, "instances": n, "since": s.nowNanos()})
	if err != nil {
		return nil, err
	}
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	return actualModels(rows)
}

// insertMissingInstances is the INSERT (a sqlx named query) of an UNCLAIMED instance of
// definition :definition_id of LRP :process_guid, in :domain and since :since, at every index
// below n that has no ordinary instance of any definition still serving (a retiring one is
// on its way out: a removed and desired-again LRP, an index scaled down and up, need not
// wait for it). Where the retiring instance is of that definition itself the slot is still
// taken; convergence fills it once the instance is gone. n and epoch, the modification epoch
// of the instance at index i, are SQL expressions. Casts are written CAST(x AS t): sqlx
// reads "::" as an escaped colon.
func insertMissingInstances(n, epoch string) string {
	return `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
SELECT :process_guid, :definition_id, i, :domain, 'UNCLAIMED', :since, ` + epoch + `
FROM generate_series(0, ` + n + ` - 1) AS i
WHERE NOT EXISTS (
    SELECT 1 FROM actual_lrps a
    WHERE a.process_guid = :process_guid AND a.instance_index = i AND a.presence = 'ORDINARY' AND NOT a.retiring)
ON CONFLICT DO NOTHING`
}

// unclaimedInstance is the instance insertMissingInstances writes at index i of d, as a read
// of its row returns it.
func unclaimedInstance(d *model.DesiredLRP, i int32, since int64, epoch string) model.ActualLRP {
	return model.ActualLRP{
		ActualLRPKey:    model.ActualLRPKey{ProcessGUID: d.ProcessGUID, DefinitionID: d.DefinitionID, Index: i, Domain: d.Domain},
		State:           model.StateUnclaimed,
		Since:           since,
		Presence:        model.PresenceOrdinary,
		ModificationTag: model.ModificationTag{Epoch: epoch},
	}
}

// retireIndicesFrom deletes the UNCLAIMED and CRASHED instances at index `from` and above,
// returning them, and returns the CLAIMED and RUNNING ones there, which their cells must stop.
func (s *Store) retireIndicesFrom(ctx context.Context, tx *sqlx.Tx, guid string, from int32) (removed, toStop []model.ActualLRP, err error) {
	var rows []actualRow
	if err := tx.SelectContext(ctx, &rows, `
DELETE FROM actual_lrps
WHERE process_guid = $1 AND instance_index >= $2 AND state IN ('UNCLAIMED', 'CRASHED')
RETURNING `+actualColumns, guid, from); err != nil {
		return nil, nil, err
	}
	if removed, err = actualModels(rows); err != nil {
		return nil, nil, err
	}
	var events eventBatch
	if toStop, err = markRetiring(ctx, tx, &events, `process_guid = $1 AND instance_index >= $2`, guid, from); err != nil {
		return nil, nil, err
	}
	return removed, toStop, events.flush(ctx, tx)
}

// ActualLRPs lists the instances (of every presence) that match the filter, ordered by
// process guid, index, definition id and presence.
func (s *Store) ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error) {
	out := []model.ActualLRP{}
	err := s.EachActualLRP(ctx, f, func(a *model.ActualLRP) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

// actualListQuery is the query of the instances f selects, in the lists' order, with its
// arguments: only the filter's conditions, so that a list of one LRP (a cell reading the
// slot of a container at every change of one, an LRP's groups) is a statement PostgreSQL
// plans once per connection — with optional conditions (domain = $1 unless $1 is empty) a
// plan for the values at hand was always cheaper, so it planned each call anew, and planning
// was twice the execution (pg_stat_statements, 1,000 rollouts at once). The lists of the
// fleet, a domain or a cell are planned per call (planPerCall: a cell's instances want the
// cell's partial index, which only a plan for a non-empty cell id may use).
func actualListQuery(f model.ActualLRPFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(column string, v any) {
		args = append(args, v)
		conds = append(conds, column+" = $"+strconv.Itoa(len(args)))
	}
	if f.ProcessGUID != "" {
		add("process_guid", f.ProcessGUID)
	}
	if f.Index != nil {
		add("instance_index", int64(*f.Index))
	}
	if f.DefinitionID != "" {
		add("definition_id", f.DefinitionID)
	}
	if f.Domain != "" {
		add("domain", f.Domain)
	}
	if f.CellID != "" {
		add("cell_id", f.CellID)
	}
	q := `SELECT ` + actualColumns + ` FROM actual_lrps`
	if f.ProcessGUID == "" {
		q = planPerCall + q
	}
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, ` AND `)
	}
	return q + ` ORDER BY process_guid, instance_index, definition_id, presence`, args
}

// EachActualLRP calls fn with each instance ActualLRPs would list, in the same order, as
// the rows arrive, so that a list of the whole fleet never sits in memory; an error from fn
// ends the walk and is returned. fn must not keep the instance: it is reused.
//
// The rows are read and converted on a goroutine of their own, a batch at a time, while fn
// encodes the batch before: at 250,000 instances reading them (lib/pq) is about two thirds
// of the list's time in Go and encoding the rest, and the two no longer wait for each
// other. Two batches of listBatch instances are in flight at most.
func (s *Store) EachActualLRP(ctx context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	query, args := actualListQuery(f)
	free, full := make(chan *listBatch, 2), make(chan *listBatch, 2)
	free <- new(listBatch)
	free <- new(listBatch)
	var readErr error // written before full is closed
	go func() {
		defer close(full)
		readErr = mapError(s.readBatches(ctx, query, args, free, full))
	}()
	for b := range full {
		for i := range b.items {
			if err := fn(&b.items[i]); err != nil {
				cancel()
				for range full { // the reader stops at its next batch
				}
				return err
			}
		}
		free <- b
	}
	return readErr
}

// listBatch is a batch of instances EachActualLRP reads ahead.
type listBatch struct{ items []model.ActualLRP }

const listBatchSize = 256

// readBatches fills the batches from free with the instances query selects (actualColumns)
// and hands them to full, until the rows end or ctx is done.
func (s *Store) readBatches(ctx context.Context, query string, args []any, free <-chan *listBatch, full chan<- *listBatch) error {
	var b *listBatch
	err := s.eachDriverRow(ctx, query, args, func(v []driver.Value) error {
		if b == nil {
			select {
			case b = <-free:
				b.items = b.items[:0]
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r, err := driverActualRow(v)
		if err != nil {
			return err
		}
		a, err := r.model()
		if err != nil {
			return err
		}
		if b.items = append(b.items, a); len(b.items) == listBatchSize {
			full <- b
			b = nil
		}
		return nil
	})
	if err == nil && b != nil && len(b.items) > 0 {
		full <- b
	}
	return err
}

// driverActualRow is the row of actualColumns a driver row holds; its JSON is the driver's
// (valid until the next row).
func driverActualRow(v []driver.Value) (actualRow, error) {
	if len(v) != actualColumnCount {
		return actualRow{}, fmt.Errorf("%d columns, want %d", len(v), actualColumnCount)
	}
	d := driverValues{row: v}
	r := actualRow{
		ProcessGUID: d.text(0), DefinitionID: d.text(1), Index: int32(d.int(2)), Presence: d.text(3),
		Domain: d.text(4), State: d.text(5), InstanceGUID: d.text(6), CellID: d.text(7), Address: d.text(8),
		Ports: d.json(9), InstanceAddress: d.text(10), PlacementError: d.text(11), Since: d.int(12),
		CrashCount: int32(d.int(13)), CrashReason: d.text(14), ModificationEpoch: d.text(15),
		ModificationIndex: uint32(d.int(16)), Retiring: d.bool(17), AvailabilityZone: d.text(18),
		PreferredAddress: d.text(19), InternalRoutes: d.json(20), MetricTags: d.json(21), NotReady: d.bool(22),
	}
	return r, d.err
}

// scannedRow is an actualRow as queryActualRows scans it, in the types database/sql converts
// to without work: lib/pq gives integers as int64, which database/sql turned into an int32
// or uint32 by formatting and parsing them again (an allocation each); and the JSON columns
// are read into buffers reused from row to row, copied once into the row kept.
type scannedRow struct {
	actualRow
	index, crashCount, modificationIndex int64
	ports, internalRoutes, metricTags    sql.RawBytes
}

// fields are the row's fields in actualColumns' order, for rows.Scan.
func (r *scannedRow) fields() []any {
	return []any{&r.ProcessGUID, &r.DefinitionID, &r.index, &r.Presence, &r.Domain, &r.State,
		&r.InstanceGUID, &r.CellID, &r.Address, &r.ports, &r.InstanceAddress, &r.PlacementError, &r.Since,
		&r.crashCount, &r.CrashReason, &r.ModificationEpoch, &r.modificationIndex, &r.Retiring,
		&r.AvailabilityZone, &r.PreferredAddress, &r.internalRoutes, &r.metricTags, &r.NotReady}
}

// kept is the scanned row as an actualRow that outlives the next scan (its JSON copied).
func (r *scannedRow) kept() actualRow {
	a := r.actualRow
	a.Index, a.CrashCount, a.ModificationIndex = int32(r.index), int32(r.crashCount), uint32(r.modificationIndex)
	a.Ports, a.InternalRoutes, a.MetricTags = bytes.Clone(r.ports), bytes.Clone(r.internalRoutes), bytes.Clone(r.metricTags)
	return a
}

// queryActualRows runs query, which selects or returns actualColumns, and reads the rows
// without sqlx's reflection and database/sql's conversions of integers through strings (the
// grouped claims and starts read and write hundreds of instances a statement). It runs in
// transactions, where the lists' driver-level read (eachDriverRow) cannot.
func queryActualRows(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) ([]actualRow, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []actualRow
	var r scannedRow
	fields := r.fields()
	for rows.Next() {
		if err := rows.Scan(fields...); err != nil {
			return nil, err
		}
		out = append(out, r.kept())
	}
	return out, rows.Err()
}

// ActualLRPGroupByProcessGUIDAndIndex returns the group at an index of the LRP's active
// definition (seed 000). While a rollout has not reached the index yet, no instance of the
// active definition exists there; the group of the definition still serving it is returned
// instead, so that clients see what runs.
func (s *Store) ActualLRPGroupByProcessGUIDAndIndex(ctx context.Context, guid string, index int32) (*model.ActualLRPGroup, error) {
	lrps, err := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid, Index: &index})
	if err != nil {
		return nil, err
	}
	groups := model.GroupActualLRPs(lrps)
	if len(groups) == 0 {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance of %q at index %d", guid, index)
	}
	var active string
	err = s.db.GetContext(ctx, &active, `SELECT active_definition_id FROM desired_lrps WHERE process_guid = $1`, guid)
	if err != nil && err != sql.ErrNoRows {
		return nil, mapError(err)
	}
	for i := range groups {
		if groupDefinition(&groups[i]) == active {
			return &groups[i], nil
		}
	}
	return &groups[0], nil
}

func groupDefinition(g *model.ActualLRPGroup) string {
	if g.Instance != nil {
		return g.Instance.DefinitionID
	}
	return g.Evacuating.DefinitionID
}

// RetireActualLRP retires the ordinary instance at key's index: the one of key's definition
// when given, else the active definition's (seed 000), else the only one. An UNCLAIMED or
// CRASHED instance is deleted at once; a CLAIMED or RUNNING one is returned, for its cell
// to stop. Retiring does not change the desired state: convergence replaces the instance.
func (s *Store) RetireActualLRP(ctx context.Context, key model.ActualLRPKey) (toStop *model.ActualLRP, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []actualRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = 'ORDINARY'
  AND ($3 = '' OR definition_id = $3) AND ($4 = '' OR domain = $4)
ORDER BY definition_id FOR UPDATE`, key.ProcessGUID, key.Index, key.DefinitionID, key.Domain); err != nil {
			return err
		}
		if len(rows) == 0 {
			return model.Errorf(model.ErrResourceNotFound, "no instance of %q at index %d", key.ProcessGUID, key.Index)
		}
		chosen := &rows[0]
		if len(rows) > 1 {
			var active string
			err := tx.GetContext(ctx, &active, `SELECT active_definition_id FROM desired_lrps WHERE process_guid = $1`, key.ProcessGUID)
			if err != nil && err != sql.ErrNoRows {
				return err
			}
			chosen = nil
			for i := range rows {
				if rows[i].DefinitionID == active {
					chosen = &rows[i]
				}
			}
			if chosen == nil {
				return model.Errorf(model.ErrInvalidRequest,
					"%q has instances of several definitions at index %d: name the definition_id", key.ProcessGUID, key.Index)
			}
		}
		if chosen.State == model.StateClaimed || chosen.State == model.StateRunning {
			var events eventBatch
			marked, err := markRetiring(ctx, tx, &events, `process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY'`,
				chosen.ProcessGUID, chosen.DefinitionID, chosen.Index)
			if err != nil || len(marked) == 0 {
				return err
			}
			toStop = &marked[0]
			return events.flush(ctx, tx)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM actual_lrps
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY'`,
			chosen.ProcessGUID, chosen.DefinitionID, chosen.Index); err != nil {
			return err
		}
		a, err := chosen.model()
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, event(model.EventActualLRPRemoved, a))
	})
	return toStop, err
}
