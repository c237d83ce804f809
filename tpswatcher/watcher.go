// Package tpswatcher is Diego's tps-watcher for this BBS: it follows the BBS event stream
// and reports each crash of an app instance to Cloud Controller's internal API (and each
// instance moved off an evacuating cell, and each change of an instance's readiness), as
// cloudfoundry/tps's watcher does, adding which
// definition crashed (seed 001: TPS "can now report which definition (current / previous)
// the ActualLRP is linked to").
//
// Delivery follows tps: one POST per event with a 5 s timeout, from a bounded pool of
// workers; a failed POST is logged and not retried (Cloud Controller learns of later crashes
// and reads instance state from the BBS). A broken event stream is resubscribed after a
// pause; events in between are not replayed.
package tpswatcher

import (
	"context"
	"encoding/json"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// AppDomain is the domain of Cloud Controller's apps (cc_messages.AppLRPDomain): the only
// one whose instances tps reports.
const AppDomain = "cf-apps"

// DefaultRetryPause is how long the watcher waits before resubscribing (tps's
// DefaultRetryPauseInterval).
const DefaultRetryPause = time.Second

// BBS is what the watcher reads: the event stream, and an LRP's definitions to tell a crash
// of the current definition from one of the previous.
type BBS interface {
	Events(ctx context.Context) (<-chan model.Event, error)
	DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error)
}

// CC is what the watcher tells Cloud Controller.
type CC interface {
	AppCrashed(ctx context.Context, guid string, r AppCrashed) error
	AppRescheduling(ctx context.Context, guid string, r AppRescheduling) error
	AppReadinessChanged(ctx context.Context, guid string, r AppReadinessChanged) error
}

// Watcher follows the BBS and reports to Cloud Controller.
type Watcher struct {
	BBS BBS
	CC  CC
	// Domain is whose instances are reported; "" means AppDomain.
	Domain string
	// Workers bounds the reports in flight (default 16); RetryPause is the pause before
	// resubscribing.
	Workers    int
	RetryPause time.Duration
	Log        *zap.Logger
}

// Run follows the event stream until ctx ends, then waits for the reports in flight.
func (w *Watcher) Run(ctx context.Context) {
	if w.Domain == "" {
		w.Domain = AppDomain
	}
	if w.Workers <= 0 {
		w.Workers = 16
	}
	if w.RetryPause <= 0 {
		w.RetryPause = DefaultRetryPause
	}
	pool := make(chan struct{}, w.Workers)
	defer func() {
		for range w.Workers { // wait for the workers to finish
			pool <- struct{}{}
		}
	}()
	for ctx.Err() == nil {
		events, err := w.BBS.Events(ctx)
		if err != nil {
			w.Log.Warn("tps-watcher: cannot subscribe to the BBS events, retrying", zap.Error(err))
		} else {
			w.Log.Info("tps-watcher: subscribed to the BBS events")
			for ev := range events {
				if report := w.reportFor(ev); report != nil {
					pool <- struct{}{}
					// A report in flight finishes (within the client's timeout) after ctx ends.
					go func() { defer func() { <-pool }(); report(context.WithoutCancel(ctx)) }()
				}
			}
			if ctx.Err() == nil {
				w.Log.Info("tps-watcher: the event stream ended, resubscribing")
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.RetryPause):
		}
	}
}

// reportFor is the report an event calls for, nil for none.
func (w *Watcher) reportFor(ev model.Event) func(context.Context) {
	switch ev.Name {
	case model.EventActualLRPCrashed:
		var c model.Crash
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			w.Log.Warn("tps-watcher: unreadable crash event", zap.Int64("event_id", ev.ID), zap.Error(err))
			return nil
		}
		if c.Domain != w.Domain {
			return nil
		}
		return func(ctx context.Context) { w.reportCrash(ctx, c) }
	case model.EventActualLRPRemoved:
		var a model.ActualLRP
		if json.Unmarshal(ev.Data, &a) != nil || a.Presence != model.PresenceEvacuating || a.Domain != w.Domain {
			return nil
		}
		return func(ctx context.Context) { w.reportRescheduling(ctx, a) }
	case model.EventActualLRPChanged:
		var ch model.Change[model.ActualLRP]
		if json.Unmarshal(ev.Data, &ch) != nil || ch.After.Domain != w.Domain || ch.After.State != model.StateRunning ||
			ready(&ch.Before) == ready(&ch.After) {
			return nil
		}
		return func(ctx context.Context) { w.reportReadiness(ctx, ch.After) }
	}
	return nil
}

// ready is an instance's readiness as BBS's routable reports it: set by the starts its cell
// reports, true once RUNNING with its readiness checks (if any) passing. tps reports a
// change of it at a start: the first start of an instance (ready at once, or once its checks
// pass) and every time its checks begin or stop passing.
func ready(a *model.ActualLRP) bool { return a.State == model.StateRunning && !a.NotReady }

func (w *Watcher) reportReadiness(ctx context.Context, a model.ActualLRP) {
	r := AppReadinessChanged{Instance: a.InstanceGUID, Index: int(a.Index), CellID: a.CellID, Ready: ready(&a)}
	log := w.Log.With(zap.String("process_guid", a.ProcessGUID), zap.Int32("index", a.Index))
	log.Info("tps-watcher: recording app readiness changed", zap.Bool("ready", r.Ready))
	if err := w.CC.AppReadinessChanged(ctx, a.ProcessGUID, r); err != nil {
		log.Error("tps-watcher: failed recording app readiness changed", zap.Error(err))
	}
}

func (w *Watcher) reportCrash(ctx context.Context, c model.Crash) {
	r := AppCrashed{
		Instance:        c.Before.InstanceGUID,
		Index:           int(c.Index),
		CellID:          c.Before.CellID,
		Reason:          "CRASHED",
		ExitDescription: c.CrashReason,
		CrashCount:      int(c.CrashCount),
		CrashTimestamp:  c.Since,
		DefinitionID:    c.DefinitionID,
		Definition:      w.definitionRole(ctx, c.ProcessGUID, c.DefinitionID),
	}
	log := w.Log.With(zap.String("process_guid", c.ProcessGUID), zap.Int32("index", c.Index),
		zap.String("definition_id", c.DefinitionID))
	log.Info("tps-watcher: recording app crashed", zap.String("definition", r.Definition), zap.Int("crash_count", r.CrashCount))
	if err := w.CC.AppCrashed(ctx, c.ProcessGUID, r); err != nil {
		log.Error("tps-watcher: failed recording app crashed", zap.Error(err))
	}
}

// definitionRole says whether def is the LRP's current definition or the previous one.
func (w *Watcher) definitionRole(ctx context.Context, guid, def string) string {
	d, err := w.BBS.DesiredLRPByProcessGUID(ctx, guid)
	if err != nil || d == nil {
		return ""
	}
	switch def {
	case d.DefinitionID, "":
		return DefinitionCurrent
	case d.PreviousDefinitionID:
		return DefinitionPrevious
	}
	return ""
}

func (w *Watcher) reportRescheduling(ctx context.Context, a model.ActualLRP) {
	r := AppRescheduling{Instance: a.InstanceGUID, Index: int(a.Index), CellID: a.CellID,
		Reason: "Cell is being evacuated", DefinitionID: a.DefinitionID}
	log := w.Log.With(zap.String("process_guid", a.ProcessGUID), zap.Int32("index", a.Index))
	log.Info("tps-watcher: recording evacuating app instance")
	if err := w.CC.AppRescheduling(ctx, a.ProcessGUID, r); err != nil {
		log.Error("tps-watcher: failed recording evacuating app instance", zap.Error(err))
	}
}
