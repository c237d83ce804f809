package activities

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
)

// Waiter says when an LRP may have changed, so that waits re-check at once instead of
// polling. Changes returns a channel that receives (coalesced: at most one pending value)
// after each change of the LRP, and a function that ends the subscription; the subscription
// also ends with ctx. The channel is never closed, so a select on it never spins.
type Waiter interface {
	Changes(ctx context.Context, processGUID string) (<-chan struct{}, func())
}

// Notifications is what PGWaiter needs of the store's notifier (*db.Notifier).
type Notifications interface {
	SubscribeKey(ctx context.Context, channel, key string) *db.Subscription
	Subscribers(channel string) int
}

// PGWaiter is a Waiter over PostgreSQL notifications on db.LRPChangesChannel, whose payload
// names the LRP that changed. It subscribes by process guid to the process's one listening
// connection, so that it wakes only the waits of that LRP: 1,000 rollouts waiting for their
// instances must neither hold 1,000 connections nor all re-check on every change. After a
// lost connection every wait wakes (the notifier's resync): a change notified meanwhile
// must not leave one asleep.
type PGWaiter struct {
	n Notifications
}

// NewPGWaiter waits on n, the store's notifier (db.Store.Notifications). The connection is
// the notifier's: made, and re-made after a loss, in the background, so that a database that
// is down delays wake-ups without failing the worker; waits fall back on their safety tick
// meanwhile.
func NewPGWaiter(n Notifications) *PGWaiter { return &PGWaiter{n: n} }

// Changes implements Waiter.
func (w *PGWaiter) Changes(ctx context.Context, processGUID string) (<-chan struct{}, func()) {
	s := w.n.SubscribeKey(ctx, db.LRPChangesChannel, processGUID)
	return s.C, s.Close
}

// Subscribers is how many waits are subscribed now (for tests and metrics).
func (w *PGWaiter) Subscribers() int { return w.n.Subscribers(db.LRPChangesChannel) }
