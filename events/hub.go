// Package events fans the store's event log out to subscribers: the HTTP event stream, and
// anything else that must wake when an instance changes. The log lives in PostgreSQL, so
// every API process sees every change, whichever process wrote it; a notification on
// db.EventsChannel says when to read.
package events

import (
	"context"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Source is the store's event log.
type Source interface {
	EventsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error)
	// EventIDsAfter is EventsAfter without the data, for a hub without subscribers.
	EventIDsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error)
	LastEventID(ctx context.Context) (int64, error)
}

// Notifications is what the hub needs of the store's notifier (*db.Notifier).
type Notifications interface {
	Subscribe(ctx context.Context, channel string) *db.Subscription
}

// Options tune the hub; zero values take the defaults.
type Options struct {
	// GapWait is how long a hole in the id sequence is awaited before it is skipped: a
	// transaction that took an id may still be committing (or may have rolled back).
	GapWait time.Duration
	// Poll is how often the log is read without a notification, as a safety net.
	Poll time.Duration
	// Buffer is each subscriber's queue; a subscriber that falls this far behind is dropped
	// (its channel closes) rather than slowing everyone down.
	Buffer int
}

// Hub reads new events and hands them to every subscriber, in id order.
type Hub struct {
	src   Source
	notes Notifications
	opts  Options
	log   *zap.Logger

	mu   sync.Mutex
	subs map[chan model.Event]struct{}
	last int64
}

// NewHub builds a hub over src, woken by notes (the store's notifier, db.Store.Notifications)
// when there is something new to read.
func NewHub(src Source, notes Notifications, opts Options, log *zap.Logger) *Hub {
	if opts.GapWait == 0 {
		opts.GapWait = time.Second
	}
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if opts.Buffer == 0 {
		opts.Buffer = 4096
	}
	return &Hub{src: src, notes: notes, opts: opts, log: log.Named("events"), subs: map[chan model.Event]struct{}{}}
}

// Subscribe returns a channel of the events committed from now on, and a function that ends
// the subscription. The channel closes if the subscriber falls too far behind, or if the
// hub itself did and events were pruned before it read them: either way the subscriber
// missed events, and must re-read the state.
func (h *Hub) Subscribe() (<-chan model.Event, func()) {
	ch, cancel, _ := h.subscribe()
	return ch, cancel
}

// subscribe is Subscribe that also says the id of the last event the hub passed on before
// the subscription: the channel carries those after it.
func (h *Hub) subscribe() (<-chan model.Event, func(), int64) {
	ch := make(chan model.Event, h.opts.Buffer)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	last := h.last
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	}, last
}

// Run follows the log until ctx ends; then every subscriber's channel is closed, so that
// streams end with the hub (an API that stops must not wait for its clients to leave). A
// database that does not answer at start is retried with back-off rather than leaving the
// hub dead while the API serves streams that would never carry anything.
func (h *Hub) Run(ctx context.Context) error {
	defer h.closeAll(0)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		last, err := h.src.LastEventID(ctx)
		if err == nil {
			h.mu.Lock()
			h.last = last
			h.mu.Unlock()
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		h.log.Warn("reading the last event id; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	// A resync (the notifier lost its connection) needs nothing more than a notification:
	// the hub reads from its own cursor, so whatever was notified meanwhile is read anyway.
	sub := h.notes.Subscribe(ctx, db.EventsChannel)
	defer sub.Close()
	var gapSince time.Time
	for {
		wait := h.opts.Poll
		if !gapSince.IsZero() {
			wait = h.opts.GapWait / 5
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
		case <-time.After(wait):
		}
		gapSince = h.drain(ctx, gapSince)
	}
}

// drain delivers every new event it can, stopping at a hole in the ids until the hole is
// older than GapWait. It returns when the current hole was first seen (zero: no hole).
//
// Without subscribers it reads only the events' ids (and names, for the pruned marker):
// it must still know where the log's complete prefix ends, for those who subscribe later,
// but nobody needs the documents. One who subscribes meanwhile has the rest of the batch
// read again, with its data (pass).
func (h *Hub) drain(ctx context.Context, gapSince time.Time) time.Time {
	for {
		h.mu.Lock()
		quiet, after := len(h.subs) == 0, h.last
		h.mu.Unlock()
		read := h.src.EventsAfter
		if quiet {
			read = h.src.EventIDsAfter
		}
		evs, err := read(ctx, after, 1000)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("reading events", zap.Error(err))
			}
			return gapSince
		}
		complete := true
		for _, e := range evs {
			if e.Name == db.EventsPruned {
				// Events this hub had not read yet were pruned (it stalled for longer than
				// the log keeps them): its subscribers missed them, and skipping on would
				// hide it. They are dropped, as when they fall behind, to re-read the state.
				dropped := h.closeAll(e.ID)
				h.log.Warn("events were pruned before the hub read them: dropped every subscriber, to re-read the state",
					zap.Int64("after_event_id", after), zap.Int("subscribers", dropped))
				gapSince, after = time.Time{}, e.ID
				continue
			}
			if e.ID != after+1 {
				if gapSince.IsZero() {
					gapSince = time.Now()
				}
				if time.Since(gapSince) < h.opts.GapWait {
					return gapSince
				}
			}
			gapSince = time.Time{}
			if !h.pass(e, quiet) {
				complete = false
				break
			}
			after = e.ID
		}
		if complete && len(evs) < 1000 {
			return gapSince
		}
	}
}

// pass hands e to every subscriber and moves the hub past it, at once for whoever
// subscribes (which reads where the hub is). An event read quietly (without its data, there
// being no subscriber then) is only passed over, and not even that once someone subscribed
// meanwhile: false, the event is to be read again with its data.
func (h *Hub) pass(e model.Event, quiet bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if quiet && len(h.subs) > 0 {
		return false
	}
	h.last = e.ID
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
			h.log.Warn("dropping a subscriber that fell behind")
			delete(h.subs, ch)
			close(ch)
		}
	}
	return true
}

// closeAll ends every subscription, closing its channel, and says how many there were;
// marker, when not 0, is the pruned marker the hub moves past.
func (h *Hub) closeAll(marker int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = max(h.last, marker)
	n := len(h.subs)
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
	return n
}
