package router

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// ReportBBS is what the reporter needs of the BBS.
type ReportBBS interface {
	ReportRouter(ctx context.Context, r model.RouterReport) error
}

// Reporter tells the BBS, every Interval and at once after the table took a traffic split,
// which split generation the router routes each LRP by and the telemetry counted since the
// last report: a weighted step waits for every live router's acknowledgement, and analysis
// reads the telemetry. Every report, even one with nothing new, keeps the router live.
type Reporter struct {
	BBS       ReportBBS
	Table     *Table
	Telemetry *Telemetry
	ID        string
	Interval  time.Duration // default 1 s
	Log       *zap.Logger

	poke    chan struct{}
	started int64
}

// NewReporter returns a reporter for the router id.
func NewReporter(bbs ReportBBS, table *Table, telemetry *Telemetry, id string, log *zap.Logger) *Reporter {
	return &Reporter{BBS: bbs, Table: table, Telemetry: telemetry, ID: id, Log: log,
		poke: make(chan struct{}, 1), started: time.Now().UnixNano()}
}

// Poke asks for a report now (the table took a split).
func (r *Reporter) Poke() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// The first report of a router carries every series: the BBS replaces what it had of a
	// router that started again. A report that fails gives its series back for the next.
	all := true
	for {
		if r.report(ctx, all) {
			all = false
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.poke:
		}
	}
}

// report sends one report and says whether the BBS took it.
func (r *Reporter) report(ctx context.Context, all bool) bool {
	rep := model.RouterReport{RouterID: r.ID, StartedAt: r.started, Applied: r.Table.Applied(), Telemetry: r.Telemetry.Changed(all)}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.BBS.ReportRouter(rctx, rep); err != nil {
		r.Telemetry.Unreported(rep.Telemetry)
		if ctx.Err() == nil {
			r.Log.Warn("router report", zap.Error(err))
		}
		return false
	}
	return true
}
