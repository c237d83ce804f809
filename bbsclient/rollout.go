package bbsclient

import (
	"context"
	"fmt"

	"github.com/updatable-lrps/bbs/model"
)

// Rollout reads an LRP's active rollout, else its latest.
func (c *Client) Rollout(ctx context.Context, guid string) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/get", map[string]any{"process_guid": guid})
}

// Rollouts lists the rollouts the filter selects.
func (c *Client) Rollouts(ctx context.Context, f model.RolloutFilter) ([]model.Rollout, error) {
	var resp struct {
		Rollouts []model.Rollout `json:"rollouts"`
	}
	err := c.post(ctx, "/v1/rollouts/list", f, &resp)
	return resp.Rollouts, err
}

// PauseRollout holds the LRP's rollout at its next index (ROLLOUTS-NEXT.md section 3):
// NoRolloutInProgress when none is under way, InvalidPhase while it reverts. Repeating it
// changes nothing.
func (c *Client) PauseRollout(ctx context.Context, guid string) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/pause", map[string]any{"process_guid": guid})
}

// ResumeRollout releases a paused rollout (or a revert its own failure holds); repeating it
// after it took effect changes nothing. InvalidPhase on a rollout that is not paused and was
// never paused or resumed: there is nothing to resume.
func (c *Client) ResumeRollout(ctx context.Context, guid string) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/resume", map[string]any{"process_guid": guid})
}

// SetRolloutPace replaces maxInFlight indices at once from the rollout's next index on.
func (c *Client) SetRolloutPace(ctx context.Context, guid string, maxInFlight int32) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/set_pace", map[string]any{"process_guid": guid, "max_in_flight": maxInFlight})
}

// AbortRollout stops the rollout and reverts it to the definition it started from; reason is
// kept in its failure.
func (c *Client) AbortRollout(ctx context.Context, guid, reason string) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/abort", map[string]any{"process_guid": guid, "reason": reason})
}

// PromoteRollout leaves a manual canary step (full: every remaining step and analysis).
func (c *Client) PromoteRollout(ctx context.Context, guid string, full bool) (*model.Rollout, error) {
	return c.rolloutCall(ctx, "/v1/rollouts/promote", map[string]any{"process_guid": guid, "full": full})
}

// rolloutCall posts req to a route that answers {"rollout"}.
func (c *Client) rolloutCall(ctx context.Context, route string, req any) (*model.Rollout, error) {
	var resp struct {
		Rollout *model.Rollout `json:"rollout"`
	}
	if err := c.post(ctx, route, req, &resp); err != nil {
		return nil, err
	}
	if resp.Rollout == nil {
		return nil, fmt.Errorf("POST %s: no rollout in the answer", route)
	}
	return resp.Rollout, nil
}
