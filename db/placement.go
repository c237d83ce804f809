package db

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// PendingInstance is an UNCLAIMED instance waiting for placement, with what it needs.
type PendingInstance struct {
	Key             model.ActualLRPKey
	ModificationTag model.ModificationTag
	PlacementError  string
	Since           int64
	MemoryMB        int32
	DiskMB          int32
	PlacementTags   []string
}

// PendingPlacements lists up to limit ordinary UNCLAIMED instances, oldest first.
func (s *Store) PendingPlacements(ctx context.Context, limit int) ([]PendingInstance, error) {
	var rows []struct {
		actualRow
		MemoryMB      int32          `db:"memory_mb"`
		DiskMB        int32          `db:"disk_mb"`
		PlacementTags pq.StringArray `db:"placement_tags"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT a.process_guid, a.definition_id, a.instance_index, a.presence,
    a.domain, a.state, a.instance_guid, a.cell_id, a.address, a.ports, a.instance_address, a.placement_error,
    a.since, a.crash_count, a.crash_reason, a.modification_epoch, a.modification_index,
    d.memory_mb, d.disk_mb, d.placement_tags
FROM actual_lrps a
JOIN lrp_definitions d ON d.process_guid = a.process_guid AND d.definition_id = a.definition_id
WHERE a.state = 'UNCLAIMED' AND a.presence = 'ORDINARY'
ORDER BY a.since
LIMIT $1`, limit)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]PendingInstance, len(rows))
	for i, r := range rows {
		out[i] = PendingInstance{
			Key:             model.ActualLRPKey{ProcessGUID: r.ProcessGUID, DefinitionID: r.DefinitionID, Index: r.Index, Domain: r.Domain},
			ModificationTag: model.ModificationTag{Epoch: r.ModificationEpoch, Index: r.ModificationIndex},
			PlacementError:  r.PlacementError, Since: r.Since,
			MemoryMB: r.MemoryMB, DiskMB: r.DiskMB, PlacementTags: r.PlacementTags,
		}
	}
	return out, nil
}

// CellLoad is a fresh cell and what it holds: one by one the instances of the LRPs asked
// about (placement spreads those), summed the rest and the tasks it runs.
type CellLoad struct {
	Cell      model.CellPresence
	Instances []HeldInstance
	Held      CellUsage
}

// CellUsage sums the instances a cell holds besides those listed.
type CellUsage struct {
	MemoryMB, DiskMB     int64
	Containers, Starting int
}

// HeldInstance is an instance a cell holds, as placement weighs it.
type HeldInstance struct {
	ProcessGUID string
	MemoryMB    int32
	DiskMB      int32
	Starting    bool
}

// CellLoads lists the fresh cells with what they hold (every presence: an evacuating
// instance still uses its cell). The sums are computed by PostgreSQL, so a round reads one
// row per cell plus the instances of guids, however many instances the fleet runs. It is
// the full recompute; placement reads the sums only now and then (CellUsages) and keeps
// them up to date from what it hands out.
func (s *Store) CellLoads(ctx context.Context, guids []string) ([]CellLoad, error) {
	cells, err := s.Cells(ctx)
	if err != nil {
		return nil, err
	}
	// The sums and the instances listed one by one come from one snapshot, so that an
	// instance changing between the two reads is neither counted twice nor lost.
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, mapError(err)
	}
	defer tx.Rollback()
	usage, err := cellUsages(ctx, tx)
	if err != nil {
		return nil, err
	}
	held, err := heldInstances(ctx, tx, guids)
	if err != nil {
		return nil, err
	}
	out := make([]CellLoad, len(cells))
	for i, c := range cells {
		out[i] = CellLoad{Cell: c, Instances: held[c.CellID], Held: usage[c.CellID].Less(held[c.CellID])}
	}
	return out, nil
}

// Less is u without the instances listed one by one.
func (u CellUsage) Less(listed []HeldInstance) CellUsage {
	for _, h := range listed {
		u.MemoryMB -= int64(h.MemoryMB)
		u.DiskMB -= int64(h.DiskMB)
		u.Containers--
		if h.Starting {
			u.Starting--
		}
	}
	return u
}

// CellUsages sums what each cell holds, instances of every presence and running tasks, by
// cell id: one aggregate over the whole fleet.
func (s *Store) CellUsages(ctx context.Context) (map[string]CellUsage, error) {
	return cellUsages(ctx, s.db)
}

// HeldInstances lists by cell id the instances of guids that cells hold: what placement
// spreads an LRP's new instances against, read in proportion to what a round places.
func (s *Store) HeldInstances(ctx context.Context, guids []string) (map[string][]HeldInstance, error) {
	return heldInstances(ctx, s.db, guids)
}

func cellUsages(ctx context.Context, q sqlx.QueryerContext) (map[string]CellUsage, error) {
	var totals []struct {
		CellID string `db:"cell_id"`
		CellUsage
	}
	// Running tasks share their cell's memory, disk and containers with its instances.
	err := sqlx.SelectContext(ctx, q, &totals, `SELECT cell_id, sum(memorymb)::bigint AS memorymb, sum(diskmb)::bigint AS diskmb,
    sum(containers)::bigint AS containers, sum(starting)::bigint AS starting
FROM (
    SELECT a.cell_id, coalesce(sum(d.memory_mb), 0) AS memorymb, coalesce(sum(d.disk_mb), 0) AS diskmb,
        count(*) AS containers, count(*) FILTER (WHERE a.state = 'CLAIMED') AS starting
    FROM actual_lrps a
    LEFT JOIN lrp_definitions d ON d.process_guid = a.process_guid AND d.definition_id = a.definition_id
    WHERE a.cell_id <> ''
    GROUP BY a.cell_id
    UNION ALL
    SELECT cell_id, sum(memory_mb), sum(disk_mb), count(*), 0 FROM tasks WHERE cell_id <> '' GROUP BY cell_id
) u
GROUP BY cell_id`)
	if err != nil {
		return nil, mapError(err)
	}
	out := make(map[string]CellUsage, len(totals))
	for _, t := range totals {
		out[t.CellID] = t.CellUsage
	}
	return out, nil
}

func heldInstances(ctx context.Context, q sqlx.QueryerContext, guids []string) (map[string][]HeldInstance, error) {
	out := map[string][]HeldInstance{}
	if len(guids) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT a.cell_id, a.process_guid, coalesce(d.memory_mb, 0), coalesce(d.disk_mb, 0),
    a.state = 'CLAIMED'
FROM actual_lrps a
LEFT JOIN lrp_definitions d ON d.process_guid = a.process_guid AND d.definition_id = a.definition_id
WHERE a.process_guid = ANY($1) AND a.cell_id <> ''`, pq.StringArray(guids))
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var cellID string
		var h HeldInstance
		if err := rows.Scan(&cellID, &h.ProcessGUID, &h.MemoryMB, &h.DiskMB, &h.Starting); err != nil {
			return nil, mapError(err)
		}
		out[cellID] = append(out[cellID], h)
	}
	return out, mapError(rows.Err())
}

// DefinitionKey names one definition of one LRP.
type DefinitionKey struct {
	ProcessGUID, DefinitionID string
}

// Definitions reads the named definitions (live or retired); missing ones are left out.
func (s *Store) Definitions(ctx context.Context, keys []DefinitionKey) (map[DefinitionKey]model.LRPDefinition, error) {
	guids := make([]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		guids[i], ids[i] = k.ProcessGUID, k.DefinitionID
	}
	var rows []definitionRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+definitionColumns+`
FROM lrp_definitions d
JOIN unnest($1::text[], $2::text[]) AS k(g, id) ON d.process_guid = k.g AND d.definition_id = k.id`,
		pq.StringArray(guids), pq.StringArray(ids))
	if err != nil {
		return nil, mapError(err)
	}
	out := make(map[DefinitionKey]model.LRPDefinition, len(rows))
	for i := range rows {
		d, err := rows[i].model()
		if err != nil {
			return nil, err
		}
		out[DefinitionKey{rows[i].ProcessGUID, rows[i].DefinitionID}] = d
	}
	return out, nil
}

// Leadership is a held leader lock; Release gives it up.
type Leadership struct {
	conn *sql.Conn
	key  int64
}

// TryLeadership takes the cluster-wide lock called name, if free, on a connection of its
// own: whoever holds it leads (placement runs in one process at a time), and the lock goes
// with the connection if the process dies. held is false when another process leads.
func (s *Store) TryLeadership(ctx context.Context, name string) (l *Leadership, held bool, err error) {
	key := LeaderLockKey(name)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, false, mapError(err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&held); err != nil || !held {
		conn.Close()
		return nil, false, mapError(err)
	}
	return &Leadership{conn: conn, key: key}, true, nil
}

// LeaderLockKey is the PostgreSQL advisory lock key of the leader lock called name, so that
// an operator (or a chaos test) can find the session, and so the process, that leads:
// pg_locks shows it with its high half in classid and its low half in objid.
func LeaderLockKey(name string) int64 {
	h := fnv.New64a()
	fmt.Fprint(h, "bbs-leader:"+name)
	return int64(h.Sum64())
}

// Alive checks that the lock's connection still stands.
func (l *Leadership) Alive(ctx context.Context) bool { return l.conn.PingContext(ctx) == nil }

// Release gives the lock up.
func (l *Leadership) Release() {
	l.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, l.key)
	l.conn.Close()
}
