package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Rollouts starts and steers the rollout workflows (one per LRP). Each call is idempotent:
// starting a running workflow, or signalling one that has not started yet, both work.
type Rollouts interface {
	StartRollout(ctx context.Context, r *model.Rollout, domain string) error
	SupersedeRollout(ctx context.Context, r *model.Rollout, domain string) error
	CancelRollout(ctx context.Context, r *model.Rollout, domain string) error
}

// WithRollouts lets the server start rollouts; without it the rollout routes answer
// Unavailable. Call it before serving.
func (s *Server) WithRollouts(r Rollouts) *Server {
	s.rollouts.workflows = r
	return s
}

var errNoRollouts = model.Errorf(model.ErrUnavailable, "this API server has no connection to Temporal, which runs rollouts")

// rolloutHandlers serve the rollout routes, and start and cancel rollouts for the desired
// LRP and LRP deployment routes that change definitions.
type rolloutHandlers struct {
	store     RolloutStore
	workflows Rollouts // nil: no Temporal, rollouts answer Unavailable
	stopper   *instanceStopper
	log       *zap.Logger
}

// start commits the new definition and rollout row in one transaction, then starts (or,
// superseding, signals) the workflow. Should the workflow not start — Temporal away, or this
// process dying in between — the rollout row stays active and the converger starts it.
func (h *rolloutHandlers) start(ctx context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	if h.workflows == nil {
		return nil, errNoRollouts
	}
	st, err := h.store.StartRollout(ctx, req)
	if err != nil {
		return nil, err
	}
	h.stopper.stop(ctx, st.ToStop)
	start := h.workflows.StartRollout
	if st.Superseded != nil {
		start = h.workflows.SupersedeRollout
	}
	if err := start(ctx, st.Rollout, st.Desired.Domain); err != nil {
		h.log.Warn("rollout workflow not started; convergence will start it",
			zap.String("process_guid", req.ProcessGUID), zap.String("rollout", st.Rollout.ID), zap.Error(err))
	}
	return st, nil
}

// cancel signals the rollout under way for the LRP of guid (in domain) to walk back
// (seed 001); NoUpdateInProgress when there is none.
func (h *rolloutHandlers) cancel(ctx context.Context, guid, domain string) (*model.Rollout, error) {
	if h.workflows == nil {
		return nil, errNoRollouts
	}
	r, err := h.store.RolloutByProcessGUID(ctx, guid)
	if model.IsType(err, model.ErrResourceNotFound) || (err == nil && !r.InProgress()) {
		return nil, model.Errorf(model.ErrNoUpdateInProgress, "LRP %q has no update in progress", guid)
	}
	if err != nil {
		return nil, err
	}
	if err := h.workflows.CancelRollout(ctx, r, domain); err != nil {
		return nil, model.Errorf(model.ErrUnavailable, "could not signal the rollout workflow: %v", err)
	}
	return r, nil
}

// withoutDefinition is u's other fields, applied with the rollout in the same transaction.
func withoutDefinition(u *model.DesiredLRPUpdate) *model.DesiredLRPUpdate {
	if u.Instances == nil && u.Routes == nil && u.Annotation == nil && u.MetricTags == nil {
		return nil
	}
	c := *u
	c.Definition = nil
	return &c
}
