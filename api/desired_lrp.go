package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// DesiredLRPStore is what the desired LRP routes need of the database.
type DesiredLRPStore interface {
	DesireLRP(ctx context.Context, d *model.DesiredLRP) (*model.DesiredLRP, error)
	DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error)
	DesiredLRPs(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRP, error)
	DesiredLRPSchedulingInfos(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRPSchedulingInfo, error)
	UpdateDesiredLRP(ctx context.Context, guid string, u *model.DesiredLRPUpdate) (*db.UpdateResult, error)
	RemoveDesiredLRP(ctx context.Context, guid string) (*db.RemoveResult, error)
}

// desiredLRPHandlers serve the desired LRP routes. A definition change goes through
// rollouts; scaling down and removing hand the instances to stop to the stopper.
type desiredLRPHandlers struct {
	store    DesiredLRPStore
	rollouts *rolloutHandlers
	stopper  *instanceStopper
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

type rollbackRequest struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
}

func (r *rollbackRequest) Validate() error {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	return model.ValidateGUID("definition_id", r.DefinitionID)
}

type desiredLRPResponse struct {
	DesiredLRP *model.DesiredLRP `json:"desired_lrp"`
}

type desiredLRPsResponse struct {
	DesiredLRPs []model.DesiredLRP `json:"desired_lrps"`
}

type schedulingInfosResponse struct {
	SchedulingInfos []model.DesiredLRPSchedulingInfo `json:"desired_lrp_scheduling_infos"`
}

func (h *desiredLRPHandlers) desireLRP(ctx context.Context, req *desireLRPRequest) (desiredLRPResponse, error) {
	d, err := h.store.DesireLRP(ctx, req.DesiredLRP)
	return desiredLRPResponse{DesiredLRP: d}, err
}

func (h *desiredLRPHandlers) desiredLRPByProcessGUID(ctx context.Context, req *processGUIDRequest) (desiredLRPResponse, error) {
	d, err := h.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID)
	return desiredLRPResponse{DesiredLRP: d}, err
}

func (h *desiredLRPHandlers) listDesiredLRPs(ctx context.Context, req *desiredLRPFilterRequest) (desiredLRPsResponse, error) {
	lrps, err := h.store.DesiredLRPs(ctx, req.DesiredLRPFilter)
	return desiredLRPsResponse{DesiredLRPs: lrps}, err
}

func (h *desiredLRPHandlers) listSchedulingInfos(ctx context.Context, req *desiredLRPFilterRequest) (schedulingInfosResponse, error) {
	infos, err := h.store.DesiredLRPSchedulingInfos(ctx, req.DesiredLRPFilter)
	return schedulingInfosResponse{SchedulingInfos: infos}, err
}

func (h *desiredLRPHandlers) updateDesiredLRP(ctx context.Context, req *updateDesiredLRPRequest) (desiredLRPResponse, error) {
	d, err := h.update(ctx, req.ProcessGUID, req.Update, false)
	return desiredLRPResponse{DesiredLRP: d}, err
}

// update applies u to the LRP of guid and returns it as changed. Seed 001: a definition
// update starts a rolling update (UpdateInProgress if one runs, unless supersede); any other
// change is made at once, and the instances a scale-down retires are stopped.
func (h *desiredLRPHandlers) update(ctx context.Context, guid string, u *model.DesiredLRPUpdate, supersede bool) (*model.DesiredLRP, error) {
	if u.Definition != nil {
		st, err := h.rollouts.start(ctx, db.RolloutRequest{ProcessGUID: guid, Kind: model.RolloutKindUpdate,
			Definition: u.Definition, Update: withoutDefinition(u), Supersede: supersede})
		if err != nil {
			return nil, err
		}
		return st.Desired, nil
	}
	res, err := h.store.UpdateDesiredLRP(ctx, guid, u)
	if err != nil {
		return nil, err
	}
	h.stopper.stop(ctx, res.ToStop)
	return res.After, nil
}

// cancelUpdate walks the updated instances back to the previous definition (seed 001).
func (h *desiredLRPHandlers) cancelUpdate(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	d, err := h.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID)
	if err != nil {
		return rolloutResponse{}, err
	}
	r, err := h.rollouts.cancel(ctx, req.ProcessGUID, d.Domain)
	return rolloutResponse{Rollout: r}, err
}

// rollback rolls the LRP to a stored earlier definition (seed 001).
func (h *desiredLRPHandlers) rollback(ctx context.Context, req *rollbackRequest) (desiredLRPResponse, error) {
	st, err := h.rollouts.start(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindRollback,
		DefinitionID: req.DefinitionID})
	if err != nil {
		return desiredLRPResponse{}, err
	}
	return desiredLRPResponse{DesiredLRP: st.Desired}, nil
}

func (h *desiredLRPHandlers) removeDesiredLRP(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	return emptyResponse{}, h.remove(ctx, req.ProcessGUID)
}

// remove deletes the LRP of guid and stops its instances that cells hold.
func (h *desiredLRPHandlers) remove(ctx context.Context, guid string) error {
	res, err := h.store.RemoveDesiredLRP(ctx, guid)
	if err != nil {
		return err
	}
	h.stopper.stop(ctx, res.ToStop)
	return nil
}
