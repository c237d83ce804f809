package cell_test

import (
	"fmt"
	"testing"

	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
)

const (
	cellA = "cell-a" // the reconciling cell, "A" in seed 003
	cellO = "cell-o" // some other cell, "O"
	guid  = "c-1"    // the container's instance guid
	other = "c-2"    // another instance guid
)

var key = model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v1", Index: 2, Domain: "cf-apps"}

func container(state executor.State) *executor.Container {
	return &executor.Container{Guid: guid, Key: key, State: state, Address: "10.0.0.1",
		Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}
}

func completed(stopped, failed bool) *executor.Container {
	c := container(executor.StateCompleted)
	c.Result = executor.Result{Stopped: stopped, Failed: failed}
	return c
}

func lrp(state, cellID, instanceGUID string) *model.ActualLRP {
	return &model.ActualLRP{
		ActualLRPKey:         key,
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: instanceGUID, CellID: cellID},
		State:                state,
		Presence:             model.PresenceOrdinary,
	}
}

var (
	noContainer = []*executor.Container{nil}
	reserved    = []*executor.Container{container(executor.StateReserved)}
	starting    = []*executor.Container{container(executor.StateInitializing), container(executor.StateCreated)}
	running     = []*executor.Container{container(executor.StateRunning)}
	// A crash is any COMPLETED container not told to stop, whether or not it failed.
	crashedC = []*executor.Container{completed(false, true), completed(false, false)}
	// A shutdown is any COMPLETED container told to stop, even one that failed to exit cleanly.
	shutdownC = []*executor.Container{completed(true, false), completed(true, true)}
	// Every container a row marked "any container" stands for.
	anyContainer = concat(noContainer, reserved, starting, running, crashedC, shutdownC)

	noLRP      = []*model.ActualLRP{nil}
	unclaimed  = []*model.ActualLRP{lrp(model.StateUnclaimed, "", "")}
	claimedByA = []*model.ActualLRP{lrp(model.StateClaimed, cellA, guid)}
	runningOnA = []*model.ActualLRP{lrp(model.StateRunning, cellA, guid)}
	// O is another cell, or this cell under another instance guid (see Decide), or another
	// cell that happens to use the same instance guid.
	claimedByO = []*model.ActualLRP{lrp(model.StateClaimed, cellO, other), lrp(model.StateClaimed, cellA, other), lrp(model.StateClaimed, cellO, guid)}
	runningOnO = []*model.ActualLRP{lrp(model.StateRunning, cellO, other), lrp(model.StateRunning, cellA, other), lrp(model.StateRunning, cellO, guid)}
	crashed    = []*model.ActualLRP{lrp(model.StateCrashed, "", "")}
	anyLRP     = concat(noLRP, unclaimed, claimedByA, claimedByO, runningOnA, runningOnO, crashed)
)

func concat[T any](lists ...[]T) []T {
	var all []T
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// decideCase is one row: every container against every ActualLRP listed must decide want.
type decideCase struct {
	name       string
	seed       bool // a row of seed 003's table, as opposed to one it leaves out
	containers []*executor.Container
	lrps       []*model.ActualLRP
	want       cell.Action
}

// seedRows is how many rows seed 003's reconciliation table has.
const seedRows = 31

// decideCases is seed 003's "Harmonizing ActualLRPs with Container State: Rep" table, one case
// per row and named after it, followed by the pairs it leaves out.
var decideCases = []decideCase{
	{"RESERVED | ANY", true, reserved, anyLRP, cell.DoNothing},

	{"INITIALIZING or CREATED | No ActualLRP", true, starting, noLRP, cell.DeleteContainer},
	{"INITIALIZING or CREATED | UNCLAIMED", true, starting, unclaimed, cell.ClaimActualLRP},
	{"INITIALIZING or CREATED | CLAIMED by A", true, starting, claimedByA, cell.DoNothing},
	{"INITIALIZING or CREATED | CLAIMED by O", true, starting, claimedByO, cell.DeleteContainer},
	{"INITIALIZING or CREATED | RUNNING on A", true, starting, runningOnA, cell.DoNothing},
	{"INITIALIZING or CREATED | RUNNING on O", true, starting, runningOnO, cell.DeleteContainer},
	{"INITIALIZING or CREATED | CRASHED", true, starting, crashed, cell.DeleteContainer},

	{"RUNNING | No ActualLRP", true, running, noLRP, cell.StartActualLRP},
	{"RUNNING | UNCLAIMED", true, running, unclaimed, cell.StartActualLRP},
	{"RUNNING | CLAIMED by A", true, running, claimedByA, cell.StartActualLRP},
	{"RUNNING | CLAIMED by O", true, running, claimedByO, cell.StartActualLRP},
	{"RUNNING | RUNNING on A", true, running, runningOnA, cell.DoNothing},
	{"RUNNING | RUNNING on O", true, running, runningOnO, cell.DeleteContainer},
	{"RUNNING | CRASHED", true, running, crashed, cell.StartActualLRP},

	{"COMPLETED (crashed) | No ActualLRP", true, crashedC, noLRP, cell.CrashThenDeleteContainer},
	{"COMPLETED (crashed) | UNCLAIMED", true, crashedC, unclaimed, cell.DeleteContainer},
	{"COMPLETED (crashed) | CLAIMED by A", true, crashedC, claimedByA, cell.CrashThenDeleteContainer},
	{"COMPLETED (crashed) | STARING on O", true, crashedC, claimedByO, cell.DeleteContainer},
	{"COMPLETED (crashed) | RUNNING on A", true, crashedC, runningOnA, cell.CrashThenDeleteContainer},
	{"COMPLETED (crashed) | RUNNING on O", true, crashedC, runningOnO, cell.DeleteContainer},
	{"COMPLETED (crashed) | CRASHED", true, crashedC, crashed, cell.DeleteContainer},

	// The seed says "Perform RepCrashDance then Delete Container", copied from the crashed
	// row; nothing crashed, so the container is only deleted (see Decide).
	{"COMPLETED (shutdown) | No ActualLRP", true, shutdownC, noLRP, cell.DeleteContainer},
	{"COMPLETED (shutdown) | UNCLAIMED", true, shutdownC, unclaimed, cell.DeleteContainer},
	{"COMPLETED (shutdown) | CLAIMED by A", true, shutdownC, claimedByA, cell.RemoveThenDeleteContainer},
	{"COMPLETED (shutdown) | STARING on O", true, shutdownC, claimedByO, cell.DeleteContainer},
	{"COMPLETED (shutdown) | RUNNING on A", true, shutdownC, runningOnA, cell.RemoveThenDeleteContainer},
	{"COMPLETED (shutdown) | RUNNING on O", true, shutdownC, runningOnO, cell.DeleteContainer},
	{"COMPLETED (shutdown) | CRASHED", true, shutdownC, crashed, cell.DeleteContainer},

	{"No Container | CLAIMED by A", true, noContainer, claimedByA, cell.UnclaimAndRequestStart},
	{"No Container | RUNNING on A", true, noContainer, runningOnA, cell.UnclaimAndRequestStart},

	// Not in the seed.
	{"No Container | No ActualLRP", false, noContainer, noLRP, cell.DoNothing},
	{"No Container | UNCLAIMED", false, noContainer, unclaimed, cell.DoNothing},
	{"No Container | CRASHED", false, noContainer, crashed, cell.DoNothing},
	// Only O's own cell may fix what O holds.
	{"No Container | CLAIMED by O", false, noContainer, []*model.ActualLRP{lrp(model.StateClaimed, cellO, other)}, cell.DoNothing},
	{"No Container | RUNNING on O", false, noContainer, []*model.ActualLRP{lrp(model.StateRunning, cellO, other)}, cell.DoNothing},
	// Without a container only the cell can be compared: any instance guid on A is A's.
	{"No Container | CLAIMED by A under any instance guid", false, noContainer, []*model.ActualLRP{lrp(model.StateClaimed, cellA, other)}, cell.UnclaimAndRequestStart},
	{"No Container | RUNNING on A under any instance guid", false, noContainer, []*model.ActualLRP{lrp(model.StateRunning, cellA, other)}, cell.UnclaimAndRequestStart},
	{"unknown container state | ANY", false, []*executor.Container{container("DESTROYING"), container("")}, anyLRP, cell.DoNothing},
	{"ANY | unknown ActualLRP state", false, anyContainer, []*model.ActualLRP{lrp("EVACUATED", cellA, guid), lrp("", "", "")}, cell.DoNothing},
}

func describeContainer(c *executor.Container) string {
	if c == nil {
		return "no container"
	}
	if c.State == executor.StateCompleted {
		return fmt.Sprintf("%s(stopped=%v,failed=%v)", c.State, c.Result.Stopped, c.Result.Failed)
	}
	return fmt.Sprintf("%q", c.State)
}

func describeLRP(a *model.ActualLRP) string {
	if a == nil {
		return "no ActualLRP"
	}
	return fmt.Sprintf("%q@%s/%s", a.State, a.CellID, a.InstanceGUID)
}

func TestDecide(t *testing.T) {
	names := map[string]bool{}
	seed := 0
	for _, c := range decideCases {
		if names[c.name] {
			t.Errorf("two rows named %q", c.name)
		}
		names[c.name] = true
		if c.seed {
			seed++
		}
		t.Run(c.name, func(t *testing.T) {
			for _, ctr := range c.containers {
				for _, a := range c.lrps {
					if got := cell.Decide(ctr, a, cellA); got != c.want {
						t.Errorf("%s, %s: got %v, want %v", describeContainer(ctr), describeLRP(a), got, c.want)
					}
				}
			}
		})
	}
	if seed != seedRows {
		t.Errorf("%d rows of the seed's table are cases, want all %d", seed, seedRows)
	}
}

// TestDecideRespectsTransitions checks every decision of the table against BBS's state
// machine (model.ActualLRP.AllowsTransitionTo) as this cell would ask it, with its key
// {container guid, cellA}: every write it decides is allowed, and every container it deletes
// instead of recording is one whose record BBS would refuse.
func TestDecideRespectsTransitions(t *testing.T) {
	var empty model.ActualLRPInstanceKey
	for _, c := range decideCases {
		t.Run(c.name, func(t *testing.T) {
			for _, ctr := range c.containers {
				for _, a := range c.lrps {
					got := cell.Decide(ctr, a, cellA)
					where := describeContainer(ctr) + ", " + describeLRP(a)
					mine := model.ActualLRPInstanceKey{CellID: cellA}
					if ctr != nil {
						mine.InstanceGUID = ctr.Guid
					} else if a != nil {
						mine.InstanceGUID = a.InstanceGUID
					}
					switch got {
					case cell.ClaimActualLRP:
						if a == nil || a.State != model.StateUnclaimed || !a.AllowsTransitionTo(mine, model.StateClaimed) {
							t.Errorf("%s: claims what BBS would not let it claim", where)
						}
					case cell.StartActualLRP:
						switch {
						case a == nil:
							// CREATE RUNNING on A: no transition.
						case a.State == model.StateCrashed:
							// The table and BBS disagree: one swap is refused, but its two
							// halves (unclaim, then start) are each allowed; see Decide.
							if a.AllowsTransitionTo(mine, model.StateRunning) {
								t.Errorf("%s: BBS now allows CRASHED → RUNNING directly; simplify Decide's note", where)
							}
							if !a.AllowsTransitionTo(empty, model.StateUnclaimed) {
								t.Errorf("%s: cannot unclaim the CRASHED instance", where)
							}
							u := *a
							u.State, u.ActualLRPInstanceKey = model.StateUnclaimed, empty
							if !u.AllowsTransitionTo(mine, model.StateRunning) {
								t.Errorf("%s: cannot start the unclaimed instance", where)
							}
						case !a.AllowsTransitionTo(mine, model.StateRunning):
							t.Errorf("%s: starts what BBS would not let it start", where)
						}
					case cell.CrashThenDeleteContainer:
						if a != nil && !a.AllowsTransitionTo(mine, model.StateCrashed) {
							t.Errorf("%s: crashes what BBS would not let it crash", where)
						}
					case cell.RemoveThenDeleteContainer:
						if a == nil || a.ActualLRPInstanceKey != mine {
							t.Errorf("%s: removes an ActualLRP it does not hold", where)
						}
					case cell.UnclaimAndRequestStart:
						if a == nil || a.CellID != cellA || !a.AllowsTransitionTo(empty, model.StateUnclaimed) {
							t.Errorf("%s: unclaims what is not its own or cannot be unclaimed", where)
						}
					case cell.DeleteContainer:
						if a == nil {
							break
						}
						// A container is given up only when its own record would be refused.
						switch ctr.State {
						case executor.StateInitializing, executor.StateCreated:
							if a.AllowsTransitionTo(mine, model.StateClaimed) {
								t.Errorf("%s: deletes a starting container that could claim", where)
							}
						case executor.StateRunning:
							if a.AllowsTransitionTo(mine, model.StateRunning) {
								t.Errorf("%s: deletes a running container that could start", where)
							}
						case executor.StateCompleted:
							if a.AllowsTransitionTo(mine, model.StateCrashed) || a.ActualLRPInstanceKey == mine {
								t.Errorf("%s: deletes a completed container whose ActualLRP it holds", where)
							}
						}
					}
				}
			}
		})
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[cell.Action]string{
		cell.DoNothing:                 "DoNothing",
		cell.DeleteContainer:           "DeleteContainer",
		cell.ClaimActualLRP:            "ClaimActualLRP",
		cell.StartActualLRP:            "StartActualLRP",
		cell.CrashThenDeleteContainer:  "CrashThenDeleteContainer",
		cell.RemoveThenDeleteContainer: "RemoveThenDeleteContainer",
		cell.UnclaimAndRequestStart:    "UnclaimAndRequestStart",
		cell.Action(99):                "Action(99)",
		cell.Action(-1):                "Action(-1)",
	} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

// A running container whose readiness differs from its record's reports it again (BBS's rep
// calls StartActualLRP with the new routable); the same readiness does nothing.
func TestDecideReportsAReadinessChange(t *testing.T) {
	for _, tc := range []struct {
		containerNotReady, recordNotReady bool
		want                              cell.Action
	}{
		{false, false, cell.DoNothing},
		{true, true, cell.DoNothing},
		{true, false, cell.StartActualLRP},
		{false, true, cell.StartActualLRP},
	} {
		c := container(executor.StateRunning)
		c.NotReady = tc.containerNotReady
		a := lrp(model.StateRunning, cellA, guid)
		a.NotReady = tc.recordNotReady
		if got := cell.Decide(c, a, cellA); got != tc.want {
			t.Errorf("container not ready %v, record not ready %v: %s, want %s", tc.containerNotReady, tc.recordNotReady, got, tc.want)
		}
	}
}
