package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

var roomy = model.CellCapacity{MemoryMB: 4096, DiskMB: 4096, Containers: 100}

func TestInstancesRunSpreadOverCellsAndZones(t *testing.T) {
	c := newCluster(t, 4, 2, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 8)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("8 RUNNING", 20*time.Second, func() bool { return runningIndices(c.instances("web")) == 8 })
	perCell, perZone := map[string]int{}, map[string]int{}
	for _, a := range c.instances("web") {
		perCell[a.CellID]++
		perZone[c.Zone(a.CellID)]++
		if a.Address == "" || len(a.Ports) != 1 || a.Ports[0].ContainerPort != 8080 || a.Ports[0].HostPort == 0 {
			t.Fatalf("instance %d has no net info: %+v", a.Index, a.ActualLRPNetInfo)
		}
	}
	if len(perCell) != 4 || perZone["z1"] != 4 || perZone["z2"] != 4 {
		t.Fatalf("not spread evenly: cells %v zones %v", perCell, perZone)
	}
	dep, err := c.Store.LRPDeploymentByProcessGUID(ctx, "web")
	if err != nil || dep.HealthyDefinitionID != "web" {
		t.Fatalf("healthy definition after instances ran: %+v %v", dep, err)
	}
}

// The rep's crash dance (seed 003): the first three crashes restart at once; the fourth
// waits as CRASHED for the converger's backoff.
func TestCrashingInstancesRestartThenBackOff(t *testing.T) {
	c := newCluster(t, 2, 2, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("crashy", 1, model.EnvironmentVariable{Name: "SIM_CRASH_AFTER_MS", Value: "150"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the fourth crash", 20*time.Second, func() bool {
		l := c.instances("crashy")
		return len(l) == 1 && l[0].State == model.StateCrashed
	})
	a := c.instances("crashy")[0]
	if a.CrashCount != 4 || a.CrashReason == "" || a.CellID != "" {
		t.Fatalf("after the crash dance: %+v", a)
	}
}

func TestUnplaceableInstancesReportInsufficientResources(t *testing.T) {
	c := newCluster(t, 2, 2, model.CellCapacity{MemoryMB: 128, DiskMB: 1024, Containers: 10})
	big := simLRP("big", 1)
	big.MemoryMB = 4096
	if err := c.BBS.DesireLRP(ctx, big); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a placement error", 10*time.Second, func() bool {
		l := c.instances("big")
		return len(l) == 1 && strings.HasPrefix(l[0].PlacementError, model.PlacementErrorInsufficientResources)
	})
	// Room appears: a bigger cell joins, and the retry places it.
	c.AddCell("cell-big", "z1", model.CellCapacity{MemoryMB: 8192, DiskMB: 8192, Containers: 10})
	c.waitFor("the instance to run on the new cell", 15*time.Second, func() bool {
		l := c.instances("big")
		return len(l) == 1 && l[0].State == model.StateRunning && l[0].CellID == "cell-big" && l[0].PlacementError == ""
	})
}

func TestScalingAndRemovalStopInstancesOnTheirCells(t *testing.T) {
	c := newCluster(t, 2, 2, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 4)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("4 RUNNING", 20*time.Second, func() bool { return runningIndices(c.instances("web")) == 4 })
	two := int32(2)
	if err := c.BBS.UpdateDesiredLRP(ctx, "web", &model.DesiredLRPUpdate{Instances: &two}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("indices 2 and 3 stopped and removed", 10*time.Second, func() bool {
		l := c.instances("web")
		return len(l) == 2 && l[0].Index == 0 && l[1].Index == 1
	})
	if err := c.BBS.RemoveDesiredLRP(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every instance stopped and removed", 10*time.Second, func() bool {
		if len(c.instances("web")) != 0 {
			return false
		}
		for _, sc := range c.Cells {
			if len(sc.Exec.Containers()) != 0 {
				return false
			}
		}
		return true
	})
}

// Evacuation (seed 003): a draining cell's RUNNING instances keep serving as EVACUATING
// until their replacements run elsewhere; the number of served indices never drops.
func TestEvacuationKeepsEveryIndexServed(t *testing.T) {
	c := newCluster(t, 3, 2, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 6, model.EnvironmentVariable{Name: "SIM_START_DELAY_MS", Value: "200"})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("6 RUNNING", 20*time.Second, func() bool { return runningIndices(c.instances("web")) == 6 })
	drained := c.Cells[0]
	drained.Agent.Drain()
	lowest := 6
	c.waitFor("the drained cell to hold nothing", 30*time.Second, func() bool {
		l := c.instances("web")
		if n := runningIndices(l); n < lowest {
			lowest = n
		}
		for _, a := range l {
			if a.CellID == drained.ID || a.Presence != model.PresenceOrdinary || a.State != model.StateRunning {
				return false
			}
		}
		return len(l) == 6
	})
	if lowest < 6 {
		t.Fatalf("served indices dropped to %d of 6 during evacuation", lowest)
	}
	exited, err := drained.Wait(10 * time.Second)
	if !exited {
		t.Fatal("the drained cell did not exit")
	}
	if err != nil {
		t.Fatalf("drained cell: %v", err)
	}
}
