package api

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// RouterStore is what the routers' reports need of the database.
type RouterStore interface {
	ReportRouter(ctx context.Context, r model.RouterReport) error
	RouteTelemetry(ctx context.Context, guid string, live time.Duration) ([]db.RouterSeries, error)
}

// routerHandlers take the routers' reports: the generation of each LRP's traffic split a
// router routes by (what a weighted step waits for) and its telemetry (what analysis
// judges). ROLLOUTS-NEXT.md section 5. They also answer what the live routers counted, for
// the page at /ui/ to chart the measured split.
type routerHandlers struct{ store RouterStore }

type routerReportRequest struct {
	model.RouterReport
}

func (r *routerReportRequest) Validate() error { return r.RouterReport.Validate() }

func (h *routerHandlers) report(ctx context.Context, req *routerReportRequest) (emptyResponse, error) {
	return emptyResponse{}, h.store.ReportRouter(ctx, req.RouterReport)
}

// routerTelemetry is what the live routers counted for one LRP: their counters summed by
// definition. The counters are cumulative since each router started, so a reader takes the
// rate between two reads — and only between reads with the same Routers, since a router
// that starts again counts from zero and one no longer live drops out of the sums.
type routerTelemetry struct {
	ProcessGUID string `json:"process_guid"`
	// At is when the counts were read (Unix nanoseconds).
	At          int64                  `json:"at"`
	Routers     []routerEpoch          `json:"routers"`
	Definitions []model.RouteTelemetry `json:"definitions"`
}

// routerEpoch names one live router's run of counters.
type routerEpoch struct {
	RouterID  string `json:"router_id"`
	StartedAt int64  `json:"started_at"`
}

type routerTelemetryResponse struct {
	Telemetry routerTelemetry `json:"telemetry"`
}

// telemetry serves POST /v1/routers/telemetry {"process_guid"}. An LRP no live router has
// sent requests to — one that does not exist among them — answers no definitions: that is
// what the routers counted.
func (h *routerHandlers) telemetry(ctx context.Context, req *processGUIDRequest) (routerTelemetryResponse, error) {
	at := time.Now().UnixNano()
	series, err := h.store.RouteTelemetry(ctx, req.ProcessGUID, model.RouterLiveness)
	if err != nil {
		return routerTelemetryResponse{}, err
	}
	out := routerTelemetry{ProcessGUID: req.ProcessGUID, At: at, Routers: []routerEpoch{}, Definitions: []model.RouteTelemetry{}}
	byDef := map[string]*model.RouteTelemetry{}
	for _, s := range series {
		// The store lists a router's series together (by router id).
		if e := (routerEpoch{RouterID: s.RouterID, StartedAt: s.StartedAt}); len(out.Routers) == 0 || out.Routers[len(out.Routers)-1] != e {
			out.Routers = append(out.Routers, e)
		}
		sum := byDef[s.DefinitionID]
		if sum == nil {
			sum = &model.RouteTelemetry{ProcessGUID: req.ProcessGUID, DefinitionID: s.DefinitionID, Latency: make([]int64, len(model.LatencyBounds)+1)}
			byDef[s.DefinitionID] = sum
		}
		sum.Requests += s.Requests
		sum.Errors += s.Errors
		sum.DurationUS += s.DurationUS
		for i := range min(len(s.Latency), len(sum.Latency)) {
			sum.Latency[i] += s.Latency[i]
		}
	}
	for _, sum := range byDef {
		out.Definitions = append(out.Definitions, *sum)
	}
	slices.SortFunc(out.Definitions, func(a, b model.RouteTelemetry) int { return strings.Compare(a.DefinitionID, b.DefinitionID) })
	return routerTelemetryResponse{Telemetry: out}, nil
}
