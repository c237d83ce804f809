package activities

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// RolloutStore is what the rollout activities need of the database (implemented by
// *db.Store). Every method is idempotent, because Temporal retries activities.
type RolloutStore interface {
	// RolloutByID returns a rollout row.
	RolloutByID(ctx context.Context, id string) (*model.Rollout, error)
	// DesiredInstances returns the LRP's desired instance count and its healthy definition;
	// exists is false once the LRP has been removed.
	DesiredInstances(ctx context.Context, guid string) (instances int32, healthy string, exists bool, err error)
	// DesireInstance makes sure an ORDINARY instance of definition def exists at index
	// (creating it UNCLAIMED for placement) and returns it.
	DesireInstance(ctx context.Context, guid, def string, index int32) (*model.ActualLRP, error)
	// Instance returns the ORDINARY instance of def at index, or a ResourceNotFound error.
	Instance(ctx context.Context, guid, def string, index int32) (*model.ActualLRP, error)
	// RetireOthers retires every ORDINARY instance at index whose definition is not keep:
	// UNCLAIMED and CRASHED ones are deleted, CLAIMED and RUNNING ones are returned for their
	// cells to stop (their records go when the cells report the stop).
	RetireOthers(ctx context.Context, guid, keep string, index int32) ([]model.ActualLRP, error)
	// RetireInstance retires the ORDINARY instance of def at index the same way (a flaky
	// index given up), returning it when its cell must stop it.
	RetireInstance(ctx context.Context, guid, def string, index int32) ([]model.ActualLRP, error)
	// IndicesOff lists the indices below the LRP's count holding an ORDINARY instance, not
	// retiring, of another definition than def.
	IndicesOff(ctx context.Context, guid, def string) ([]int32, error)
	// RecordRolloutProgress stores where the walk is.
	RecordRolloutProgress(ctx context.Context, id string, p model.RolloutProgress) error
	// RecordRolloutState stores the walk's state (and run id, unless empty) alone.
	RecordRolloutState(ctx context.Context, id, state, runID string) error
	// BeginCancel turns a rollout into a walk back: state canceling, the LRP's active (and
	// healthy) definition back to the rollout's from definition.
	BeginCancel(ctx context.Context, id string) error
	// FinishRollout ends a rollout in state (completed, canceled or failed) with reason:
	// completed and canceled clear the LRP's previous definition. finished is false when the
	// rollout had already ended (a retry).
	FinishRollout(ctx context.Context, id, state, reason string) (finished bool, err error)
	// CompleteRollout ends a rollout that walked every index in one transaction: its final
	// progress, its state (completed or canceled), then the definitions of prune it left
	// unused retired. finished is false when the rollout had already ended.
	CompleteRollout(ctx context.Context, id string, p model.RolloutProgress, state string, prune []string) (finished bool, err error)
	// StartRollout records a new rollout (here: a rollback an operator signalled to the
	// running workflow, superseding its rollout).
	StartRollout(ctx context.Context, req db.RolloutRequest) (*db.RolloutStart, error)
	// OpenRun, StopRun, StopRunRetiring, SetRunLimit, TakeRun, HoldsRun and AdvanceRun are
	// the fenced steps of an index run (db/rollout_run.go).
	OpenRun(ctx context.Context, id string) (fence int64, err error)
	StopRun(ctx context.Context, id string) (db.RunState, error)
	StopRunRetiring(ctx context.Context, id, guid, def string) (db.RunState, []model.ActualLRP, error)
	SetRunLimit(ctx context.Context, id string, fence int64, limit int32) error
	TakeRun(ctx context.Context, h db.RunHold) (db.RunState, error)
	HoldsRun(ctx context.Context, h db.RunHold) (held bool, limit int32, err error)
	AdvanceRun(ctx context.Context, h db.RunHold, a db.RunAdvance) (*db.RunAdvanced, error)
	// PruneDefinition retires def from the LRP's definitions map when no instance runs it and
	// the LRP does not name it (seed 000); pruned says whether it did.
	PruneDefinition(ctx context.Context, guid, def string) (pruned bool, err error)
	// TrafficStore keeps the LRP's traffic split and the routers' acknowledgements.
	TrafficStore
	// AnalysisStore measures windows of the routers' telemetry and keeps verdicts.
	AnalysisStore
	// GateStore reads the freeze and rollout windows.
	GateStore
}
