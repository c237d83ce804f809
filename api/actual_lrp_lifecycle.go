package api

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// LifecycleStore is what the lifecycle routes need of the database: the compare-and-swap
// transitions the cell agents report as they run instances (BBS's rep routes), one at a
// time or in batches.
type LifecycleStore interface {
	ClaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, tag *model.ModificationTag) (*model.ActualLRP, error)
	StartReported(ctx context.Context, r db.InstanceReport, tag *model.ModificationTag) (*model.ActualLRP, error)
	ClaimActualLRPs(ctx context.Context, reports []db.InstanceReport) ([]db.BatchResult, error)
	StartActualLRPs(ctx context.Context, reports []db.InstanceReport) ([]db.BatchResult, error)
	CrashActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, reason string, tag *model.ModificationTag) (*model.ActualLRP, error)
	FailActualLRP(ctx context.Context, key model.ActualLRPKey, placementError string, tag *model.ModificationTag) (*model.ActualLRP, error)
	RemoveActualLRP(ctx context.Context, key model.ActualLRPKey, presence string, ik *model.ActualLRPInstanceKey, tag *model.ModificationTag) error
	UnclaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error)
	ClaimStop(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (stop bool, err error)
}

// lifecycleHandlers serve the lifecycle routes. A batch answers each instance's error
// apart, so they log those as writeError does.
type lifecycleHandlers struct {
	store LifecycleStore
	log   *zap.Logger
}

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
	// Routable false says the instance's readiness checks do not pass (yet), as BBS's start
	// request says it; absent means routable.
	Routable *bool `json:"routable,omitempty"`
}

// report is the start as the store takes it.
func (r *startRequest) report() db.InstanceReport {
	return db.InstanceReport{Key: r.Key.model(), InstanceKey: *r.InstanceKey, NetInfo: r.NetInfo,
		NotReady: r.Routable != nil && !*r.Routable}
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

// claimStopRequest is a cell's claim of the stop of a retiring instance it holds, its drain
// over (db.Store.ClaimStop).
type claimStopRequest struct {
	Key         *lifecycleKey               `json:"actual_lrp_key"`
	InstanceKey *model.ActualLRPInstanceKey `json:"actual_lrp_instance_key"`
}

func (r *claimStopRequest) Validate() error {
	if err := r.Key.validate(); err != nil {
		return err
	}
	if r.InstanceKey == nil {
		return model.Errorf(model.ErrInvalidRequest, "actual_lrp_instance_key is required")
	}
	return validateInstanceKey(r.InstanceKey)
}

// claimStopResponse says whether the cell stops the instance (false: its retirement was
// withdrawn, it serves on).
type claimStopResponse struct {
	Stop bool `json:"stop"`
}

func (h *lifecycleHandlers) claimStop(ctx context.Context, req *claimStopRequest) (claimStopResponse, error) {
	stop, err := h.store.ClaimStop(ctx, req.Key.model(), *req.InstanceKey)
	return claimStopResponse{Stop: stop}, err
}

type actualLRPResponse struct {
	ActualLRP *model.ActualLRP `json:"actual_lrp"`
}

func (h *lifecycleHandlers) claimActualLRP(ctx context.Context, req *claimRequest) (actualLRPResponse, error) {
	a, err := h.store.ClaimActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (h *lifecycleHandlers) startActualLRP(ctx context.Context, req *startRequest) (actualLRPResponse, error) {
	a, err := h.store.StartReported(ctx, req.report(), req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (h *lifecycleHandlers) crashActualLRP(ctx context.Context, req *crashRequest) (actualLRPResponse, error) {
	a, err := h.store.CrashActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.ErrorMessage, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (h *lifecycleHandlers) failActualLRP(ctx context.Context, req *failRequest) (actualLRPResponse, error) {
	a, err := h.store.FailActualLRP(ctx, req.Key.model(), req.ErrorMessage, req.ModificationTag)
	return actualLRPResponse{ActualLRP: a}, err
}

func (h *lifecycleHandlers) removeActualLRP(ctx context.Context, req *removeRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.RemoveActualLRP(ctx, req.Key.model(), model.PresenceOrdinary, req.InstanceKey, req.ModificationTag)
}

func (h *lifecycleHandlers) unclaimActualLRP(ctx context.Context, req *claimRequest) (actualLRPResponse, error) {
	a, err := h.store.UnclaimActualLRP(ctx, req.Key.model(), *req.InstanceKey)
	return actualLRPResponse{ActualLRP: a}, err
}
