package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"

	"github.com/updatable-lrps/bbs/model"
)

type createLRPDeploymentRequest struct {
	model.LRPDeploymentCreate
	desired *model.DesiredLRP
}

func (r *createLRPDeploymentRequest) Validate() (err error) {
	r.desired, err = r.LRPDeploymentCreate.DesiredLRP()
	return err
}

type updateLRPDeploymentRequest struct {
	ProcessGUID string                     `json:"process_guid"`
	Update      *model.LRPDeploymentUpdate `json:"update"`
	update      *model.DesiredLRPUpdate
}

func (r *updateLRPDeploymentRequest) Validate() (err error) {
	if err := model.ValidateGUID("process_guid", r.ProcessGUID); err != nil {
		return err
	}
	if r.Update == nil {
		return model.Errorf(model.ErrInvalidRequest, "update is required")
	}
	r.update, err = r.Update.DesiredLRPUpdate()
	return err
}

type lrpDeploymentResponse struct {
	LRPDeployment *model.LRPDeployment `json:"lrp_deployment"`
}

type lrpDeploymentsResponse struct {
	LRPDeployments []model.LRPDeployment `json:"lrp_deployments"`
}

func (s *Server) createLRPDeployment(ctx context.Context, req *createLRPDeploymentRequest) (lrpDeploymentResponse, error) {
	if _, err := s.store.DesireLRP(ctx, req.desired); err != nil {
		return lrpDeploymentResponse{}, err
	}
	dep, err := s.store.LRPDeploymentByProcessGUID(ctx, req.desired.ProcessGUID)
	return lrpDeploymentResponse{LRPDeployment: dep}, err
}

func (s *Server) updateLRPDeployment(ctx context.Context, req *updateLRPDeploymentRequest) (lrpDeploymentResponse, error) {
	if req.update.Definition != nil {
		// Seed 000: a new definition during a rollout supersedes it.
		if _, err := s.startRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindUpdate,
			Definition: req.update.Definition, Update: withoutDefinition(req.update), Supersede: true}); err != nil {
			return lrpDeploymentResponse{}, err
		}
		dep, err := s.store.LRPDeploymentByProcessGUID(ctx, req.ProcessGUID)
		return lrpDeploymentResponse{LRPDeployment: dep}, err
	}
	res, err := s.store.UpdateDesiredLRP(ctx, req.ProcessGUID, req.update)
	if err != nil {
		return lrpDeploymentResponse{}, err
	}
	s.stop(ctx, res.ToStop)
	dep, err := s.store.LRPDeploymentByProcessGUID(ctx, req.ProcessGUID)
	return lrpDeploymentResponse{LRPDeployment: dep}, err
}

// activateLRPDeployment walks the LRP to a definition of its map (seed 000).
func (s *Server) activateLRPDeployment(ctx context.Context, req *rollbackRequest) (lrpDeploymentResponse, error) {
	if _, err := s.startRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindActivate,
		DefinitionID: req.DefinitionID, Supersede: true}); err != nil {
		return lrpDeploymentResponse{}, err
	}
	dep, err := s.store.LRPDeploymentByProcessGUID(ctx, req.ProcessGUID)
	return lrpDeploymentResponse{LRPDeployment: dep}, err
}

func (s *Server) deleteLRPDeployment(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	return s.removeDesiredLRP(ctx, req)
}

func (s *Server) lrpDeploymentByProcessGUID(ctx context.Context, req *processGUIDRequest) (lrpDeploymentResponse, error) {
	dep, err := s.store.LRPDeploymentByProcessGUID(ctx, req.ProcessGUID)
	return lrpDeploymentResponse{LRPDeployment: dep}, err
}

func (s *Server) listLRPDeployments(ctx context.Context, req *desiredLRPFilterRequest) (lrpDeploymentsResponse, error) {
	deps, err := s.store.LRPDeployments(ctx, req.DesiredLRPFilter)
	return lrpDeploymentsResponse{LRPDeployments: deps}, err
}
