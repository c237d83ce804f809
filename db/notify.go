package db

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
	"go.uber.org/zap"
)

// ListenerApplicationName is the application_name of the notification connection (unless
// the store's URL names one), so that operators, and tests that cut it, can tell it from
// the pool's connections in pg_stat_activity.
const ListenerApplicationName = "bbs-notifications"

// Reconnection back-off of the listening connection: the first attempt after a loss comes at
// once (or minReconnect after the previous connect), the next ones twice as late each time,
// up to maxReconnect.
const (
	minReconnect = 100 * time.Millisecond
	maxReconnect = 10 * time.Second
)

// Notifier is the process's one listening connection to PostgreSQL, shared by everything
// that wakes on a notification: the event hub, placement, rollout waits. One connection,
// however many subscribers, because each listening connection is a PostgreSQL backend held
// for good, and one place to get reconnection right: after a lost connection every
// subscriber is told to resync, since a notification sent meanwhile is gone for good.
//
// Subscriptions are coalescing: a subscriber that is busy when several notifications arrive
// wakes once. Get it from Store.Notifications.
type Notifier struct {
	listener *pq.Listener
	log      *zap.Logger
	failing  bool // a connection attempt failed since the last success; pq's goroutine only

	mu        sync.Mutex
	closed    bool
	listening map[string]*listenState
	channels  map[string]*channelSubs
}

// listenState is a channel's LISTEN, issued once, for good.
type listenState struct {
	done chan struct{} // closed when LISTEN is in place, or failed
	err  error
}

// channelSubs are one channel's subscriptions: to every notification, or by payload.
type channelSubs struct {
	all  map[*Subscription]struct{}
	keys map[string]map[*Subscription]struct{}
}

// newNotifier starts listening on dsn's database in the background: a database that is down
// delays notifications without failing anyone, and subscribers resync once it is back.
func newNotifier(dsn string, log *zap.Logger) *Notifier {
	n := &Notifier{
		log:       log.Named("notifications"),
		listening: map[string]*listenState{},
		channels:  map[string]*channelSubs{},
	}
	// Open has parsed dsn already: an error here cannot happen, and would only cost the name.
	named, err := withParameter(dsn, "application_name", ListenerApplicationName)
	if err != nil {
		named = dsn
	}
	n.listener = pq.NewListener(named, minReconnect, maxReconnect, n.event)
	go n.run()
	return n
}

// event logs the listening connection's trouble, from pq's connection goroutine. pq itself
// signals a reconnection (Notify receives nil, see run); a first connection that follows
// failed attempts is signalled here, as subscribers may have waited through the outage.
func (n *Notifier) event(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventConnectionAttemptFailed:
		n.failing = true
		n.log.Warn("cannot connect the notification listener; retrying with back-off", zap.Error(err))
	case pq.ListenerEventDisconnected:
		n.log.Warn("notification listener lost its connection; reconnecting", zap.Error(err))
	case pq.ListenerEventReconnected:
		n.failing = false
		n.log.Info("notification listener reconnected; every subscriber resyncs")
	case pq.ListenerEventConnected:
		if n.failing {
			n.failing = false
			n.log.Info("notification listener connected; every subscriber resyncs")
			n.resyncAll()
		}
	}
}

// run hands notifications out until the listener closes its channel (after Close). It reads
// to the end, so that pq never blocks on a send nobody receives.
func (n *Notifier) run() {
	for m := range n.listener.Notify {
		if m == nil {
			// pq sends nil once a lost connection is back and listening again: what was
			// notified meanwhile is lost, so everyone re-reads.
			n.resyncAll()
			continue
		}
		n.dispatch(m.Channel, m.Extra)
	}
}

// Subscribe returns a subscription to every notification on channel, and to resyncs.
// It ends with ctx or its Close.
func (n *Notifier) Subscribe(ctx context.Context, channel string) *Subscription {
	return n.SubscribeKey(ctx, channel, "")
}

// SubscribeKey returns a subscription to the notifications on channel whose payload is key
// (a notification with an empty payload concerns every key), and to resyncs: a rollout's
// wait hears only its own LRP, whatever the others do. An empty key subscribes to every
// notification of the channel. The subscription ends with ctx or its Close.
//
// The first subscription of a channel issues LISTEN in the background, and a notification
// sent before it is in place is not seen; Listen waits for it, where that matters.
func (n *Notifier) SubscribeKey(ctx context.Context, channel, key string) *Subscription {
	c := make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, n: n, channel: channel, key: key}
	s.unsubscribe = sync.OnceFunc(func() { n.remove(s) })
	n.mu.Lock()
	cs := n.channels[channel]
	if cs == nil {
		cs = &channelSubs{all: map[*Subscription]struct{}{}, keys: map[string]map[*Subscription]struct{}{}}
		n.channels[channel] = cs
	}
	if key == "" {
		cs.all[s] = struct{}{}
	} else {
		if cs.keys[key] == nil {
			cs.keys[key] = map[*Subscription]struct{}{}
		}
		cs.keys[key][s] = struct{}{}
	}
	n.listenLocked(channel)
	n.mu.Unlock()
	s.stopAfter = context.AfterFunc(ctx, s.unsubscribe)
	return s
}

// Listen makes sure channel is listened to and waits until the LISTEN is in place (across
// reconnections, if need be), ctx ends, or the notifier closes.
func (n *Notifier) Listen(ctx context.Context, channel string) error {
	n.mu.Lock()
	st := n.listenLocked(channel)
	n.mu.Unlock()
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listenLocked issues channel's LISTEN unless it was; n.mu is held.
func (n *Notifier) listenLocked(channel string) *listenState {
	if st := n.listening[channel]; st != nil {
		return st
	}
	st := &listenState{done: make(chan struct{})}
	n.listening[channel] = st
	go func() {
		// pq's Listen returns once the server acknowledged, which, with the connection
		// down, is after a reconnection; pq re-issues it on every reconnection itself.
		err := n.listener.Listen(channel)
		n.mu.Lock()
		defer n.mu.Unlock()
		if err != nil {
			delete(n.listening, channel) // the next subscription tries again
			if !n.closed && !errors.Is(err, net.ErrClosed) {
				n.log.Error("listen for notifications; subscribers fall back on polling",
					zap.String("channel", channel), zap.Error(err))
			}
		}
		st.err = err
		close(st.done)
	}()
	return st
}

// dispatch wakes the subscriptions a notification concerns.
func (n *Notifier) dispatch(channel, payload string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cs := n.channels[channel]
	if cs == nil {
		return
	}
	for s := range cs.all {
		s.wake(false)
	}
	if payload != "" {
		for s := range cs.keys[payload] {
			s.wake(false)
		}
		return
	}
	for _, subs := range cs.keys {
		for s := range subs {
			s.wake(false)
		}
	}
}

// resyncAll tells every subscription, of every key of every channel, to re-read.
func (n *Notifier) resyncAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, cs := range n.channels {
		for s := range cs.all {
			s.wake(true)
		}
		for _, subs := range cs.keys {
			for s := range subs {
				s.wake(true)
			}
		}
	}
}

func (n *Notifier) remove(s *Subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cs := n.channels[s.channel]
	if cs == nil {
		return
	}
	if s.key == "" {
		delete(cs.all, s)
		return
	}
	delete(cs.keys[s.key], s)
	if len(cs.keys[s.key]) == 0 {
		delete(cs.keys, s.key)
	}
}

// Subscribers is how many subscriptions to channel are open (for tests and metrics).
func (n *Notifier) Subscribers(channel string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	cs := n.channels[channel]
	if cs == nil {
		return 0
	}
	total := len(cs.all)
	for _, subs := range cs.keys {
		total += len(subs)
	}
	return total
}

// Close stops listening and closes the connection. Subscriptions stay open but hear nothing
// more (their channels are not closed, so that selects on them do not spin); their owners'
// safety polls carry on.
func (n *Notifier) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	return n.listener.Close()
}

// Subscription is one subscriber's wake-up channel.
type Subscription struct {
	// C receives after each notification the subscription matches, and after each resync;
	// at most one value is pending, so a busy subscriber wakes once for many. C is never
	// closed.
	C <-chan struct{}

	c           chan struct{}
	resync      atomic.Bool
	n           *Notifier
	channel     string
	key         string
	unsubscribe func()
	stopAfter   func() bool
}

// wake signals the subscriber without blocking: a pending value covers this wake-up too.
// The resync flag is set first, so that a subscriber woken by it sees it.
func (s *Subscription) wake(resync bool) {
	if resync {
		s.resync.Store(true)
	}
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Resynced reports whether a resync was signalled since the last call (and clears it): the
// listening connection was lost, so notifications may have been missed and whatever the
// subscriber follows must be re-read in full, not just what a notification names.
func (s *Subscription) Resynced() bool { return s.resync.Swap(false) }

// Close ends the subscription; calling it again does nothing.
func (s *Subscription) Close() {
	s.stopAfter()
	s.unsubscribe()
}
