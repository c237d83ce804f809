package api

import (
	"context"

	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// ActualLRPStore is what the instance routes of API clients need of the database: reading
// instances (retiring one goes through lrps.Service).
type ActualLRPStore interface {
	ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error)
	EachActualLRP(ctx context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error
	ActualLRPGroupByProcessGUIDAndIndex(ctx context.Context, guid string, index int32) (*model.ActualLRPGroup, error)
}

// actualLRPHandlers serve the instance routes of API clients; the cells' own are
// lifecycleHandlers.
type actualLRPHandlers struct {
	store ActualLRPStore
	lrps  *lrps.Service // retires instances as the BBS protocol does
}

type actualLRPFilterRequest struct {
	model.ActualLRPFilter
}

type actualLRPGroupsFilterRequest struct {
	Domain string `json:"domain,omitempty"`
	CellID string `json:"cell_id,omitempty"`
}

type actualLRPGroupByIndexRequest struct {
	ProcessGUID string `json:"process_guid"`
	Index       *int32 `json:"index"`
}

func (r *actualLRPGroupByIndexRequest) Validate() error {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	return validateIndex(r.Index)
}

type retireRequest struct {
	Key *retireKey `json:"actual_lrp_key"`
}

// retireKey is an ActualLRPKey whose index must be given explicitly.
type retireKey struct {
	ProcessGUID  string `json:"process_guid"`
	Index        *int32 `json:"index"`
	Domain       string `json:"domain"`
	DefinitionID string `json:"definition_id,omitempty"`
}

func (r *retireRequest) Validate() error {
	if r.Key == nil {
		return model.Errorf(model.ErrInvalidRequest, "actual_lrp_key is required")
	}
	if err := model.ValidateGUID("actual_lrp_key.process_guid", r.Key.ProcessGUID); err != nil {
		return err
	}
	if r.Key.DefinitionID != "" {
		if err := model.ValidateGUID("actual_lrp_key.definition_id", r.Key.DefinitionID); err != nil {
			return err
		}
	}
	return validateIndex(r.Key.Index)
}

func validateIndex(i *int32) error {
	if i == nil {
		return model.Errorf(model.ErrInvalidRequest, "index is required")
	}
	if *i < 0 {
		return model.Errorf(model.ErrInvalidRequest, "index must be >= 0")
	}
	return nil
}

type actualLRPGroupsResponse struct {
	Groups []model.ActualLRPGroup `json:"actual_lrp_groups"`
}

type actualLRPGroupResponse struct {
	Group *model.ActualLRPGroup `json:"actual_lrp_group"`
}

func (h *actualLRPHandlers) eachActualLRP(ctx context.Context, req *actualLRPFilterRequest, yield func(*model.ActualLRP) error) error {
	return h.store.EachActualLRP(ctx, req.ActualLRPFilter, yield)
}

func (h *actualLRPHandlers) eachActualLRPGroup(ctx context.Context, req *actualLRPGroupsFilterRequest, yield func(*model.ActualLRPGroup) error) error {
	return model.EachActualLRPGroup(func(fn func(*model.ActualLRP) error) error {
		return h.store.EachActualLRP(ctx, model.ActualLRPFilter{Domain: req.Domain, CellID: req.CellID}, fn)
	}, yield)
}

func (h *actualLRPHandlers) listActualLRPGroupsByProcessGUID(ctx context.Context, req *processGUIDRequest) (actualLRPGroupsResponse, error) {
	return h.groups(ctx, model.ActualLRPFilter{ProcessGUID: req.ProcessGUID})
}

func (h *actualLRPHandlers) groups(ctx context.Context, f model.ActualLRPFilter) (actualLRPGroupsResponse, error) {
	lrps, err := h.store.ActualLRPs(ctx, f)
	if err != nil {
		return actualLRPGroupsResponse{}, err
	}
	groups := model.GroupActualLRPs(lrps)
	if groups == nil {
		groups = []model.ActualLRPGroup{}
	}
	return actualLRPGroupsResponse{Groups: groups}, nil
}

func (h *actualLRPHandlers) actualLRPGroupByProcessGUIDAndIndex(ctx context.Context, req *actualLRPGroupByIndexRequest) (actualLRPGroupResponse, error) {
	g, err := h.store.ActualLRPGroupByProcessGUIDAndIndex(ctx, req.ProcessGUID, *req.Index)
	return actualLRPGroupResponse{Group: g}, err
}

func (h *actualLRPHandlers) retireActualLRP(ctx context.Context, req *retireRequest) (emptyResponse, error) {
	return emptyResponse{}, h.lrps.Retire(ctx, model.ActualLRPKey{
		ProcessGUID: req.Key.ProcessGUID, DefinitionID: req.Key.DefinitionID,
		Index: *req.Key.Index, Domain: req.Key.Domain,
	})
}
