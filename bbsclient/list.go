package bbsclient

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// DesiredLRPs lists the LRPs the filter selects, each through its active definition.
func (c *Client) DesiredLRPs(ctx context.Context, f model.DesiredLRPFilter) ([]*model.DesiredLRP, error) {
	var resp struct {
		DesiredLRPs []*model.DesiredLRP `json:"desired_lrps"`
	}
	err := c.post(ctx, "/v1/desired_lrps/list", f, &resp)
	return resp.DesiredLRPs, err
}
