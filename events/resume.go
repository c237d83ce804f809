package events

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// replayBatch is how many events SubscribeAfter reads from the log at a time.
const replayBatch = 1000

// SubscribeAfter is Subscribe for a subscriber that has had every event up to the one with id
// after, and lost its stream (an event stream resumed with Last-Event-ID, when the replica
// that served it died): the events after it that the hub has already passed on are read from
// the log, then the live ones follow — each once, in id order — so that it misses none. The
// channel closes, as Subscribe's does, when the subscriber falls behind, when the log cannot
// be read, and when events it had not had were pruned from the log: it must then re-read the
// state, as after any lost stream.
func (h *Hub) SubscribeAfter(ctx context.Context, after int64) (<-chan model.Event, func()) {
	live, cancelLive, passed := h.subscribe()
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan model.Event, h.opts.Buffer)
	go func() {
		defer close(out)
		defer cancelLive()
		send := func(e model.Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		sent := after
	replay:
		for sent < passed {
			evs, err := h.src.EventsAfter(ctx, sent, replayBatch)
			if err != nil {
				if ctx.Err() == nil {
					h.log.Info("cannot replay the events a resumed stream missed; ending it", zap.Error(err))
				}
				return
			}
			for _, e := range evs {
				if e.ID > passed {
					break replay // the live channel has it
				}
				if e.Name == db.EventsPruned || !send(e) {
					return
				}
				sent = e.ID
			}
			if len(evs) < replayBatch {
				break
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-live:
				if !ok {
					return
				}
				if e.ID > sent && !send(e) {
					return
				}
			}
		}
	}()
	return out, cancel
}
