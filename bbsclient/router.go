package bbsclient

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// ReportRouter sends a router's report: the split generations it routes by and its
// telemetry (POST /v1/routers/report).
func (c *Client) ReportRouter(ctx context.Context, r model.RouterReport) error {
	return c.post(ctx, "/v1/routers/report", r, nil)
}
