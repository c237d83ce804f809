package activities

import (
	"context"
	"sync"
	"time"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/db"
	"go.uber.org/zap"
)

// Waiter says when an LRP may have changed, so that waits re-check at once instead of
// polling. Changes returns a channel that receives (coalesced: at most one pending value)
// after each change of the LRP, and a function that ends the subscription; the subscription
// also ends with ctx. The channel is never closed, so a select on it never spins.
type Waiter interface {
	Changes(ctx context.Context, processGUID string) (<-chan struct{}, func())
}

// PGWaiter is a Waiter over PostgreSQL notifications on db.LRPChangesChannel, whose payload
// names the LRP that changed. It holds one listening connection however many waits
// subscribe, and wakes only the waits of that LRP: 1,000 rollouts waiting for their
// instances must neither hold 1,000 connections nor all re-check on every change.
type PGWaiter struct {
	listener *pq.Listener
	log      *zap.Logger
	done     chan struct{}
	closed   sync.Once

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // by process guid
}

// NewPGWaiter listens on dbURL's db.EventsChannel until Close. The connection is made (and
// re-made after a loss) in the background, so a database that is down at start delays
// notifications without failing the worker; waits fall back on their safety tick meanwhile.
func NewPGWaiter(dbURL string, log *zap.Logger) *PGWaiter {
	if log == nil {
		log = zap.NewNop()
	}
	w := &PGWaiter{log: log.Named("waiter"), done: make(chan struct{}), subs: map[string]map[chan struct{}]struct{}{}}
	w.listener = pq.NewListener(dbURL, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil {
			w.log.Warn("change listener", zap.Error(err))
		}
	})
	go func() {
		// Listen blocks until the server acknowledges, possibly across reconnects.
		if err := w.listener.Listen(db.LRPChangesChannel); err != nil {
			select {
			case <-w.done:
			default:
				w.log.Error("listen for changes; waits fall back on polling", zap.Error(err))
			}
		}
	}()
	go w.run()
	return w
}

func (w *PGWaiter) run() {
	for {
		select {
		case <-w.done:
			return
		// pq sends nil after a reconnect: notifications may have been lost meanwhile, so
		// everyone re-checks then.
		case n, ok := <-w.listener.Notify:
			if !ok {
				return
			}
			if n == nil {
				w.wake("")
			} else {
				w.wake(n.Extra)
			}
		}
	}
}

// wake signals the waits of one LRP, or of every LRP when guid is "".
func (w *PGWaiter) wake(guid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g, subs := range w.subs {
		if guid != "" && g != guid {
			continue
		}
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default: // one wake-up is already pending: it covers this change too
			}
		}
	}
}

// Changes implements Waiter.
func (w *PGWaiter) Changes(ctx context.Context, processGUID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs[processGUID] == nil {
		w.subs[processGUID] = map[chan struct{}]struct{}{}
	}
	w.subs[processGUID][ch] = struct{}{}
	w.mu.Unlock()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.subs[processGUID], ch)
			if len(w.subs[processGUID]) == 0 {
				delete(w.subs, processGUID)
			}
			w.mu.Unlock()
		})
	}
	stop := context.AfterFunc(ctx, cancel)
	return ch, func() {
		stop()
		cancel()
	}
}

// Subscribers is how many waits are subscribed now (for tests and metrics).
func (w *PGWaiter) Subscribers() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, subs := range w.subs {
		n += len(subs)
	}
	return n
}

// Close stops listening. Subscribed waits then only see their safety tick.
func (w *PGWaiter) Close() error {
	var err error
	w.closed.Do(func() {
		close(w.done)
		err = w.listener.Close()
	})
	return err
}
