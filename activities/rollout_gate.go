package activities

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// GateStore is what reading a rollout's gate needs of the database (*db.Store).
type GateStore interface {
	// FreezeState is the fleet's freeze.
	FreezeState(ctx context.Context) (model.RolloutFreeze, error)
	// RolloutWindow returns a window (ResourceNotFound when there is none).
	RolloutWindow(ctx context.Context, name string) (*model.RolloutWindow, error)
}

// RolloutGateInput asks what holds a walk at At (the workflow's time: a workflow passes
// workflow.Now, so that the answer, recorded in its history, never depends on this worker's
// clock or zone database). RolloutID names the rollout whose strategy names the window and
// may break the glass; without it, Window is the window asked about (a group's).
type RolloutGateInput struct {
	RolloutID string    `json:"rollout_id,omitempty"`
	Window    string    `json:"window,omitempty"`
	At        time.Time `json:"at"`
}

// RolloutGate reads the freeze and the window a walk is gated by, at in.At: whether each
// holds it, and when the window next opens or closes. A workflow sets a timer on
// NextTransition and asks again when it fires, or when it is told the window or the freeze
// changed. The rollout group workflow uses it the same way, with its window's name.
func (r *Rollouts) RolloutGate(ctx context.Context, in RolloutGateInput) (model.RolloutGate, error) {
	g := model.RolloutGate{Window: in.Window}
	if in.RolloutID != "" {
		ro, err := r.Store.RolloutByID(ctx, in.RolloutID)
		if err != nil {
			return g, nonRetryable(err)
		}
		g = gateOf(ro)
	}
	return g, nonRetryable(r.gateAt(ctx, &g, in.At))
}

// gateAt fills in the freeze and the state of g.Window at t.
func (r *Rollouts) gateAt(ctx context.Context, g *model.RolloutGate, t time.Time) error {
	freeze, err := r.Store.FreezeState(ctx)
	if err != nil {
		return err
	}
	g.Freeze = freeze
	if g.Window == "" {
		return nil
	}
	w, err := r.Store.RolloutWindow(ctx, g.Window)
	if model.IsType(err, model.ErrResourceNotFound) {
		// Deleted under the rollout (the store refuses that; a hand-edited database does
		// not): held as closed until a window of the name is upserted, which tells it.
		g.WindowMissing, g.WindowOpen, g.NextTransition = true, false, 0
		return nil
	}
	if err != nil {
		return err
	}
	g.WindowOpen, g.NextTransition = w.GateAt(t)
	return nil
}

// gateOf is the part of a rollout's gate its strategy fixes: its window and its break glass.
func gateOf(ro *model.Rollout) model.RolloutGate {
	var g model.RolloutGate
	if s := ro.Strategy; s != nil {
		if s.Window != nil {
			g.Window = *s.Window
		}
		g.BreakGlass = s.BreakGlass != nil
	}
	return g
}
