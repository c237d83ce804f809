// Package lrps carries out the changes to an LRP that more than one API offers — updating it
// (a rolling update when a new definition comes), cancelling, rolling back and activating
// rollouts, removing it, retiring one of its instances — the same way for each: the JSON API (package api) and the BBS
// protocol (package protocol) validate and translate their requests, then call a Service, so
// that a change made through one is a change made through the other.
//
// Each change is one store transaction, after which the Service starts or signals the
// rollout's workflow and hands the instances the change retired to their cells to stop.
package lrps

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Store is what the changes need of the database.
type Store interface {
	DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error)
	UpdateDesiredLRP(ctx context.Context, guid string, u *model.DesiredLRPUpdate) (*db.UpdateResult, error)
	RemoveDesiredLRP(ctx context.Context, guid string) (*db.RemoveResult, error)
	RolloutByProcessGUID(ctx context.Context, guid string) (*model.Rollout, error)
	StartRollout(ctx context.Context, req db.RolloutRequest) (*db.RolloutStart, error)
	RetireActualLRP(ctx context.Context, key model.ActualLRPKey) (*model.ActualLRP, error)
	SetRolloutPace(ctx context.Context, id string, maxInFlight int32) (*model.Rollout, error)
	// RecordRolloutControl checks a pause or resume against the LRP's rollout in progress,
	// locked, with allow, and records it as the rollout's last control, in one transaction
	// (NoRolloutInProgress when there is none).
	RecordRolloutControl(ctx context.Context, guid, kind string, allow func(*model.Rollout) error) (*model.Rollout, error)
	// WithdrawWeight takes a weighted rollout's new definition to a weight of 0.
	WithdrawWeight(ctx context.Context, rolloutID string) (bool, error)
}

// Stopper asks cells to stop CLAIMED or RUNNING instances; the cells then remove the records.
type Stopper interface {
	StopInstances(ctx context.Context, lrps []model.ActualLRP) error
}

// Rollouts starts and steers the rollout workflows (one per LRP). Each call is idempotent:
// starting a running workflow, or signalling one that has not started yet, both work.
type Rollouts interface {
	StartRollout(ctx context.Context, r *model.Rollout, domain string) error
	SupersedeRollout(ctx context.Context, r *model.Rollout, domain string) error
	CancelRollout(ctx context.Context, r *model.Rollout, domain string) error
	// Control signals the rollout r's workflow (model.RolloutControl); the workflow applies
	// each control once, so repeating one changes nothing.
	Control(ctx context.Context, r *model.Rollout, c model.RolloutControl) error
	// Defaults is the server's layer of every rollout's strategy.
	Defaults() *model.RolloutStrategy
}

// ErrNoRollouts answers a change that needs a rollout workflow when there is no Temporal.
var ErrNoRollouts = model.Errorf(model.ErrUnavailable, "this API server has no connection to Temporal, which runs rollouts")

// Service makes the changes over a store, a stopper and the rollout workflows. A process
// builds one and hands it to both APIs, so that a change made through either is made by the
// same rules.
type Service struct {
	store     Store
	stops     *Stops
	workflows Rollouts // nil: no Temporal, rollouts answer Unavailable
	log       *zap.Logger
	// groupStore and groupWorkflows serve rollout groups (WithGroups); nil: groups answer
	// Unavailable.
	groupStore     GroupStore
	groupWorkflows GroupWorkflows
}

// NewService builds a Service. stopper may be nil while no cell can run instances; the
// instances that would need a stop are then logged, and convergence stops them. rollouts may
// be nil when the process has no Temporal; the changes that need a rollout workflow then
// answer Unavailable (ErrNoRollouts), and the others are made as usual.
func NewService(store Store, stopper Stopper, rollouts Rollouts, log *zap.Logger) *Service {
	log = log.Named("lrps")
	return &Service{store: store, stops: NewStops(stopper, log), workflows: rollouts, log: log}
}

// Update applies u to the LRP of guid and returns it as changed. A definition starts a
// rolling update (UpdateInProgress while one runs, unless supersede: seed 000's new
// definition during a rollout); any other change is made at once, and the instances a
// scale-down retires are stopped.
func (s *Service) Update(ctx context.Context, guid string, u *model.DesiredLRPUpdate, supersede bool) (*model.DesiredLRP, error) {
	if u.Definition != nil {
		st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: guid, Kind: model.RolloutKindUpdate,
			Definition: u.Definition, Update: withoutDefinition(u), Supersede: supersede, Strategy: u.Strategy})
		if err != nil {
			return nil, err
		}
		return st.Desired, nil
	}
	res, err := s.store.UpdateDesiredLRP(ctx, guid, u)
	if err != nil {
		return nil, err
	}
	s.Stop(ctx, res.ToStop)
	return res.After, nil
}

// workflowStartTimeout bounds the start of a rollout's workflow after its row committed; a
// start that fails is convergence's (activities.Resumer).
const workflowStartTimeout = 30 * time.Second

// StartRollout commits the new definition and rollout row in one transaction, then starts
// (or, superseding, signals) the workflow. Should the workflow not start — Temporal away, or
// this process dying in between — the rollout row stays active and the converger starts it.
func (s *Service) StartRollout(ctx context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	if s.workflows == nil {
		return nil, ErrNoRollouts
	}
	if req.Defaults == nil {
		req.Defaults = s.workflows.Defaults()
	}
	st, err := s.store.StartRollout(ctx, req)
	if err != nil {
		return nil, err
	}
	s.Stop(ctx, st.ToStop)
	if bg := st.Rollout.Strategy; bg != nil && bg.BreakGlass != nil {
		// Recorded on the rollout (strategy.break_glass, in get and its rollout_changed
		// event) and here, where an operator looks for who passed a freeze.
		s.log.Warn("rollout started with break_glass: it passes a freeze", zap.String("process_guid", req.ProcessGUID),
			zap.String("rollout", st.Rollout.ID), zap.String("break_glass", *bg.BreakGlass))
	}
	start := s.workflows.StartRollout
	if st.Superseded != nil {
		start = s.workflows.SupersedeRollout
	}
	// The row is committed: its workflow is started even if the caller has gone meanwhile (a
	// client that timed out while Temporal was slow), else it would wait for convergence.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), workflowStartTimeout)
	defer cancel()
	if err := start(sctx, st.Rollout, st.Desired.Domain); err != nil {
		s.log.Warn("rollout workflow not started; convergence will start it",
			zap.String("process_guid", req.ProcessGUID), zap.String("rollout", st.Rollout.ID), zap.Error(err))
	}
	return st, nil
}

// CancelUpdate signals the rollout under way for the LRP of guid to walk the instances
// already updated back to the previous definition (seed 001); NoUpdateInProgress when there
// is none.
func (s *Service) CancelUpdate(ctx context.Context, guid string) (*model.Rollout, error) {
	d, err := s.store.DesiredLRPByProcessGUID(ctx, guid)
	if err != nil {
		return nil, err
	}
	if s.workflows == nil {
		return nil, ErrNoRollouts
	}
	r, err := s.store.RolloutByProcessGUID(ctx, guid)
	if model.IsType(err, model.ErrResourceNotFound) || (err == nil && !r.InProgress()) {
		return nil, model.Errorf(model.ErrNoUpdateInProgress, "LRP %q has no update in progress", guid)
	}
	if err != nil {
		return nil, err
	}
	s.withdrawWeight(ctx, r)
	if err := s.workflows.CancelRollout(ctx, r, d.Domain); err != nil {
		return nil, model.Errorf(model.ErrUnavailable, "could not signal the rollout workflow: %v", err)
	}
	return r, nil
}

// Remove deletes the LRP of guid and stops its instances that cells hold.
func (s *Service) Remove(ctx context.Context, guid string) error {
	res, err := s.store.RemoveDesiredLRP(ctx, guid)
	if err != nil {
		return err
	}
	s.Stop(ctx, res.ToStop)
	return nil
}

// Stop hands lrps to the cells that run them (Stops.Stop).
func (s *Service) Stop(ctx context.Context, lrps []model.ActualLRP) { s.stops.Stop(ctx, lrps) }

// Stops hands the instances a change retired to the cells that run them.
type Stops struct {
	stopper Stopper // nil while no cell can run instances: stops are left to convergence
	log     *zap.Logger
}

// NewStops builds a Stops; stopper may be nil (see NewService).
func NewStops(stopper Stopper, log *zap.Logger) *Stops { return &Stops{stopper: stopper, log: log} }

// Stop hands lrps to the cells that run them. A failed stop does not fail the change: the
// records stay, and convergence stops what is still running.
func (s *Stops) Stop(ctx context.Context, lrps []model.ActualLRP) {
	if len(lrps) == 0 {
		return
	}
	if s.stopper == nil {
		for _, a := range lrps {
			s.log.Warn("no cell client configured: instance left for convergence to stop",
				zap.String("process_guid", a.ProcessGUID), zap.Int32("index", a.Index), zap.String("cell_id", a.CellID))
		}
		return
	}
	if err := s.stopper.StopInstances(ctx, lrps); err != nil {
		s.log.Warn("stopping instances", zap.Error(err))
	}
}

// withoutDefinition is u's other fields, applied with the rollout in the same transaction.
func withoutDefinition(u *model.DesiredLRPUpdate) *model.DesiredLRPUpdate {
	if u.Instances == nil && u.Routes == nil && u.Annotation == nil && u.MetricTags == nil && u.ActiveDefinition == nil &&
		u.RolloutStrategy == nil {
		return nil
	}
	c := *u
	c.Definition, c.Strategy = nil, nil
	return &c
}
