package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// The lifecycle routes the cell agents call as they run instances (BBS's rep routes).

// lifecycleKey is an ActualLRPKey whose index must be given explicitly.
type lifecycleKey struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id,omitempty"`
	Index        *int32 `json:"index"`
	Domain       string `json:"domain,omitempty"`
}

func (k *lifecycleKey) validate() error {
	if k == nil {
		return model.Errorf(model.ErrInvalidRequest, "actual_lrp_key is required")
	}
	if err := model.ValidateGUID("actual_lrp_key.process_guid", k.ProcessGUID); err != nil {
		return err
	}
	if k.DefinitionID != "" {
		if err := model.ValidateGUID("actual_lrp_key.definition_id", k.DefinitionID); err != nil {
			return err
		}
	}
	return validateIndex(k.Index)
}

func (k *lifecycleKey) model() model.ActualLRPKey {
	return model.ActualLRPKey{ProcessGUID: k.ProcessGUID, DefinitionID: k.DefinitionID, Index: *k.Index, Domain: k.Domain}
}

func validateInstanceKey(ik *model.ActualLRPInstanceKey) error {
	if ik == nil || ik.InstanceGUID == "" || ik.CellID == "" {
		return model.Errorf(model.ErrInvalidRequest, "actual_lrp_instance_key needs instance_guid and cell_id")
	}
	return nil
}

type claimRequest struct {
	Key             *lifecycleKey               `json:"actual_lrp_key"`
	InstanceKey     *model.ActualLRPInstanceKey `json:"actual_lrp_instance_key"`
	ModificationTag *model.ModificationTag      `json:"modification_tag,omitempty"`
}

func (r *claimRequest) Validate() error {
	if err := r.Key.validate(); err != nil {
		return err
	}
	return validateInstanceKey(r.InstanceKey)
}

type startRequest struct {
	claimRequest
	NetInfo model.ActualLRPNetInfo `json:"actual_lrp_net_info"`
}

type crashRequest struct {
	claimRequest
	ErrorMessage string `json:"error_message"`
}

type failRequest struct {
	Key             *lifecycleKey          `json:"actual_lrp_key"`
	ErrorMessage    string                 `json:"error_message"`
	ModificationTag *model.ModificationTag `json:"modification_tag,omitempty"`
}

func (r *failRequest) Validate() error {
	if err := r.Key.validate(); err != nil {
		return err
	}
	if r.ErrorMessage == "" {
		return model.Errorf(model.ErrInvalidRequest, "error_message is required")
	}
	return nil
}

type removeRequest struct {
	Key             *lifecycleKey               `json:"actual_lrp_key"`
	InstanceKey     *model.ActualLRPInstanceKey `json:"actual_lrp_instance_key,omitempty"`
	ModificationTag *model.ModificationTag      `json:"modification_tag,omitempty"`
}

func (r *removeRequest) Validate() error {
	if err := r.Key.validate(); err != nil {
		return err
	}
	if r.InstanceKey != nil {
		return validateInstanceKey(r.InstanceKey)
	}
	return nil
}

type actualLRPResponse struct {
	ActualLRP *model.ActualLRP `json:"actual_lrp"`
}

func (s *Server) claimActualLRP(ctx context.Context, req *claimRequest) (actualLRPResponse, error) {
	a, err := s.store.ClaimActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (s *Server) startActualLRP(ctx context.Context, req *startRequest) (actualLRPResponse, error) {
	a, err := s.store.StartActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.NetInfo, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (s *Server) crashActualLRP(ctx context.Context, req *crashRequest) (actualLRPResponse, error) {
	a, err := s.store.CrashActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.ErrorMessage, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (s *Server) failActualLRP(ctx context.Context, req *failRequest) (actualLRPResponse, error) {
	a, err := s.store.FailActualLRP(ctx, req.Key.model(), req.ErrorMessage, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (s *Server) removeActualLRP(ctx context.Context, req *removeRequest) (emptyResponse, error) {
	return emptyResponse{}, s.store.RemoveActualLRP(ctx, req.Key.model(), model.PresenceOrdinary, req.InstanceKey, req.ModificationTag)
}

type keepContainerResponse struct {
	KeepContainer bool `json:"keep_container"`
}

func (s *Server) unclaimActualLRP(ctx context.Context, req *claimRequest) (actualLRPResponse, error) {
	a, err := s.store.UnclaimActualLRP(ctx, req.Key.model(), *req.InstanceKey)
	return actualLRPResponse{ActualLRP: a}, err
}

func (s *Server) evacuateRunningActualLRP(ctx context.Context, req *startRequest) (keepContainerResponse, error) {
	keep, err := s.store.EvacuateRunningActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.NetInfo)
	return keepContainerResponse{KeepContainer: keep}, err
}

func (s *Server) removeEvacuatingActualLRP(ctx context.Context, req *claimRequest) (emptyResponse, error) {
	return emptyResponse{}, s.store.RemoveEvacuatingActualLRP(ctx, req.Key.model(), *req.InstanceKey)
}
