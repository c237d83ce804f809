package db

import (
	"context"
	"time"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// cellRow is one row of cells.
type cellRow struct {
	CellID        string         `db:"cell_id"`
	Zone          string         `db:"zone"`
	RepAddress    string         `db:"rep_address"`
	MemoryMB      int32          `db:"memory_mb"`
	DiskMB        int32          `db:"disk_mb"`
	Containers    int32          `db:"containers"`
	PlacementTags pq.StringArray `db:"placement_tags"`
	Evacuating    bool           `db:"evacuating"`
}

// Cells lists the cells whose presence has not expired, ordered by id.
func (s *Store) Cells(ctx context.Context) ([]model.CellPresence, error) {
	var rows []cellRow
	err := s.db.SelectContext(ctx, &rows, `
SELECT cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags, evacuating
FROM cells WHERE expires_at > now() ORDER BY cell_id`)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]model.CellPresence, 0, len(rows))
	for _, r := range rows {
		c := model.CellPresence{
			CellID: r.CellID, Zone: r.Zone, RepAddress: r.RepAddress,
			Capacity:   model.CellCapacity{MemoryMB: r.MemoryMB, DiskMB: r.DiskMB, Containers: r.Containers},
			Evacuating: r.Evacuating,
		}
		if len(r.PlacementTags) > 0 {
			c.PlacementTags = r.PlacementTags
		}
		out = append(out, c)
	}
	return out, nil
}

// UpsertCell records a cell's presence, fresh for ttl; a cell heartbeats well within it.
func (s *Store) UpsertCell(ctx context.Context, c model.CellPresence, ttl time.Duration) error {
	tags := c.PlacementTags
	if tags == nil {
		tags = []string{}
	}
	_, err := s.db.ExecContext(ctx, `
INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags, evacuating, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))
ON CONFLICT (cell_id) DO UPDATE SET zone = EXCLUDED.zone, rep_address = EXCLUDED.rep_address,
    memory_mb = EXCLUDED.memory_mb, disk_mb = EXCLUDED.disk_mb, containers = EXCLUDED.containers,
    placement_tags = EXCLUDED.placement_tags, evacuating = EXCLUDED.evacuating, expires_at = EXCLUDED.expires_at`,
		c.CellID, c.Zone, c.RepAddress, c.Capacity.MemoryMB, c.Capacity.DiskMB, c.Capacity.Containers,
		pq.StringArray(tags), c.Evacuating, ttl.Seconds())
	return mapError(err)
}

// RemoveCell forgets a cell that shut down cleanly.
func (s *Store) RemoveCell(ctx context.Context, cellID string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM cells WHERE cell_id = $1`, cellID)
	if err != nil {
		return mapError(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("cell", cellID)
	}
	return nil
}

// CellAddresses maps each of cellIDs whose presence has not expired to its rep address. It
// serves the stopper, which needs the few cells a batch of stops names: one read by primary
// key rather than a list of the whole fleet on every stop.
func (s *Store) CellAddresses(ctx context.Context, cellIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(cellIDs))
	if len(cellIDs) == 0 {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, `
SELECT cell_id, rep_address FROM cells WHERE cell_id = ANY($1) AND expires_at > now()`, pq.StringArray(cellIDs))
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, addr string
		if err := rows.Scan(&id, &addr); err != nil {
			return nil, mapError(err)
		}
		out[id] = addr
	}
	return out, mapError(rows.Err())
}
