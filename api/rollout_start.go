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
// Unavailable.
func (s *Server) WithRollouts(r Rollouts) *Server {
	s.rollouts = r
	return s
}

var errNoRollouts = model.Errorf(model.ErrUnavailable, "this API server has no connection to Temporal, which runs rollouts")

// startRollout commits the new definition and rollout row in one transaction, then starts
// (or, superseding, signals) the workflow. Should the workflow not start — Temporal away, or
// this process dying in between — the rollout row stays active and the converger starts it.
func (s *Server) startRollout(ctx context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	if s.rollouts == nil {
		return nil, errNoRollouts
	}
	st, err := s.store.StartRollout(ctx, req)
	if err != nil {
		return nil, err
	}
	s.stop(ctx, st.ToStop)
	start := s.rollouts.StartRollout
	if st.Superseded != nil {
		start = s.rollouts.SupersedeRollout
	}
	if err := start(ctx, st.Rollout, st.Desired.Domain); err != nil {
		s.log.Warn("rollout workflow not started; convergence will start it",
			zap.String("process_guid", req.ProcessGUID), zap.String("rollout", st.Rollout.ID), zap.Error(err))
	}
	return st, nil
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
