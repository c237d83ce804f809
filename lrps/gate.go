package lrps

import (
	"context"
	"sync"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// GateStore is what rollout windows and the freeze need of the database (*db.Store).
type GateStore interface {
	UpsertRolloutWindow(ctx context.Context, w model.RolloutWindow) (*model.RolloutWindow, bool, error)
	RolloutWindow(ctx context.Context, name string) (*model.RolloutWindow, error)
	RolloutWindows(ctx context.Context) ([]model.RolloutWindow, error)
	DeleteRolloutWindow(ctx context.Context, name string) error
	RolloutsNamingWindow(ctx context.Context, name string) ([]model.Rollout, error)
	FreezeState(ctx context.Context) (model.RolloutFreeze, error)
	SetFreeze(ctx context.Context, frozen bool, reason string) (model.RolloutFreeze, bool, error)
	Rollouts(ctx context.Context, f model.RolloutFilter) ([]model.Rollout, error)
}

// GateSignals tells a running rollout workflow that its gate changed (workflows.RolloutClient):
// the freeze, or the window it names. A workflow that is not running answers an error, which
// is logged only: it reads its gate as it starts.
type GateSignals interface {
	SignalFreeze(ctx context.Context, guid string, f model.RolloutFreeze) error
	SignalWindowChanged(ctx context.Context, guid string) error
}

// fanOut is how many signals a freeze sends at once.
const fanOut = 16

// Gates keeps rollout windows and the fleet's freeze (ROLLOUTS-NEXT.md section 6), and
// tells the rollouts under way of a change once it is committed. A rollout that starts
// after the commit reads it itself: a start takes the freeze row in its own transaction
// (db.Store.StartRollout), and a workflow reads its gate as each run begins.
type Gates struct {
	store   GateStore
	signals GateSignals // nil: no Temporal, nothing to tell
	log     *zap.Logger
	// groups and wake tell the rollout groups under way too (WithGroups).
	groups GroupLister
	wake   GroupWorkflows
}

// GroupLister lists the rollout groups under way (db.Store.RolloutGroupsInProgress).
type GroupLister interface {
	RolloutGroupsInProgress(ctx context.Context) ([]string, error)
}

// WithGroups makes every freeze, unfreeze and window upsert wake the rollout groups under
// way too, which then read their gate at once (a group holds itself; its members are told
// as rollouts).
func (g *Gates) WithGroups(groups GroupLister, wake GroupWorkflows) *Gates {
	g.groups, g.wake = groups, wake
	return g
}

// wakeGroups wakes every group under way; one not woken reads its gate within a minute.
func (g *Gates) wakeGroups(ctx context.Context) {
	if g.groups == nil || g.wake == nil {
		return
	}
	ids, err := g.groups.RolloutGroupsInProgress(ctx)
	if err != nil {
		g.log.Info("rollout groups not woken: each reads its gate within a minute", zap.Error(err))
		return
	}
	for _, id := range ids {
		if err := g.wake.WakeGroup(ctx, id); err != nil {
			g.log.Info("rollout group not woken: it reads its gate within a minute", zap.String("group", id), zap.Error(err))
		}
	}
}

// NewGates builds a Gates; signals may be nil when the process has no Temporal.
func NewGates(store GateStore, signals GateSignals, log *zap.Logger) *Gates {
	return &Gates{store: store, signals: signals, log: log.Named("gates")}
}

// UpsertWindow creates or replaces a validated window, then tells the rollouts under way
// that name it to read it again.
func (g *Gates) UpsertWindow(ctx context.Context, w model.RolloutWindow) (*model.RolloutWindow, bool, error) {
	out, created, err := g.store.UpsertRolloutWindow(ctx, w)
	if err != nil || created || g.signals == nil {
		return out, created, err
	}
	rs, err := g.store.RolloutsNamingWindow(ctx, w.Name)
	if err != nil {
		g.log.Warn("rollouts naming an upserted window not told: each reads it at its next transition", zap.String("window", w.Name), zap.Error(err))
		return out, created, nil
	}
	g.tell(ctx, rs, func(ctx context.Context, r model.Rollout) error {
		return g.signals.SignalWindowChanged(ctx, r.ProcessGUID)
	})
	g.wakeGroups(ctx)
	return out, created, nil
}

// Window returns a window (ResourceNotFound when there is none).
func (g *Gates) Window(ctx context.Context, name string) (*model.RolloutWindow, error) {
	return g.store.RolloutWindow(ctx, name)
}

// Windows lists every window.
func (g *Gates) Windows(ctx context.Context) ([]model.RolloutWindow, error) {
	return g.store.RolloutWindows(ctx)
}

// DeleteWindow removes a window no rollout under way and no LRP default names
// (ResourceConflict naming them otherwise).
func (g *Gates) DeleteWindow(ctx context.Context, name string) error {
	return g.store.DeleteRolloutWindow(ctx, name)
}

// FreezeState is the fleet's freeze.
func (g *Gates) FreezeState(ctx context.Context) (model.RolloutFreeze, error) {
	return g.store.FreezeState(ctx)
}

// Freeze refuses new rollouts from the commit on, and tells every rollout under way to hold
// at its next index boundary. Repeated, it changes nothing but sends the signals again (a
// rollout missed the first time gets them; the others ignore a generation they know).
func (g *Gates) Freeze(ctx context.Context, reason string) (model.RolloutFreeze, int, error) {
	if len(reason) > model.MaxFreezeReason {
		return model.RolloutFreeze{}, 0, model.Errorf(model.ErrInvalidRequest, "reason is %d bytes, more than %d", len(reason), model.MaxFreezeReason)
	}
	return g.set(ctx, true, reason)
}

// Unfreeze lets rollouts start again and tells the frozen ones to walk on.
func (g *Gates) Unfreeze(ctx context.Context) (model.RolloutFreeze, int, error) {
	return g.set(ctx, false, "")
}

func (g *Gates) set(ctx context.Context, frozen bool, reason string) (model.RolloutFreeze, int, error) {
	f, changed, err := g.store.SetFreeze(ctx, frozen, reason)
	if err != nil {
		return f, 0, err
	}
	if changed {
		g.log.Warn("rollouts frozen or unfrozen", zap.Bool("frozen", f.Frozen), zap.String("reason", f.Reason), zap.Int64("generation", f.Generation))
	}
	if g.signals == nil {
		return f, 0, nil
	}
	rs, err := g.store.Rollouts(ctx, model.RolloutFilter{Active: true})
	if err != nil {
		// Committed: the workflows read it as each run begins; the caller repeats the call to
		// tell the others now.
		return f, 0, model.WrapError(model.ErrUnavailable, "the freeze is recorded, but the rollouts under way were not told; repeat the call", err)
	}
	told := g.tell(ctx, rs, func(ctx context.Context, r model.Rollout) error { return g.signals.SignalFreeze(ctx, r.ProcessGUID, f) })
	g.wakeGroups(ctx)
	return f, told, nil
}

// tell signals each rollout of rs, fanOut at once, and returns how many took it.
func (g *Gates) tell(ctx context.Context, rs []model.Rollout, send func(context.Context, model.Rollout) error) int {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		told int
	)
	sem := make(chan struct{}, fanOut)
	for _, r := range rs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := send(ctx, r); err != nil {
				g.log.Info("rollout not told of its gate: it reads it as its next run begins", zap.String("process_guid", r.ProcessGUID), zap.Error(err))
				return
			}
			mu.Lock()
			told++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return told
}
