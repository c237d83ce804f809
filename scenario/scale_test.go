package scenario

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// TestScale10kInstancesOver100Cells places and runs 10,000 sim instances (1,000 LRPs × 10)
// over 100 cells in 2 zones, through the real API, placement and cell agents. The time it
// takes is logged (and recorded in docs/BENCHMARKS.md), not asserted.
func TestScale10kInstancesOver100Cells(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	const lrps, perLRP, cells = 1000, 10, 100
	c := newCluster(t, cells, 2, model.CellCapacity{MemoryMB: 16384, DiskMB: 16384, Containers: 250})
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < lrps; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.BBS.DesireLRP(ctx, simLRP(fmt.Sprintf("app-%04d", i), perLRP)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	desired := time.Since(start)
	var all []model.ActualLRP
	c.waitFor("10,000 RUNNING instances", 5*time.Minute, func() bool {
		var err error
		all, err = c.Store.ActualLRPs(ctx, model.ActualLRPFilter{})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, a := range all {
			if a.State == model.StateRunning {
				running++
			}
		}
		return running == lrps*perLRP
	})
	took := time.Since(start)
	perCell := map[string]int{}
	perZone := map[string]int{}
	for _, a := range all {
		perCell[a.CellID]++
		perZone[c.Zone(a.CellID)]++
	}
	lo, hi := lrps*perLRP, 0
	for _, n := range perCell {
		lo, hi = min(lo, n), max(hi, n)
	}
	t.Logf("10,000 instances on %d cells: desired in %s, all RUNNING after %s (%.0f instances/s); per cell %d–%d, per zone %v",
		len(perCell), desired.Round(time.Millisecond), took.Round(time.Millisecond), float64(lrps*perLRP)/took.Seconds(), lo, hi, perZone)
	if len(perCell) != cells {
		t.Fatalf("only %d of %d cells got instances", len(perCell), cells)
	}
}
