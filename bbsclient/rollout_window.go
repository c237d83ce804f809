package bbsclient

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// UpsertRolloutWindow creates a rollout window or replaces its schedule; created says which.
func (c *Client) UpsertRolloutWindow(ctx context.Context, w model.RolloutWindow) (*model.RolloutWindow, bool, error) {
	var resp struct {
		Window  *model.RolloutWindow `json:"rollout_window"`
		Created bool                 `json:"created"`
	}
	err := c.post(ctx, "/v1/rollout_windows/upsert", w, &resp)
	return resp.Window, resp.Created, err
}

// RolloutWindow reads a rollout window (ResourceNotFound when there is none).
func (c *Client) RolloutWindow(ctx context.Context, name string) (*model.RolloutWindow, error) {
	var resp struct {
		Window *model.RolloutWindow `json:"rollout_window"`
	}
	err := c.post(ctx, "/v1/rollout_windows/get", map[string]string{"name": name}, &resp)
	return resp.Window, err
}

// RolloutWindows lists every rollout window.
func (c *Client) RolloutWindows(ctx context.Context) ([]model.RolloutWindow, error) {
	var resp struct {
		Windows []model.RolloutWindow `json:"rollout_windows"`
	}
	err := c.post(ctx, "/v1/rollout_windows/list", struct{}{}, &resp)
	return resp.Windows, err
}

// DeleteRolloutWindow removes a rollout window no rollout under way and no LRP default
// names (ResourceConflict otherwise).
func (c *Client) DeleteRolloutWindow(ctx context.Context, name string) error {
	return c.post(ctx, "/v1/rollout_windows/delete", map[string]string{"name": name}, nil)
}

// FreezeRollouts freezes the fleet's rollouts and returns the freeze and how many rollouts
// under way were told.
func (c *Client) FreezeRollouts(ctx context.Context, reason string) (model.RolloutFreeze, int, error) {
	return c.freezeCall(ctx, "/v1/rollouts/freeze", map[string]string{"reason": reason})
}

// UnfreezeRollouts lifts the freeze.
func (c *Client) UnfreezeRollouts(ctx context.Context) (model.RolloutFreeze, int, error) {
	return c.freezeCall(ctx, "/v1/rollouts/unfreeze", struct{}{})
}

// RolloutFreeze reads the freeze.
func (c *Client) RolloutFreeze(ctx context.Context) (model.RolloutFreeze, error) {
	f, _, err := c.freezeCall(ctx, "/v1/rollouts/get_freeze", struct{}{})
	return f, err
}

func (c *Client) freezeCall(ctx context.Context, route string, req any) (model.RolloutFreeze, int, error) {
	var resp struct {
		Freeze model.RolloutFreeze `json:"freeze"`
		Told   int                 `json:"told"`
	}
	err := c.post(ctx, route, req, &resp)
	return resp.Freeze, resp.Told, err
}
