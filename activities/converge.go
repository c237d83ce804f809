package activities

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// ConvergeStore is the part of the store convergence needs.
type ConvergeStore interface {
	Converge(ctx context.Context, opts db.ConvergeOptions) (*db.ConvergeResult, error)
}

// Stopper sends stop requests to the cells that run the given instances. It must be
// idempotent (the same extra instance is listed on every pass until its cell reports the
// stop) and tolerate cells that are gone (a resolved SUSPECT's cell usually is).
type Stopper interface {
	StopInstances(ctx context.Context, lrps []model.ActualLRP) error
}

// Converger runs convergence passes (seed 003's Converger) as a Temporal activity.
type Converger struct {
	Store ConvergeStore
	// Stopper may be nil (no cells to talk to, as in some tests): the instances to stop are
	// then only logged.
	Stopper Stopper
	Log     *zap.Logger
	// EventRetention and EventsKept bound the event log, which each pass prunes; zero
	// values mean the store's defaults (db.DefaultEventRetention, db.DefaultEventsKept).
	// They are the worker's settings rather than the workflow's input: the schedule's stored
	// arguments need not change for an operator to change them.
	EventRetention time.Duration
	EventsKept     int
	// Tasks, when set, converges tasks in the same pass (BBS's ConvergeTasks) with
	// TaskOptions, and Callbacks (re)starts the completion callbacks it lists.
	Tasks       TaskConvergeStore
	TaskOptions db.TaskConvergeOptions
	Callbacks   CallbackStarter
	// Metrics, when set, records each pass for operators, with the fleet's counts that Fleet
	// reads once per pass: Diego's BBS emits the same from its converger, where the numbers
	// are known, and a pass every interval costs one more statement, never one per request.
	Metrics ConvergeMetrics
	Fleet   FleetCounter
}

// ConvergeMetrics records convergence passes (metrics.Convergence).
type ConvergeMetrics interface {
	// ConvergedLRPs records an LRP pass: how long it took and what it found.
	ConvergedLRPs(took time.Duration, res *db.ConvergeResult)
	// ConvergedTasks records a task pass.
	ConvergedTasks(took time.Duration)
	// FleetCounted records the fleet's counts after a pass.
	FleetCounted(f *db.Fleet)
}

// FleetCounter counts the fleet (db.Store.Fleet).
type FleetCounter interface {
	Fleet(ctx context.Context) (*db.Fleet, error)
}

// TaskConvergeStore is the part of the store task convergence needs.
type TaskConvergeStore interface {
	ConvergeTasks(ctx context.Context, opts db.TaskConvergeOptions) (*db.TaskConvergeResult, error)
}

// CallbackStarter starts a task's completion callback delivery, or finds the one under way.
type CallbackStarter interface {
	DeliverCallback(ctx context.Context, guid string) error
}

// ConvergeInput tunes one pass; zero values mean the store's defaults (30 s, 10 definitions).
type ConvergeInput struct {
	StaleUnclaimed time.Duration `json:"stale_unclaimed,omitempty"`
	RetiredHistory int           `json:"retired_history,omitempty"`
}

// ConvergeOutput counts what one pass did (db.ConvergeResult without the instances, which
// need not travel through the workflow history).
type ConvergeOutput struct {
	MissingCellClaims  int `json:"missing_cell_claims"`
	Suspected          int `json:"suspected"`
	SuspectsRemoved    int `json:"suspects_removed"`
	MissingIndices     int `json:"missing_indices"`
	DuplicatesRemoved  int `json:"duplicates_removed,omitempty"`
	DuplicatesToStop   int `json:"duplicates_to_stop,omitempty"`
	ExtrasRemoved      int `json:"extras_removed"`
	ExtrasToStop       int `json:"extras_to_stop"`
	CrashedRestarted   int `json:"crashed_restarted"`
	StaleUnclaimed     int `json:"stale_unclaimed"`
	DefinitionsRetired int `json:"definitions_retired"`
	DefinitionsPruned  int `json:"definitions_pruned"`
	EventsPruned       int `json:"events_pruned"`
	// Task convergence: PENDING tasks failed for waiting too long, RUNNING tasks failed
	// because their cell vanished, completed tasks deleted, callbacks (re)started.
	TasksExpired     int `json:"tasks_expired,omitempty"`
	TasksCellLost    int `json:"tasks_cell_lost,omitempty"`
	TasksDeleted     int `json:"tasks_deleted,omitempty"`
	CallbacksStarted int `json:"callbacks_started,omitempty"`
	CallbacksFailed  int `json:"callbacks_failed,omitempty"`
	// StopsRequested is how many stop requests went to cells; StopFailed says the Stopper
	// failed (logged, not retried: see Converge).
	StopsRequested int  `json:"stops_requested"`
	StopFailed     bool `json:"stop_failed,omitempty"`
}

// ConvergeHeartbeat is how often a convergence activity (a pass, or resuming the rollouts)
// heartbeats while it runs, so that a worker that dies mid-pass is noticed within a few of
// these (the workflow's heartbeat timeout) rather than the pass's start-to-close timeout.
const ConvergeHeartbeat = 2 * time.Second

// Converge runs one pass over the store and asks cells to stop what must stop. It is
// idempotent: every step of the pass is, and stop requests may repeat.
//
// A failed stop request does not fail the activity: the database changes are committed, a
// retry would not list the deleted records again, and what is still stored is listed again
// by the next pass anyway; a cell also stops, on its own reconciliation, what the store no
// longer lists (seed 003, "Harmonizing ActualLRPs with Container State").
func (c *Converger) Converge(ctx context.Context, in ConvergeInput) (ConvergeOutput, error) {
	if in.StaleUnclaimed < 0 || in.RetiredHistory < 0 {
		return ConvergeOutput{}, temporal.NewNonRetryableApplicationError(
			"converge: stale_unclaimed and retired_history must not be negative", string(model.ErrInvalidRequest), nil)
	}
	log := c.Log
	if log == nil {
		log = zap.NewNop()
	}
	defer heartbeatEvery(ctx, ConvergeHeartbeat)()
	began := time.Now()
	res, err := c.Store.Converge(ctx, db.ConvergeOptions{StaleUnclaimed: in.StaleUnclaimed, RetiredHistory: in.RetiredHistory,
		EventRetention: c.EventRetention, EventsKept: c.EventsKept})
	if model.IsType(err, model.ErrInvalidRequest) {
		return ConvergeOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), string(model.ErrInvalidRequest), err)
	}
	if err != nil {
		return ConvergeOutput{}, err
	}
	if c.Metrics != nil {
		c.Metrics.ConvergedLRPs(time.Since(began), res)
	}
	out := ConvergeOutput{
		MissingCellClaims: res.MissingCellClaims, Suspected: res.Suspected, SuspectsRemoved: res.SuspectsRemoved,
		MissingIndices: res.MissingIndices, ExtrasRemoved: res.ExtrasRemoved, ExtrasToStop: res.ExtrasToStop,
		DuplicatesRemoved: res.DuplicatesRemoved, DuplicatesToStop: res.DuplicatesToStop,
		CrashedRestarted: res.CrashedRestarted, StaleUnclaimed: res.StaleUnclaimed,
		DefinitionsRetired: res.DefinitionsRetired, DefinitionsPruned: res.DefinitionsPruned,
		EventsPruned: res.EventsPruned,
	}
	if err := c.convergeTasks(ctx, &out, log); err != nil {
		return out, err
	}
	c.countFleet(ctx, log)
	if len(res.ToStop) > 0 {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if c.Stopper == nil {
			for _, a := range res.ToStop {
				log.Warn("no stopper configured: instance left running",
					zap.String("process_guid", a.ProcessGUID), zap.String("definition_id", a.DefinitionID),
					zap.Int32("index", a.Index), zap.String("cell_id", a.CellID), zap.String("presence", a.Presence))
			}
		} else if err := c.Stopper.StopInstances(ctx, res.ToStop); err != nil {
			out.StopFailed = true
			log.Warn("stop requests failed; the next pass asks again", zap.Int("instances", len(res.ToStop)), zap.Error(err))
		} else {
			out.StopsRequested = len(res.ToStop)
		}
	}
	log.Info("converged",
		zap.Int("missing_cell_claims", out.MissingCellClaims), zap.Int("suspected", out.Suspected),
		zap.Int("suspects_removed", out.SuspectsRemoved), zap.Int("missing_indices", out.MissingIndices),
		zap.Int("extras_removed", out.ExtrasRemoved), zap.Int("extras_to_stop", out.ExtrasToStop),
		zap.Int("duplicates_removed", out.DuplicatesRemoved), zap.Int("duplicates_to_stop", out.DuplicatesToStop),
		zap.Int("crashed_restarted", out.CrashedRestarted), zap.Int("stale_unclaimed", out.StaleUnclaimed),
		zap.Int("definitions_retired", out.DefinitionsRetired), zap.Int("definitions_pruned", out.DefinitionsPruned),
		zap.Int("events_pruned", out.EventsPruned),
		zap.Int("tasks_expired", out.TasksExpired), zap.Int("tasks_cell_lost", out.TasksCellLost),
		zap.Int("tasks_deleted", out.TasksDeleted), zap.Int("callbacks_started", out.CallbacksStarted),
		zap.Int("stops_requested", out.StopsRequested), zap.String("steps", res.StepTimes()))
	return out, nil
}

// convergeTasks runs the task part of the pass and starts the callbacks it lists. A callback
// that cannot be started is counted, not retried: the next pass lists it again.
func (c *Converger) convergeTasks(ctx context.Context, out *ConvergeOutput, log *zap.Logger) error {
	if c.Tasks == nil {
		return nil
	}
	began := time.Now()
	res, err := c.Tasks.ConvergeTasks(ctx, c.TaskOptions)
	if err != nil {
		return err
	}
	if c.Metrics != nil {
		c.Metrics.ConvergedTasks(time.Since(began))
	}
	out.TasksExpired, out.TasksCellLost, out.TasksDeleted = res.ExpiredPending, res.CellDisappeared, res.Deleted
	for _, t := range res.ToDeliver {
		if c.Callbacks == nil {
			break
		}
		if err := c.Callbacks.DeliverCallback(ctx, t.TaskGUID); err != nil {
			out.CallbacksFailed++
			log.Warn("start task callback", zap.String("task_guid", t.TaskGUID), zap.Error(err))
			continue
		}
		out.CallbacksStarted++
	}
	return nil
}

// countFleet reads the fleet's counts for the metrics. A failed read only leaves the gauges
// of the previous pass: it must not fail the pass, whose changes are committed.
func (c *Converger) countFleet(ctx context.Context, log *zap.Logger) {
	if c.Metrics == nil || c.Fleet == nil {
		return
	}
	f, err := c.Fleet.Fleet(ctx)
	if err != nil {
		log.Warn("count the fleet for the metrics", zap.Error(err))
		return
	}
	c.Metrics.FleetCounted(f)
}
