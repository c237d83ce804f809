package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

func TestCellsListsOnlyFreshCells(t *testing.T) {
	s := dbtest.NewStore(t)
	ins := `INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags, expires_at)
VALUES ($1, 'z1', 'http://127.0.0.1:1800', 1024, 2048, 10, $2, now() + $3 * interval '1 second')`
	exec(t, s, ins, "cell-b", "{gpu}", 30)
	exec(t, s, ins, "cell-a", "{}", 30)
	exec(t, s, ins, "cell-gone", "{}", -1)
	cells, err := s.Cells(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0].CellID != "cell-a" || cells[1].CellID != "cell-b" ||
		cells[1].PlacementTags[0] != "gpu" || cells[0].Capacity.MemoryMB != 1024 || cells[0].Capacity.Containers != 10 {
		t.Fatalf("cells = %+v", cells)
	}
}
