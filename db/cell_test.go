package db_test

import (
	"maps"
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

func TestCellAddressesOfTheNamedFreshCells(t *testing.T) {
	s := dbtest.NewStore(t)
	ins := `INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags, expires_at)
VALUES ($1, 'z1', $2, 1024, 2048, 10, '{}', now() + $3 * interval '1 second')`
	exec(t, s, ins, "cell-a", "http://10.0.0.1:1800", 30)
	exec(t, s, ins, "cell-b", "http://10.0.0.2:1800", 30)
	exec(t, s, ins, "cell-c", "http://10.0.0.3:1800", 30)
	exec(t, s, ins, "cell-gone", "http://10.0.0.4:1800", -1)

	for _, c := range []struct {
		name string
		ids  []string
		want map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"only those named", []string{"cell-a", "cell-c"}, map[string]string{"cell-a": "http://10.0.0.1:1800", "cell-c": "http://10.0.0.3:1800"}},
		{"expired and unknown cells absent", []string{"cell-b", "cell-gone", "cell-never"}, map[string]string{"cell-b": "http://10.0.0.2:1800"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.CellAddresses(ctx, c.ids)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, c.want) {
				t.Fatalf("addresses = %v, want %v", got, c.want)
			}
		})
	}
}
