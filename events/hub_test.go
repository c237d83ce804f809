package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var ctx = context.Background()

// pausable is the store's log, which the test can stop the hub from reading: a hub that
// stalls (a slow database, a stuck process) while the log is pruned.
type pausable struct {
	*db.Store
	mu sync.Mutex
}

func (p *pausable) EventsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Store.EventsAfter(ctx, after, limit)
}

func (p *pausable) EventIDsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Store.EventIDsAfter(ctx, after, limit)
}

// startHub runs a hub over s until the test ends.
func startHub(t *testing.T, s *db.Store) (*events.Hub, *pausable) {
	t.Helper()
	src := &pausable{Store: s}
	hub := events.NewHub(src, s.Notifications(), events.Options{GapWait: 100 * time.Millisecond, Poll: 100 * time.Millisecond}, zaptest.NewLogger(t))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	return hub, src
}

func addEvent(t *testing.T, s *db.Store, name string) int64 {
	t.Helper()
	var id int64
	if err := s.DB().GetContext(ctx, &id, `INSERT INTO events (name, data) VALUES ($1, '{}') RETURNING id`, name); err != nil {
		t.Fatal(err)
	}
	return id
}

// following subscribes and returns once the hub delivers to the subscription (the hub reads
// where the log ends when it starts, which may be after a first event).
func following(t *testing.T, hub *events.Hub, s *db.Store) (<-chan model.Event, func()) {
	t.Helper()
	ch, stop := hub.Subscribe()
	deadline := time.Now().Add(10 * time.Second)
	for {
		id := addEvent(t, s, "probe")
		select {
		case e := <-ch:
			for e.ID != id {
				e = next(t, ch)
			}
			return ch, stop
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the hub delivers nothing")
			}
		}
	}
}

func next(t *testing.T, ch <-chan model.Event) model.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the subscription was dropped")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return model.Event{}
}

// A hub that read everything loses nothing when the log is pruned, even of the event it read
// last, nor when a rolled-back transaction leaves a hole in the ids: its subscribers stay.
func TestHubFollowsAPrunedLog(t *testing.T) {
	s := dbtest.NewStore(t)
	hub, _ := startHub(t, s)
	ch, stop := following(t, hub, s)
	defer stop()
	if _, err := s.PruneEvents(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	id := addEvent(t, s, model.EventDesiredLRPCreated)
	if e := next(t, ch); e.ID != id || e.Name != model.EventDesiredLRPCreated {
		t.Fatalf("got %+v after pruning, want event %d", e, id)
	}
	tx := s.DB().MustBegin()
	tx.MustExec(`INSERT INTO events (name, data) VALUES ('rolled back', '{}')`)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	id = addEvent(t, s, model.EventDesiredLRPChanged)
	if e := next(t, ch); e.ID != id || e.Name != model.EventDesiredLRPChanged {
		t.Fatalf("got %+v after a hole, want event %d", e, id)
	}
}

// A hub that stalled while events it had not read were pruned drops its subscribers, who
// missed them and must re-read the state (as when they fall behind), instead of skipping
// the hole as if nothing were lost; it goes on for new subscribers.
func TestHubDropsSubscribersWhenUnreadEventsWerePruned(t *testing.T) {
	s := dbtest.NewStore(t)
	hub, src := startHub(t, s)
	ch, stop := following(t, hub, s)
	defer stop()

	src.mu.Lock() // the hub stalls
	var lost []int64
	for range 5 {
		lost = append(lost, addEvent(t, s, model.EventActualLRPChanged))
	}
	kept := addEvent(t, s, model.EventActualLRPChanged)
	var before int
	if err := s.DB().GetContext(ctx, &before, `SELECT count(*) FROM events WHERE id < $1`, kept); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneEvents(ctx, time.Hour, 1); err != nil || n != before {
		t.Fatalf("pruned %d, %v, want all %d before the newest, the 5 the hub had not read among them", n, err, before)
	}
	src.mu.Unlock()

	waitDropped(t, ch, lost[0])
	ch2, stop2 := hub.Subscribe()
	defer stop2()
	id := addEvent(t, s, model.EventActualLRPRemoved)
	// The hub may not have passed the kept event yet when the new subscriber came (it
	// drops the subscribers as it reads the marker, before the event after it): then the
	// kept event is the subscriber's first, and the new one comes next.
	e := next(t, ch2)
	if e.ID == kept {
		e = next(t, ch2)
	}
	if e.ID != id {
		t.Fatalf("a new subscriber got %d, want %d (after the kept %d)", e.ID, id, kept)
	}
}

// waitDropped waits for ch to close, with no event from lostFrom on delivered before.
func waitDropped(t *testing.T, ch <-chan model.Event, lostFrom int64) {
	t.Helper()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return
			}
			if e.ID >= lostFrom {
				t.Fatalf("got event %d (%s) before being dropped: the loss went unnoticed", e.ID, e.Name)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the subscriber was not dropped")
		}
	}
}

// quietSource counts the hub's reads with data and without, and can act on a read without.
type quietSource struct {
	*db.Store
	mu              sync.Mutex
	withData, quiet int
	onQuiet         func(read []model.Event)
}

func (q *quietSource) EventsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	evs, err := q.Store.EventsAfter(ctx, after, limit)
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(evs) > 0 {
		q.withData++
	}
	return evs, err
}

func (q *quietSource) EventIDsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	evs, err := q.Store.EventIDsAfter(ctx, after, limit)
	q.mu.Lock()
	onQuiet := q.onQuiet
	if len(evs) > 0 {
		q.quiet++
		q.onQuiet = nil
	}
	q.mu.Unlock()
	if len(evs) > 0 && onQuiet != nil {
		onQuiet(evs)
	}
	return evs, err
}

func (q *quietSource) counts() (withData, quiet int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.withData, q.quiet
}

// A hub nobody subscribes to follows the log's ids without reading the events' data; one who
// subscribes while it reads so gets every event after the subscription all the same, with its
// data (the batch is read again), and the events after.
func TestHubWithoutSubscribersReadsNoData(t *testing.T) {
	s := dbtest.NewStore(t)
	src := &quietSource{Store: s}
	hub := events.NewHub(src, s.Notifications(), events.Options{GapWait: 100 * time.Millisecond, Poll: 50 * time.Millisecond}, zaptest.NewLogger(t))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Events until the hub reads one (it starts where the log ends when it starts).
	testwait.Until(t, 10*time.Second, 100*time.Millisecond, "the hub to read events quietly", func() bool {
		addEvent(t, s, model.EventDesiredLRPCreated)
		time.Sleep(100 * time.Millisecond)
		_, quiet := src.counts()
		return quiet > 0
	})
	if withData, _ := src.counts(); withData != 0 {
		t.Fatalf("the hub read %d batches with their data while nobody subscribed", withData)
	}

	subscribed := make(chan (<-chan model.Event), 1)
	src.mu.Lock()
	src.onQuiet = func([]model.Event) {
		ch, stop := hub.Subscribe()
		t.Cleanup(stop)
		subscribed <- ch
	}
	src.mu.Unlock()
	first := addEvent(t, s, model.EventDesiredLRPChanged)
	second := addEvent(t, s, model.EventDesiredLRPRemoved)
	ch := <-subscribed
	for _, want := range []int64{first, second} {
		if e := next(t, ch); e.ID != want || string(e.Data) != "{}" {
			t.Fatalf("got %+v, want event %d with its data", e, want)
		}
	}
	third := addEvent(t, s, model.EventDesiredLRPChanged)
	if e := next(t, ch); e.ID != third {
		t.Fatalf("got %+v, want event %d", e, third)
	}
}
