package api

import (
	"context"
	"strings"

	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
)

// gateHandlers serve rollout windows and the freeze (ROLLOUTS-NEXT.md section 6, "Windows
// and freezes") through lrps.Gates, which tells the rollouts under way of a change.
type gateHandlers struct {
	gates *lrps.Gates
}

// windowRequest is upsert's body: a window, decoded strictly (an unknown field is refused,
// so that a misspelt "time_zone" is not a window in UTC).
type windowRequest struct {
	model.RolloutWindow
}

func (r *windowRequest) UnmarshalJSON(data []byte) error {
	return model.DecodeStrict("", data, &r.RolloutWindow)
}

func (r *windowRequest) Validate() error { return r.RolloutWindow.Validate() }

// windowNameRequest is get's and delete's body.
type windowNameRequest struct {
	Name string `json:"name"`
}

func (r *windowNameRequest) Validate() error { return model.ValidateWindowName("name", r.Name) }

type windowResponse struct {
	Window  *model.RolloutWindow `json:"rollout_window"`
	Created bool                 `json:"created,omitempty"`
}

type windowsResponse struct {
	Windows []model.RolloutWindow `json:"rollout_windows"`
}

func (h *gateHandlers) upsertWindow(ctx context.Context, req *windowRequest) (windowResponse, error) {
	w, created, err := h.gates.UpsertWindow(ctx, req.RolloutWindow)
	return windowResponse{Window: w, Created: created}, err
}

func (h *gateHandlers) getWindow(ctx context.Context, req *windowNameRequest) (windowResponse, error) {
	w, err := h.gates.Window(ctx, req.Name)
	return windowResponse{Window: w}, err
}

func (h *gateHandlers) listWindows(ctx context.Context, _ *struct{}) (windowsResponse, error) {
	ws, err := h.gates.Windows(ctx)
	return windowsResponse{Windows: ws}, err
}

func (h *gateHandlers) deleteWindow(ctx context.Context, req *windowNameRequest) (emptyResponse, error) {
	return emptyResponse{}, h.gates.DeleteWindow(ctx, req.Name)
}

// freezeRequest is freeze's body.
type freezeRequest struct {
	Reason string `json:"reason"`
}

func (r *freezeRequest) Validate() error {
	if strings.TrimSpace(r.Reason) == "" {
		return model.Errorf(model.ErrInvalidRequest, "reason is required: it tells everyone refused why")
	}
	return nil // its bound is lrps.Gates.Freeze's
}

// freezeResponse is the freeze as it stands, and how many rollouts under way a change told.
type freezeResponse struct {
	Freeze model.RolloutFreeze `json:"freeze"`
	Told   *int                `json:"told,omitempty"`
}

func (h *gateHandlers) freeze(ctx context.Context, req *freezeRequest) (freezeResponse, error) {
	f, told, err := h.gates.Freeze(ctx, req.Reason)
	return freezeResponse{Freeze: f, Told: &told}, err
}

func (h *gateHandlers) unfreeze(ctx context.Context, _ *struct{}) (freezeResponse, error) {
	f, told, err := h.gates.Unfreeze(ctx)
	return freezeResponse{Freeze: f, Told: &told}, err
}

func (h *gateHandlers) getFreeze(ctx context.Context, _ *struct{}) (freezeResponse, error) {
	f, err := h.gates.FreezeState(ctx)
	return freezeResponse{Freeze: f}, err
}
