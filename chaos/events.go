package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
)

// EventWatch follows the LRP event stream through the front, as a router does, and checks
// that no event arrives twice or out of order. Whenever its stream breaks (the replica that
// served it killed, the database down) it subscribes again with Last-Event-ID: the last id
// it saw.
type EventWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	first, last int64
	received    int
	duplicates  int // ids not above the one before them
	reconnects  int
	ids         map[int64]bool
}

// WatchEvents subscribes until Stop.
func WatchEvents(c *Cluster) *EventWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &EventWatch{cancel: cancel, done: make(chan struct{}), ids: map[int64]bool{}}
	go w.run(ctx, c)
	return w
}

func (w *EventWatch) run(ctx context.Context, c *Cluster) {
	defer close(w.done)
	for ctx.Err() == nil {
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		events, err := c.BBS.EventsAfter(ctx, last)
		if err != nil { // no replica answers now: subscribe again shortly
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		for e := range events {
			w.mu.Lock()
			w.received++
			if w.first == 0 {
				w.first = e.ID
			}
			if e.ID <= w.last || w.ids[e.ID] {
				w.duplicates++
			} else {
				w.last = e.ID
			}
			w.ids[e.ID] = true
			w.mu.Unlock()
		}
		if ctx.Err() == nil {
			w.mu.Lock()
			w.reconnects++
			w.mu.Unlock()
		}
	}
}

// EventResult is what a watch saw.
type EventResult struct {
	Received, Duplicates, Reconnects int
	// Missing are the events of the store's log between the first and the last the watch
	// saw that it never received (task events aside: they have a stream of their own).
	Missing int
}

// OK reports no event twice, out of order or missing.
func (r EventResult) OK() bool { return r.Duplicates == 0 && r.Missing == 0 }

func (r EventResult) String() string {
	return fmt.Sprintf("%d received, %d reconnects, %d twice or out of order, %d missing", r.Received, r.Reconnects, r.Duplicates, r.Missing)
}

// Stop ends the watch and compares what it saw with the store's log.
func (w *EventWatch) Stop(ctx context.Context, c *Cluster) (EventResult, error) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	r := EventResult{Received: w.received, Duplicates: w.duplicates, Reconnects: w.reconnects}
	if w.first == 0 {
		return r, nil
	}
	var ids []int64
	err := retry(ctx, func(ctx context.Context) error {
		rows, err := c.DB().QueryContext(ctx, `SELECT id FROM events WHERE id BETWEEN $1 AND $2 AND name NOT LIKE 'task%' AND name <> $3`,
			w.first, w.last, db.EventsPruned)
		if err != nil {
			return err
		}
		defer rows.Close()
		ids = ids[:0]
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return r, fmt.Errorf("reading the event log: %w", err)
	}
	for _, id := range ids {
		if !w.ids[id] {
			r.Missing++
		}
	}
	return r, nil
}
