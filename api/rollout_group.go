package api

import (
	"context"

	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// RolloutGroupStore is what the rollout group routes read of the database; groups are
// created and steered through lrps.Service.
type RolloutGroupStore interface {
	RolloutGroup(ctx context.Context, id string) (*model.RolloutGroup, error)
	RolloutGroups(ctx context.Context) ([]model.RolloutGroup, error)
}

// rolloutGroupHandlers serve /v1/rollout_groups/* (ROLLOUTS-NEXT.md section 6).
type rolloutGroupHandlers struct {
	store RolloutGroupStore
	lrps  *lrps.Service
}

// createGroupRequest is create's body: the group's spec.
type createGroupRequest struct {
	model.RolloutGroupSpec
}

func (r *createGroupRequest) Validate() error { return r.RolloutGroupSpec.Validate() }

// listGroupsRequest is list's (empty) body.
type listGroupsRequest struct{}

// groupRequest names a group; Reason is an abort's.
type groupRequest struct {
	GroupID string `json:"group_id"`
	Reason  string `json:"reason,omitempty"`
}

func (r *groupRequest) Validate() error { return model.ValidateGUID("group_id", r.GroupID) }

type rolloutGroupResponse struct {
	RolloutGroup *model.RolloutGroup `json:"rollout_group"`
}

type rolloutGroupsResponse struct {
	RolloutGroups []model.RolloutGroup `json:"rollout_groups"`
}

func (h *rolloutGroupHandlers) create(ctx context.Context, req *createGroupRequest) (rolloutGroupResponse, error) {
	g, err := h.lrps.CreateGroup(ctx, req.RolloutGroupSpec)
	return rolloutGroupResponse{RolloutGroup: g}, err
}

func (h *rolloutGroupHandlers) get(ctx context.Context, req *groupRequest) (rolloutGroupResponse, error) {
	g, err := h.store.RolloutGroup(ctx, req.GroupID)
	return rolloutGroupResponse{RolloutGroup: g}, err
}

func (h *rolloutGroupHandlers) list(ctx context.Context, _ *listGroupsRequest) (rolloutGroupsResponse, error) {
	gs, err := h.store.RolloutGroups(ctx)
	return rolloutGroupsResponse{RolloutGroups: gs}, err
}

func (h *rolloutGroupHandlers) control(kind string) func(context.Context, *groupRequest) (rolloutGroupResponse, error) {
	return func(ctx context.Context, req *groupRequest) (rolloutGroupResponse, error) {
		g, err := h.lrps.ControlGroup(ctx, req.GroupID, kind, req.Reason)
		return rolloutGroupResponse{RolloutGroup: g}, err
	}
}
