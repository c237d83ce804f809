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

// CreateRolloutGroup creates a rollout group (ROLLOUTS-NEXT.md section 6).
func (c *Client) CreateRolloutGroup(ctx context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error) {
	return c.groupCall(ctx, "/v1/rollout_groups/create", spec)
}

// RolloutGroup reads a group with its waves, members and budgets.
func (c *Client) RolloutGroup(ctx context.Context, id string) (*model.RolloutGroup, error) {
	return c.groupCall(ctx, "/v1/rollout_groups/get", map[string]any{"group_id": id})
}

// RolloutGroups lists the groups, newest first, without their members.
func (c *Client) RolloutGroups(ctx context.Context) ([]model.RolloutGroup, error) {
	var resp struct {
		RolloutGroups []model.RolloutGroup `json:"rollout_groups"`
	}
	err := c.post(ctx, "/v1/rollout_groups/list", map[string]any{}, &resp)
	return resp.RolloutGroups, err
}

// ControlRolloutGroup pauses, resumes or aborts a group (kind: model.GroupControl*).
func (c *Client) ControlRolloutGroup(ctx context.Context, id, kind, reason string) (*model.RolloutGroup, error) {
	return c.groupCall(ctx, "/v1/rollout_groups/"+kind, map[string]any{"group_id": id, "reason": reason})
}

// groupCall posts req to a route that answers {"rollout_group"}.
func (c *Client) groupCall(ctx context.Context, route string, req any) (*model.RolloutGroup, error) {
	var resp struct {
		RolloutGroup *model.RolloutGroup `json:"rollout_group"`
	}
	if err := c.post(ctx, route, req, &resp); err != nil {
		return nil, err
	}
	if resp.RolloutGroup == nil {
		return nil, fmt.Errorf("POST %s: no rollout group in the answer", route)
	}
	return resp.RolloutGroup, nil
}
