package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// EvacuationStore is what the evacuation routes need of the database: a draining cell keeps
// its RUNNING instances serving as EVACUATING until their replacements run (seed 003).
type EvacuationStore interface {
	EvacuateRunningActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo) (bool, error)
	RemoveEvacuatingActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) error
}

// evacuationHandlers serve the routes a draining cell calls; their requests are the
// lifecycle routes' (claimRequest, startRequest).
type evacuationHandlers struct{ store EvacuationStore }

type keepContainerResponse struct {
	KeepContainer bool `json:"keep_container"`
}

func (h *evacuationHandlers) evacuateRunningActualLRP(ctx context.Context, req *startRequest) (keepContainerResponse, error) {
	keep, err := h.store.EvacuateRunningActualLRP(ctx, req.Key.model(), *req.InstanceKey, req.NetInfo)
	return keepContainerResponse{KeepContainer: keep}, err
}

func (h *evacuationHandlers) removeEvacuatingActualLRP(ctx context.Context, req *claimRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.RemoveEvacuatingActualLRP(ctx, req.Key.model(), *req.InstanceKey)
}
