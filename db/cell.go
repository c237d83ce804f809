package db

import (
	"context"

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
}

// Cells lists the cells whose presence has not expired, ordered by id.
func (s *Store) Cells(ctx context.Context) ([]model.CellPresence, error) {
	var rows []cellRow
	err := s.db.SelectContext(ctx, &rows, `
SELECT cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags
FROM cells WHERE expires_at > now() ORDER BY cell_id`)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]model.CellPresence, 0, len(rows))
	for _, r := range rows {
		c := model.CellPresence{
			CellID: r.CellID, Zone: r.Zone, RepAddress: r.RepAddress,
			Capacity: model.CellCapacity{MemoryMB: r.MemoryMB, DiskMB: r.DiskMB, Containers: r.Containers},
		}
		if len(r.PlacementTags) > 0 {
			c.PlacementTags = r.PlacementTags
		}
		out = append(out, c)
	}
	return out, nil
}
