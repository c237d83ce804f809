package cell

import (
	"fmt"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
)

// Action is what the rep does for one (container, ActualLRP) pair, decided by Decide.
type Action int

const (
	// DoNothing leaves both the container and the BBS alone.
	DoNothing Action = iota
	// DeleteContainer deletes the container and leaves the BBS alone. Before deleting an
	// INITIALIZING, CREATED or RUNNING container the rep re-reads the ActualLRP and decides
	// again (seed 003, "Polling vs Events"): a stale copy must never kill a live instance.
	DeleteContainer
	// ClaimActualLRP compares-and-swaps the ActualLRP from UNCLAIMED to CLAIMED with this
	// cell's instance key (the container's guid and this cell).
	ClaimActualLRP
	// StartActualLRP makes the ActualLRP RUNNING with this cell's instance key and the
	// container's net info: a compare-and-swap, or a CREATE when there is no ActualLRP (BBS's
	// StartActualLRP creates a missing one). From CRASHED it cannot be one swap; see Decide.
	StartActualLRP
	// CrashThenDeleteContainer performs the RepCrashDance (model.RestartPolicy.CrashDance:
	// count the crash, then CAS to UNCLAIMED and request a start, or CAS to CRASHED) and then
	// deletes the container.
	CrashThenDeleteContainer
	// RemoveThenDeleteContainer compares-and-deletes the ActualLRP held with this cell's
	// instance key and then deletes the container.
	RemoveThenDeleteContainer
	// UnclaimAndRequestStart compares-and-swaps the ActualLRP to UNCLAIMED (clearing its
	// instance key) and asks for a placement, because this cell does not have it.
	UnclaimAndRequestStart
)

var actionNames = [...]string{
	DoNothing:                 "DoNothing",
	DeleteContainer:           "DeleteContainer",
	ClaimActualLRP:            "ClaimActualLRP",
	StartActualLRP:            "StartActualLRP",
	CrashThenDeleteContainer:  "CrashThenDeleteContainer",
	RemoveThenDeleteContainer: "RemoveThenDeleteContainer",
	UnclaimAndRequestStart:    "UnclaimAndRequestStart",
}

// String names the action for logs and test output.
func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// containerKind is a column of seed 003's table: the container states the table tells apart.
type containerKind int

const (
	noContainer containerKind = iota
	reserved
	starting // INITIALIZING or CREATED: the table treats them alike.
	running
	crashed  // COMPLETED, not asked to stop.
	shutdown // COMPLETED after a stop.
	unknownContainer
)

// lrpKind is the other column of the table: the ActualLRP's state and whose it is.
type lrpKind int

const (
	noLRP lrpKind = iota
	unclaimed
	claimedByA
	claimedByO
	runningOnA
	runningOnO
	crashedLRP
	unknownLRP
)

type pair struct {
	c containerKind
	l lrpKind
}

// table is seed 003's "Harmonizing ActualLRPs with Container State: Rep", row for row, plus
// the pairs it leaves out (marked). A pair missing here is DoNothing; RESERVED is handled in
// Decide because it matches any ActualLRP.
var table = map[pair]Action{
	// INITIALIZING or CREATED: A is starting the instance.
	{starting, noLRP}:      DeleteContainer, // The consumer likely stopped desiring it during the auction.
	{starting, unclaimed}:  ClaimActualLRP,  // A is starting it.
	{starting, claimedByA}: DoNothing,       // Already recorded.
	{starting, claimedByO}: DeleteContainer, // It is starting on O.
	{starting, runningOnA}: DoNothing,       // "Should not be possible"; leave it for the next pass.
	{starting, runningOnO}: DeleteContainer, // It runs on O.
	{starting, crashedLRP}: DeleteContainer, // A starts it wrongly; the converger restarts it elsewhere.

	// RUNNING: a running container is the strongest evidence there is, so A records it
	// wherever the BBS allows (never deleting on a missing ActualLRP: a purged BBS must not
	// shut every container down).
	{running, noLRP}:      StartActualLRP, // CREATE RUNNING on A.
	{running, unclaimed}:  StartActualLRP, // No need to start it elsewhere.
	{running, claimedByA}: StartActualLRP,
	{running, claimedByO}: StartActualLRP, // BBS lets any key move CLAIMED to RUNNING.
	{running, runningOnA}: DoNothing,
	{running, runningOnO}: DeleteContainer, // O won; two running copies must not stay.
	{running, crashedLRP}: StartActualLRP,  // Not crashed after all; see Decide for how.

	// COMPLETED (crashed).
	{crashed, noLRP}:      CrashThenDeleteContainer, // BBS purged? Record what is true; see Decide.
	{crashed, unclaimed}:  DeleteContainer,          // It will be placed elsewhere.
	{crashed, claimedByA}: CrashThenDeleteContainer, // Crashed while starting.
	{crashed, claimedByO}: DeleteContainer,          // Seed's "STARING on O": starting elsewhere.
	{crashed, runningOnA}: CrashThenDeleteContainer, // Crashed while running.
	{crashed, runningOnO}: DeleteContainer,          // Running elsewhere.
	{crashed, crashedLRP}: DeleteContainer,          // The crash is already recorded.

	// COMPLETED (shutdown): A was told to stop it.
	{shutdown, noLRP}:      DeleteContainer, // Deviation from the seed; see Decide.
	{shutdown, unclaimed}:  DeleteContainer,
	{shutdown, claimedByA}: RemoveThenDeleteContainer, // Clean up the BBS after the stop.
	{shutdown, claimedByO}: DeleteContainer,           // Seed's "STARING on O".
	{shutdown, runningOnA}: RemoveThenDeleteContainer,
	{shutdown, runningOnO}: DeleteContainer,
	{shutdown, crashedLRP}: DeleteContainer,

	// No Container (and no reservation).
	{noContainer, claimedByA}: UnclaimAndRequestStart, // Diego thinks A starts it; A does not.
	{noContainer, runningOnA}: UnclaimAndRequestStart, // Diego thinks A runs it; A does not.
	// Not in the seed: none of these is A's to fix. UNCLAIMED waits for its placement (the
	// converger re-places stale ones), CRASHED for the converger's restart, and O reconciles
	// its own instances; A writing here would race with them.
	{noContainer, noLRP}:      DoNothing,
	{noContainer, unclaimed}:  DoNothing,
	{noContainer, crashedLRP}: DoNothing,
	{noContainer, claimedByO}: DoNothing,
	{noContainer, runningOnO}: DoNothing,
}

// Decide applies seed 003's reconciliation table to one pair and returns what the rep does.
// It only decides: it reads nothing and changes nothing, so that the table can be tested row
// for row. The passes that read the BBS and the executor and carry its answers out are in
// reconcile_passes.go (reconcileAll on a poll, reconcileContainers on container events).
// container nil means "No Container" (no container, nor reservation, holds lrp's instance);
// lrp nil means "No ActualLRP" at the container's key. The caller pairs a container with the
// ORDINARY (or SUSPECT) ActualLRP at container.Key; evacuating instances follow seed 003's
// evacuation rules, not this table. cellID is this cell, "A" in the seed; every other owner is
// "O".
//
// "Claimed by A" and "running on A" mean the ActualLRP's whole instance key is this cell and
// this container: CellID == cellID and InstanceGUID == container.Guid (with no container, only
// the cell is compared). An ActualLRP that this cell holds under another instance guid is O
// for this container, on purpose:
//   - it is the instance key BBS compares ("same key" in model.ActualLRP.AllowsTransitionTo),
//     so crashing, removing or re-claiming it from this container would be refused anyway;
//   - two containers of one index on one cell (a duplicated start, or a leftover from an
//     earlier placement) must not both be kept: as O, a starting or running duplicate is
//     deleted unless it can take the ActualLRP over by a legal transition (RUNNING over
//     CLAIMED), and a crashed or stopped one is deleted without crashing or removing the
//     instance the other container holds;
//   - the ActualLRP's own container, if gone, is caught by its "No Container" pass.
//
// A COMPLETED container is "shutdown" when Result.Stopped is set and "crashed" otherwise;
// Result.Failed does not matter, since an instance that exits non-zero when told to stop was
// still stopped, not crashed.
//
// Where the table and BBS's transitions (model.ActualLRP.AllowsTransitionTo) disagree, the
// decision keeps the table and the cell carries it out as follows:
//
//   - RUNNING container, CRASHED ActualLRP → StartActualLRP. BBS lets CRASHED go to RUNNING
//     only with the same instance key, and a CRASHED instance has none, so one
//     compare-and-swap with A's key is refused (BBS's StartActualLRP answers
//     ActualLRPCannotBeStarted). Both halves are legal, though: CRASHED → UNCLAIMED with the
//     key cleared, then UNCLAIMED → RUNNING with any key. The start route therefore performs
//     the two steps in one transaction under the row lock, keeping CrashCount (the instance did
//     crash; CrashDance resets the count once it has run long enough). A cell talking to a
//     server that refuses does the two compare-and-swaps itself, with no start request in
//     between; if another cell claims the instance in the gap, the next pass sees "RUNNING |
//     CLAIMED by O" and takes it over legally. The container is not deleted on refusal: the
//     seed's reason holds, it is running and need not be restarted.
//   - COMPLETED (crashed) container, no ActualLRP → CrashThenDeleteContainer. BBS's
//     CrashActualLRP needs an existing ActualLRP, so "the RepCrashDance" here means creating
//     it from the container's key with CrashCount 1, UNCLAIMED, and requesting a start (what
//     CrashDance(0, zero time, now) yields). If the crash route answers not-found instead, the
//     cell still deletes the container: the converger creates a missing instance that is still
//     desired.
//   - COMPLETED (shutdown) container, no ActualLRP → DeleteContainer, not the seed's
//     "Perform RepCrashDance then Delete Container". That row repeats the crashed row's words
//     ("A just saw a crash") but nothing crashed: the container was told to stop, and its
//     ActualLRP is missing because it was retired or already removed by an earlier pass whose
//     container delete failed. Recreating it would resurrect a retired instance.
//
// Unknown container or ActualLRP states decide DoNothing: acting on data the rep does not
// understand could only destroy something.
func Decide(container *executor.Container, lrp *model.ActualLRP, cellID string) Action {
	c := kindOfContainer(container)
	switch c {
	case reserved:
		// A merely holds a reservation; no need to act yet, whatever the BBS says.
		return DoNothing
	case unknownContainer:
		return DoNothing
	}
	l := kindOfLRP(lrp, container, cellID)
	if l == unknownLRP {
		return DoNothing
	}
	if c == running && l == runningOnA && container.NotReady != lrp.NotReady {
		// Its readiness changed: BBS's rep reports that with a start (routable or not).
		return StartActualLRP
	}
	return table[pair{c, l}]
}

func kindOfContainer(c *executor.Container) containerKind {
	if c == nil {
		return noContainer
	}
	switch c.State {
	case executor.StateReserved:
		return reserved
	case executor.StateInitializing, executor.StateCreated:
		return starting
	case executor.StateRunning:
		return running
	case executor.StateCompleted:
		if c.Result.Stopped {
			return shutdown
		}
		return crashed
	}
	return unknownContainer
}

func kindOfLRP(lrp *model.ActualLRP, c *executor.Container, cellID string) lrpKind {
	if lrp == nil {
		return noLRP
	}
	mine := lrp.CellID == cellID && (c == nil || lrp.InstanceGUID == c.Guid)
	switch lrp.State {
	case model.StateUnclaimed:
		return unclaimed
	case model.StateCrashed:
		return crashedLRP
	case model.StateClaimed:
		if mine {
			return claimedByA
		}
		return claimedByO
	case model.StateRunning:
		if mine {
			return runningOnA
		}
		return runningOnO
	}
	return unknownLRP
}
