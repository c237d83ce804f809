package router

import (
	"context"
	"encoding/json"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// BBS is what the route emitter reads.
type BBS interface {
	LRPDeployments(ctx context.Context, f model.DesiredLRPFilter) ([]model.LRPDeployment, error)
	ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error)
	Events(ctx context.Context) (<-chan model.Event, error)
}

// Emitter keeps a Table in step with the BBS: a full read at start and every Resync, and
// every event in between (Diego's route emitter).
type Emitter struct {
	BBS    BBS
	Table  *Table
	Resync time.Duration // default 30 s
	Log    *zap.Logger
	// Applied, when set, is called after the table took a traffic split (from its event or
	// a resync): the router reports what it routes by at once.
	Applied func()
	// Removed, when set, is called with the process guid of an LRP removed (its telemetry
	// goes).
	Removed func(guid string)
}

// Run follows the BBS until ctx ends.
func (e *Emitter) Run(ctx context.Context) {
	if e.Resync <= 0 {
		e.Resync = 30 * time.Second
	}
	for ctx.Err() == nil {
		// Subscribe first, then read everything: no change falls between the two.
		events, err := e.BBS.Events(ctx)
		if err == nil {
			err = e.sync(ctx)
		}
		if err != nil {
			e.Log.Warn("route emitter: BBS unreachable, retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		e.follow(ctx, events)
	}
}

// sync rebuilds the table from a full read.
func (e *Emitter) sync(ctx context.Context) error {
	deps, err := e.BBS.LRPDeployments(ctx, model.DesiredLRPFilter{})
	if err != nil {
		return err
	}
	actual, err := e.BBS.ActualLRPs(ctx, model.ActualLRPFilter{})
	if err != nil {
		return err
	}
	lrps := make([]LRP, len(deps))
	for i := range deps {
		lrps[i] = LRPFromDeployment(&deps[i])
	}
	e.Table.Replace(lrps, actual)
	e.applied()
	return nil
}

func (e *Emitter) applied() {
	if e.Applied != nil {
		e.Applied()
	}
}

// follow applies events until the stream breaks, resyncing every Resync.
func (e *Emitter) follow(ctx context.Context, events <-chan model.Event) {
	tick := time.NewTicker(e.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := e.sync(ctx); err != nil {
				e.Log.Warn("route emitter resync", zap.Error(err))
			}
		case ev, ok := <-events:
			if !ok {
				return // the stream broke: resubscribe and resync
			}
			e.apply(ctx, ev)
		}
	}
}

func (e *Emitter) apply(ctx context.Context, ev model.Event) {
	switch ev.Name {
	case model.EventActualLRPCreated:
		var a model.ActualLRP
		if json.Unmarshal(ev.Data, &a) == nil {
			e.ensureLRP(ctx, a.ProcessGUID)
			e.Table.SetInstance(a)
		}
	case model.EventActualLRPChanged:
		var c model.Change[model.ActualLRP]
		if json.Unmarshal(ev.Data, &c) == nil {
			e.ensureLRP(ctx, c.After.ProcessGUID)
			e.Table.SetInstance(c.After)
		}
	case model.EventActualLRPRemoved:
		var a model.ActualLRP
		if json.Unmarshal(ev.Data, &a) == nil {
			e.Table.RemoveInstance(a)
		}
	case model.EventDesiredLRPCreated, model.EventDesiredLRPChanged:
		var guid struct {
			ProcessGUID string `json:"process_guid"`
			After       *struct {
				ProcessGUID string `json:"process_guid"`
			} `json:"after"`
		}
		if json.Unmarshal(ev.Data, &guid) == nil {
			if guid.After != nil {
				guid.ProcessGUID = guid.After.ProcessGUID
			}
			e.refreshLRP(ctx, guid.ProcessGUID)
		}
	case model.EventTrafficChanged:
		var split model.TrafficSplit
		if json.Unmarshal(ev.Data, &split) == nil {
			e.ensureLRP(ctx, split.ProcessGUID)
			if e.Table.SetSplit(split) {
				e.applied()
			}
		}
	case model.EventDesiredLRPRemoved:
		var d struct {
			ProcessGUID string `json:"process_guid"`
		}
		if json.Unmarshal(ev.Data, &d) == nil {
			e.Table.RemoveLRP(d.ProcessGUID)
			if e.Removed != nil {
				e.Removed(d.ProcessGUID)
			}
		}
	}
}

func (e *Emitter) ensureLRP(ctx context.Context, guid string) {
	if !e.Table.HasLRP(guid) {
		e.refreshLRP(ctx, guid)
	}
}

// refreshLRP re-reads one LRP's routes and definition ports (a route or definition change).
func (e *Emitter) refreshLRP(ctx context.Context, guid string) {
	deps, err := e.BBS.LRPDeployments(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{guid}})
	if err != nil {
		e.Log.Warn("route emitter: read LRP", zap.String("process_guid", guid), zap.Error(err))
		return
	}
	for i := range deps {
		e.Table.SetLRP(LRPFromDeployment(&deps[i]))
	}
}
