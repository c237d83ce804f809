package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// DesiredLRPStore is what the desired LRP routes read and write of the database directly;
// updates and removals go through lrps.Service.
type DesiredLRPStore interface {
	DesireLRP(ctx context.Context, d *model.DesiredLRP) (*model.DesiredLRP, error)
	DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error)
	EachDesiredLRP(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRP) error) error
	EachSchedulingInfo(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRPSchedulingInfo) error) error
}

// desiredLRPHandlers serve the desired LRP routes. The changes go through lrps, which starts
// rollouts for definition changes and stops the instances a scale-down or a removal retires.
type desiredLRPHandlers struct {
	store DesiredLRPStore
	lrps  *lrps.Service
}

type desireLRPRequest struct {
	DesiredLRP *model.DesiredLRP `json:"desired_lrp"`
}

func (r *desireLRPRequest) Validate() error {
	if r.DesiredLRP == nil {
		return model.Errorf(model.ErrInvalidRequest, "desired_lrp is required")
	}
	return r.DesiredLRP.Validate()
}

type processGUIDRequest struct {
	ProcessGUID string `json:"process_guid"`
}

func (r *processGUIDRequest) Validate() error {
	return model.ValidateGUID("process_guid", r.ProcessGUID)
}

type desiredLRPFilterRequest struct {
	model.DesiredLRPFilter
}

type updateDesiredLRPRequest struct {
	ProcessGUID string                  `json:"process_guid"`
	Update      *model.DesiredLRPUpdate `json:"update"`
}

func (r *updateDesiredLRPRequest) Validate() error {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	if r.Update == nil {
		return model.Errorf(model.ErrInvalidRequest, "update is required")
	}
	return r.Update.Validate()
}

// rollbackRequest is the body of a rollback and of an activation: the definition to walk
// to, and how (ROLLOUTS-NEXT.md section 1).
type rollbackRequest struct {
	ProcessGUID  string                 `json:"process_guid"`
	DefinitionID string                 `json:"definition_id"`
	Strategy     *model.RolloutStrategy `json:"strategy,omitempty"`
}

func (r *rollbackRequest) Validate() error {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	if err := model.ValidateGUID("definition_id", r.DefinitionID); err != nil {
		return err
	}
	return validateStrategy(r.Strategy)
}

// validateStrategy checks a request's own strategy, if it gives one.
func validateStrategy(s *model.RolloutStrategy) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return s.Supported()
}

type desiredLRPResponse struct {
	DesiredLRP *model.DesiredLRP `json:"desired_lrp"`
}

func (h *desiredLRPHandlers) desireLRP(ctx context.Context, req *desireLRPRequest) (desiredLRPResponse, error) {
	d, err := h.store.DesireLRP(ctx, req.DesiredLRP)
	return desiredLRPResponse{DesiredLRP: d}, err
}

func (h *desiredLRPHandlers) desiredLRPByProcessGUID(ctx context.Context, req *processGUIDRequest) (desiredLRPResponse, error) {
	d, err := h.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID)
	return desiredLRPResponse{DesiredLRP: d}, err
}

// eachDesiredLRP and eachSchedulingInfo stream the lists (handleList): every LRP of a large
// foundation, as Cloud Controller's sync reads them, without the list in memory.
func (h *desiredLRPHandlers) eachDesiredLRP(ctx context.Context, req *desiredLRPFilterRequest, yield func(*model.DesiredLRP) error) error {
	return h.store.EachDesiredLRP(ctx, req.DesiredLRPFilter, yield)
}

func (h *desiredLRPHandlers) eachSchedulingInfo(ctx context.Context, req *desiredLRPFilterRequest, yield func(*model.DesiredLRPSchedulingInfo) error) error {
	return h.store.EachSchedulingInfo(ctx, req.DesiredLRPFilter, yield)
}

// updateDesiredLRP applies the update; a definition starts a rolling update (seed 001:
// UpdateInProgress while one runs).
func (h *desiredLRPHandlers) updateDesiredLRP(ctx context.Context, req *updateDesiredLRPRequest) (desiredLRPResponse, error) {
	d, err := h.lrps.Update(ctx, req.ProcessGUID, req.Update, false)
	return desiredLRPResponse{DesiredLRP: d}, err
}

// cancelUpdate walks the updated instances back to the previous definition (seed 001).
func (h *desiredLRPHandlers) cancelUpdate(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	r, err := h.lrps.CancelUpdate(ctx, req.ProcessGUID)
	return rolloutResponse{Rollout: r}, err
}

// rollback rolls the LRP to a stored earlier definition (seed 001).
func (h *desiredLRPHandlers) rollback(ctx context.Context, req *rollbackRequest) (desiredLRPResponse, error) {
	st, err := h.lrps.StartRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindRollback,
		DefinitionID: req.DefinitionID, Strategy: req.Strategy})
	if err != nil {
		return desiredLRPResponse{}, err
	}
	return desiredLRPResponse{DesiredLRP: st.Desired}, nil
}

func (h *desiredLRPHandlers) removeDesiredLRP(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	return emptyResponse{}, h.lrps.Remove(ctx, req.ProcessGUID)
}
