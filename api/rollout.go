package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

type rolloutFilterRequest struct {
	model.RolloutFilter
}

func (r *rolloutFilterRequest) Validate() error {
	if r.ProcessGUID == "" {
		return nil
	}
	return model.ValidateGUID("process_guid", r.ProcessGUID)
}

type rolloutsResponse struct {
	Rollouts []model.Rollout `json:"rollouts"`
}

type rolloutResponse struct {
	Rollout *model.Rollout `json:"rollout"`
}

func (s *Server) listRollouts(ctx context.Context, req *rolloutFilterRequest) (rolloutsResponse, error) {
	rs, err := s.store.Rollouts(ctx, req.RolloutFilter)
	return rolloutsResponse{Rollouts: rs}, err
}

func (s *Server) getRollout(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	r, err := s.store.RolloutByProcessGUID(ctx, req.ProcessGUID)
	return rolloutResponse{Rollout: r}, err
}
