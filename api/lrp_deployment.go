package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// LRPDeploymentStore is what the LRP deployment routes need of the database to read
// deployments; they change them through the desired LRP and rollout operations.
type LRPDeploymentStore interface {
	LRPDeploymentByProcessGUID(ctx context.Context, guid string) (*model.LRPDeployment, error)
	LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error)
}

// lrpDeploymentHandlers serve the LRP deployment routes: a deployment is a desired LRP seen
// with its map of definitions, so it is created, updated and deleted as one, and read back.
type lrpDeploymentHandlers struct {
	store   LRPDeploymentStore
	desired DesiredLRPStore
	lrps    *lrps.Service
}

type createLRPDeploymentRequest struct {
	model.LRPDeploymentCreate
	desired *model.DesiredLRP
}

func (r *createLRPDeploymentRequest) Validate() (err error) {
	r.desired, err = r.LRPDeploymentCreate.DesiredLRP()
	return err
}

// updateLRPDeploymentRequest is an update of seed 000's shape, with the strategy of its
// rollout and the LRP's default strategy beside it at the top level (ROLLOUTS-NEXT.md
// section 1).
type updateLRPDeploymentRequest struct {
	ProcessGUID     string                     `json:"process_guid"`
	Update          *model.LRPDeploymentUpdate `json:"update"`
	Strategy        *model.RolloutStrategy     `json:"strategy,omitempty"`
	RolloutStrategy *model.RolloutStrategy     `json:"rollout_strategy,omitempty"`
	update          *model.DesiredLRPUpdate
}

func (r *updateLRPDeploymentRequest) Validate() (err error) {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	if r.Update == nil {
		return model.Errorf(model.ErrInvalidRequest, "update is required")
	}
	if r.update, err = r.Update.DesiredLRPUpdate(); err != nil {
		return err
	}
	r.update.Strategy, r.update.RolloutStrategy = r.Strategy, r.RolloutStrategy
	return r.update.Validate()
}

type lrpDeploymentResponse struct {
	LRPDeployment *model.LRPDeployment `json:"lrp_deployment"`
}

type lrpDeploymentsResponse struct {
	LRPDeployments []model.LRPDeployment `json:"lrp_deployments"`
}

func (h *lrpDeploymentHandlers) createLRPDeployment(ctx context.Context, req *createLRPDeploymentRequest) (lrpDeploymentResponse, error) {
	if _, err := h.desired.DesireLRP(ctx, req.desired); err != nil {
		return lrpDeploymentResponse{}, err
	}
	return h.get(ctx, req.desired.ProcessGUID)
}

// updateLRPDeployment changes the LRP; a new definition supersedes a rollout under way
// (seed 000).
func (h *lrpDeploymentHandlers) updateLRPDeployment(ctx context.Context, req *updateLRPDeploymentRequest) (lrpDeploymentResponse, error) {
	if _, err := h.lrps.Update(ctx, req.ProcessGUID, req.update, true); err != nil {
		return lrpDeploymentResponse{}, err
	}
	return h.get(ctx, req.ProcessGUID)
}

// activateLRPDeployment walks the LRP to a definition of its map (seed 000).
func (h *lrpDeploymentHandlers) activateLRPDeployment(ctx context.Context, req *rollbackRequest) (lrpDeploymentResponse, error) {
	if _, err := h.lrps.StartRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindActivate,
		DefinitionID: req.DefinitionID, Supersede: true, Strategy: req.Strategy}); err != nil {
		return lrpDeploymentResponse{}, err
	}
	return h.get(ctx, req.ProcessGUID)
}

func (h *lrpDeploymentHandlers) deleteLRPDeployment(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	return emptyResponse{}, h.lrps.Remove(ctx, req.ProcessGUID)
}

func (h *lrpDeploymentHandlers) lrpDeploymentByProcessGUID(ctx context.Context, req *processGUIDRequest) (lrpDeploymentResponse, error) {
	return h.get(ctx, req.ProcessGUID)
}

func (h *lrpDeploymentHandlers) listLRPDeployments(ctx context.Context, req *desiredLRPFilterRequest) (lrpDeploymentsResponse, error) {
	deps, err := h.store.LRPDeployments(ctx, req.DesiredLRPFilter)
	return lrpDeploymentsResponse{LRPDeployments: deps}, err
}

// get reads the deployment of guid, as each change answers.
func (h *lrpDeploymentHandlers) get(ctx context.Context, guid string) (lrpDeploymentResponse, error) {
	dep, err := h.store.LRPDeploymentByProcessGUID(ctx, guid)
	return lrpDeploymentResponse{LRPDeployment: dep}, err
}
