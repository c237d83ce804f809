package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// RolloutStore is what the rollout routes read of the database; rollouts are started through
// lrps.Service.
type RolloutStore interface {
	Rollouts(ctx context.Context, f model.RolloutFilter) ([]model.Rollout, error)
	RolloutByProcessGUID(ctx context.Context, guid string) (*model.Rollout, error)
}

// rolloutHandlers serve the rollout routes, which read rollouts; the changes that start or
// cancel one are the desired LRP and LRP deployment routes' (through lrps.Service).
type rolloutHandlers struct {
	store RolloutStore
}

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

func (h *rolloutHandlers) listRollouts(ctx context.Context, req *rolloutFilterRequest) (rolloutsResponse, error) {
	rs, err := h.store.Rollouts(ctx, req.RolloutFilter)
	return rolloutsResponse{Rollouts: rs}, err
}

func (h *rolloutHandlers) getRollout(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	r, err := h.store.RolloutByProcessGUID(ctx, req.ProcessGUID)
	return rolloutResponse{Rollout: r}, err
}
