package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

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

func (s *Server) desireLRP(ctx context.Context, req *desireLRPRequest) (desiredLRPResponse, error) {
	d, err := s.store.DesireLRP(ctx, req.DesiredLRP)
	return desiredLRPResponse{DesiredLRP: d}, err
}

func (s *Server) desiredLRPByProcessGUID(ctx context.Context, req *processGUIDRequest) (desiredLRPResponse, error) {
	d, err := s.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID)
	return desiredLRPResponse{DesiredLRP: d}, err
}

func (s *Server) listDesiredLRPs(ctx context.Context, req *desiredLRPFilterRequest) (desiredLRPsResponse, error) {
	lrps, err := s.store.DesiredLRPs(ctx, req.DesiredLRPFilter)
	return desiredLRPsResponse{DesiredLRPs: lrps}, err
}

func (s *Server) listSchedulingInfos(ctx context.Context, req *desiredLRPFilterRequest) (schedulingInfosResponse, error) {
	infos, err := s.store.DesiredLRPSchedulingInfos(ctx, req.DesiredLRPFilter)
	return schedulingInfosResponse{SchedulingInfos: infos}, err
}

func (s *Server) updateDesiredLRP(ctx context.Context, req *updateDesiredLRPRequest) (desiredLRPResponse, error) {
	if req.Update.Definition != nil {
		if _, err := s.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID); err != nil {
			return desiredLRPResponse{}, err
		}
		return desiredLRPResponse{}, errRolloutsNotImplemented
	}
	res, err := s.store.UpdateDesiredLRP(ctx, req.ProcessGUID, req.Update)
	if err != nil {
		return desiredLRPResponse{}, err
	}
	s.stop(ctx, res.ToStop)
	return desiredLRPResponse{DesiredLRP: res.After}, nil
}

func (s *Server) cancelUpdate(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	if _, err := s.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID); err != nil {
		return emptyResponse{}, err
	}
	return emptyResponse{}, errRolloutsNotImplemented
}

func (s *Server) rollback(ctx context.Context, req *rollbackRequest) (emptyResponse, error) {
	if _, err := s.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID); err != nil {
		return emptyResponse{}, err
	}
	return emptyResponse{}, errRolloutsNotImplemented
}

func (s *Server) removeDesiredLRP(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	res, err := s.store.RemoveDesiredLRP(ctx, req.ProcessGUID)
	if err != nil {
		return emptyResponse{}, err
	}
	s.stop(ctx, res.ToStop)
	return emptyResponse{}, nil
}

// errRolloutsNotImplemented answers the routes that need the rollout workflow until it lands.
var errRolloutsNotImplemented = model.Errorf(model.ErrNotImplemented,
	"definition updates, cancel and rollback run as rollout workflows, which this build does not have yet")
