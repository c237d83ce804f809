package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"

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
		// Seed 001: a definition update starts a rolling update; UpdateInProgress if one runs.
		st, err := s.startRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindUpdate,
			Definition: req.Update.Definition, Update: withoutDefinition(req.Update)})
		if err != nil {
			return desiredLRPResponse{}, err
		}
		return desiredLRPResponse{DesiredLRP: st.Desired}, nil
	}
	res, err := s.store.UpdateDesiredLRP(ctx, req.ProcessGUID, req.Update)
	if err != nil {
		return desiredLRPResponse{}, err
	}
	s.stop(ctx, res.ToStop)
	return desiredLRPResponse{DesiredLRP: res.After}, nil
}

// cancelUpdate walks the updated instances back to the previous definition (seed 001).
func (s *Server) cancelUpdate(ctx context.Context, req *processGUIDRequest) (rolloutResponse, error) {
	d, err := s.store.DesiredLRPByProcessGUID(ctx, req.ProcessGUID)
	if err != nil {
		return rolloutResponse{}, err
	}
	if s.rollouts == nil {
		return rolloutResponse{}, errNoRollouts
	}
	r, err := s.store.RolloutByProcessGUID(ctx, req.ProcessGUID)
	if model.IsType(err, model.ErrResourceNotFound) || (err == nil && !r.InProgress()) {
		return rolloutResponse{}, model.Errorf(model.ErrNoUpdateInProgress, "LRP %q has no update in progress", req.ProcessGUID)
	}
	if err != nil {
		return rolloutResponse{}, err
	}
	if err := s.rollouts.CancelRollout(ctx, r, d.Domain); err != nil {
		return rolloutResponse{}, model.Errorf(model.ErrUnavailable, "could not signal the rollout workflow: %v", err)
	}
	return rolloutResponse{Rollout: r}, nil
}

// rollback rolls the LRP to a stored earlier definition (seed 001).
func (s *Server) rollback(ctx context.Context, req *rollbackRequest) (desiredLRPResponse, error) {
	st, err := s.startRollout(ctx, db.RolloutRequest{ProcessGUID: req.ProcessGUID, Kind: model.RolloutKindRollback,
		DefinitionID: req.DefinitionID})
	if err != nil {
		return desiredLRPResponse{}, err
	}
	return desiredLRPResponse{DesiredLRP: st.Desired}, nil
}

func (s *Server) removeDesiredLRP(ctx context.Context, req *processGUIDRequest) (emptyResponse, error) {
	res, err := s.store.RemoveDesiredLRP(ctx, req.ProcessGUID)
	if err != nil {
		return emptyResponse{}, err
	}
	s.stop(ctx, res.ToStop)
	return emptyResponse{}, nil
}
