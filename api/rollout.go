package api

import (
	"context"

	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// RolloutStore is what the rollout routes read of the database; rollouts are started through
// lrps.Service.
type RolloutStore interface {
	Rollouts(ctx context.Context, f model.RolloutFilter) ([]model.Rollout, error)
	RolloutByProcessGUID(ctx context.Context, guid string) (*model.Rollout, error)
}

// rolloutHandlers serve the rollout routes: they read rollouts and steer the one under way
// (ROLLOUTS-NEXT.md section 3, through lrps.Service); the changes that start or cancel one
// are the desired LRP and LRP deployment routes'.
type rolloutHandlers struct {
	store RolloutStore
	lrps  *lrps.Service
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

// setPaceRequest is set_pace's body.
type setPaceRequest struct {
	ProcessGUID string `json:"process_guid"`
	MaxInFlight *int32 `json:"max_in_flight"`
}

func (r *setPaceRequest) Validate() error {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	if r.MaxInFlight == nil {
		return model.Errorf(model.ErrInvalidRequest, "max_in_flight is required")
	}
	return nil // its range is lrps.Service.SetPace's, for both edges
}

// abortRequest is abort's body.
type abortRequest struct {
	ProcessGUID string `json:"process_guid"`
	Reason      string `json:"reason"`
}

func (r *abortRequest) Validate() error {
	return model.ValidateGUID("process_guid", r.ProcessGUID) // the reason's bound is lrps.Service.Abort's
}

// promoteRequest is promote's body.
type promoteRequest struct {
	ProcessGUID string `json:"process_guid"`
	Full        bool   `json:"full"`
}

func (r *promoteRequest) Validate() error {
	return model.ValidateGUID("process_guid", r.ProcessGUID)
}

func (h *rolloutHandlers) pause(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	r, err := h.lrps.Pause(ctx, req.ProcessGUID)
	return rolloutResponse{Rollout: r}, err
}

func (h *rolloutHandlers) resume(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	r, err := h.lrps.Resume(ctx, req.ProcessGUID)
	return rolloutResponse{Rollout: r}, err
}

func (h *rolloutHandlers) abort(ctx context.Context, req *abortRequest) (rolloutResponse, error) {
	r, err := h.lrps.Abort(ctx, req.ProcessGUID, req.Reason)
	return rolloutResponse{Rollout: r}, err
}

func (h *rolloutHandlers) setPace(ctx context.Context, req *setPaceRequest) (rolloutResponse, error) {
	r, err := h.lrps.SetPace(ctx, req.ProcessGUID, *req.MaxInFlight)
	return rolloutResponse{Rollout: r}, err
}

func (h *rolloutHandlers) promote(ctx context.Context, req *promoteRequest) (rolloutResponse, error) {
	r, err := h.lrps.Promote(ctx, req.ProcessGUID, req.Full)
	return rolloutResponse{Rollout: r}, err
}
