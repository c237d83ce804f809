package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// RouterStore is what the routers' reports need of the database.
type RouterStore interface {
	ReportRouter(ctx context.Context, r model.RouterReport) error
}

// routerHandlers take the routers' reports: the generation of each LRP's traffic split a
// router routes by (what a weighted step waits for) and its telemetry (what analysis
// judges). ROLLOUTS-NEXT.md section 5.
type routerHandlers struct{ store RouterStore }

type routerReportRequest struct {
	model.RouterReport
}

func (r *routerReportRequest) Validate() error { return r.RouterReport.Validate() }

func (h *routerHandlers) report(ctx context.Context, req *routerReportRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.ReportRouter(ctx, req.RouterReport)
}
