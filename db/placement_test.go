package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// TestCellLoadsSumsWhatIsNotAskedAbout: the instances of the LRPs asked about are listed one
// by one, everything else a cell holds is summed, and the two add up to the whole.
func TestCellLoadsSumsWhatIsNotAskedAbout(t *testing.T) {
	s := dbtest.NewStore(t)
	exec(t, s, `INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1800', 4096, 4096, 10, now() + interval '30 seconds')`)
	desire(t, s, newLRP("a", 2)) // 128 MB, 256 MB disk each
	desire(t, s, newLRP("b", 3))
	makeRunning(t, s, "a", "a", 0)
	makeRunning(t, s, "a", "a", 1)
	makeRunning(t, s, "b", "b", 0)
	exec(t, s, `UPDATE actual_lrps SET state = 'CLAIMED', cell_id = 'cell-1', instance_guid = 'ig-b1'
WHERE process_guid = 'b' AND instance_index = 1`)

	loads, err := s.CellLoads(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := db.CellUsage{MemoryMB: 4 * 128, DiskMB: 4 * 256, Containers: 4, Starting: 1}
	if len(loads) != 1 || loads[0].Held != want || len(loads[0].Instances) != 0 {
		t.Fatalf("loads without guids = %+v, want held %+v", loads, want)
	}

	loads, err = s.CellLoads(ctx, []string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	want = db.CellUsage{MemoryMB: 2 * 128, DiskMB: 2 * 256, Containers: 2}
	l := loads[0]
	starting := 0
	for _, h := range l.Instances {
		if h.ProcessGUID != "b" || h.MemoryMB != 128 || h.DiskMB != 256 {
			t.Fatalf("listed %+v, want only b's instances", h)
		}
		if h.Starting {
			starting++
		}
	}
	if l.Held != want || len(l.Instances) != 2 || starting != 1 {
		t.Fatalf("load with b = %+v, want b's 2 instances (1 starting) and held %+v", l, want)
	}
}
