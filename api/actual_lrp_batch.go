package api

import (
	"context"
	"errors"
	"strings"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// maxBatch is the most instances one batch report may carry.
const maxBatch = 1000

// batchRequest is a cell's report on many instances at once:
// POST /v1/actual_lrps/claim_batch and /v1/actual_lrps/start_batch. Every instance is
// validated before anything is written; each then gets the answer its single route would
// give, in order.
type batchRequest struct {
	Instances []startRequest `json:"instances"`
	// ErrorsOnly asks for each instance's error alone, {} for one taken: a cell needs no
	// more, and the instances as stored were half the JSON a fleet's placement encoded
	// and decoded.
	ErrorsOnly bool `json:"errors_only,omitempty"`
}

func (r *batchRequest) Validate() error {
	if len(r.Instances) > maxBatch {
		return model.Errorf(model.ErrInvalidRequest, "%d instances in one batch; at most %d", len(r.Instances), maxBatch)
	}
	for i := range r.Instances {
		in := &r.Instances[i]
		if err := in.Validate(); err != nil {
			var me *model.Error
			if errors.As(err, &me) {
				return model.Errorf(me.Type, "instances[%d]: %s", i, me.Message)
			}
			return err
		}
		// A NUL cannot be stored: refused here, it cannot fail the whole batch's transaction.
		for _, v := range []string{in.Key.Domain, in.InstanceKey.InstanceGUID, in.InstanceKey.CellID, in.NetInfo.Address, in.NetInfo.InstanceAddress} {
			if strings.ContainsRune(v, 0) {
				return model.Errorf(model.ErrInvalidRequest, "instances[%d]: a field contains a NUL character", i)
			}
		}
		if in.ModificationTag != nil {
			return model.Errorf(model.ErrInvalidRequest, "instances[%d]: modification_tag is not taken in a batch; use the single route", i)
		}
	}
	return nil
}

func (r *batchRequest) reports() []db.InstanceReport {
	out := make([]db.InstanceReport, len(r.Instances))
	for i := range r.Instances {
		out[i] = r.Instances[i].report()
	}
	return out
}

// batchResult is one instance's answer: the instance as stored, or the error its single
// route would have returned.
type batchResult struct {
	ActualLRP *model.ActualLRP `json:"actual_lrp,omitempty"`
	Error     *model.Error     `json:"error,omitempty"`
}

type batchResponse struct {
	Results []batchResult `json:"results"`
}

func (h *lifecycleHandlers) claimActualLRPs(ctx context.Context, req *batchRequest) (batchResponse, error) {
	res, err := h.store.ClaimActualLRPs(ctx, req.reports())
	return h.batchResponse(ctx, res, req.ErrorsOnly), err
}

func (h *lifecycleHandlers) startActualLRPs(ctx context.Context, req *batchRequest) (batchResponse, error) {
	res, err := h.store.StartActualLRPs(ctx, req.reports())
	return h.batchResponse(ctx, res, req.ErrorsOnly), err
}

func (h *lifecycleHandlers) batchResponse(ctx context.Context, res []db.BatchResult, errorsOnly bool) batchResponse {
	out := batchResponse{Results: make([]batchResult, len(res))}
	for i, r := range res {
		out.Results[i].Error = itemError(ctx, h.log, r.Err)
		if !errorsOnly {
			out.Results[i].ActualLRP = r.ActualLRP
		}
	}
	return out
}
