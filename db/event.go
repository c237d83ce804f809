package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// EventsChannel is the PostgreSQL notification channel raised by every statement that
// appends events; listeners then read what is new.
const EventsChannel = "bbs_events"

// LRPChangesChannel carries, for every statement that appends events, the process guid of
// each LRP they concern, so that a wait on one LRP wakes only for it.
const LRPChangesChannel = "bbs_lrp_changes"

// PlacementChannel is raised by a statement whose events make work for placement: an
// instance UNCLAIMED, a task PENDING (migration 0011). The auctioneer wakes on it alone.
const PlacementChannel = "bbs_placement"

// pendingEvent is an event to append in the current transaction.
type pendingEvent struct {
	name string
	data any
}

func event(name string, data any) pendingEvent { return pendingEvent{name: name, data: data} }

func changed[T any](name string, before, after T) pendingEvent {
	return pendingEvent{name: name, data: model.Change[T]{Before: before, After: after}}
}

// crashed is the crash event of before, which crashed and became after.
func crashed(before, after model.ActualLRP) pendingEvent {
	return pendingEvent{name: model.EventActualLRPCrashed, data: model.Crash{ActualLRP: after, Before: before}}
}

func instanceEvents(name string, lrps []model.ActualLRP) []pendingEvent {
	out := make([]pendingEvent, len(lrps))
	for i := range lrps {
		out[i] = event(name, lrps[i])
	}
	return out
}

// eventBatch gathers a transaction's events to write them with one statement (flush): each
// write of events is a round trip and fires the events table's statement triggers (the
// notifications), the costliest statement of a rollout's index. Helpers that a transaction
// calls in turn add to the caller's batch, in the order the events happen.
type eventBatch []pendingEvent

func (b *eventBatch) add(events ...pendingEvent) { *b = append(*b, events...) }

// flush writes the batch's events (appendEvents) and empties it.
func (b *eventBatch) flush(ctx context.Context, tx *sqlx.Tx) error {
	err := appendEvents(ctx, tx, (*b)...)
	*b = nil
	return err
}

// appendEvents writes events in the caller's transaction with one statement, so that they
// become visible, and are notified, exactly when the change commits.
func appendEvents(ctx context.Context, tx *sqlx.Tx, events ...pendingEvent) error {
	if len(events) == 0 {
		return nil
	}
	e, err := encodeEvents(events)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO events (name, data, process_guid, placement) `+
		eventRows("$1", "$2", "$3", "$4")+` ORDER BY e.n`, e.Names, e.Data, e.GUIDs, e.Placement)
	return err
}

// encodedEvents are a batch of events encoded for one INSERT: their names in a text array,
// their data as one JSON array, which PostgreSQL takes apart (json_array_elements keeps each
// element's text as written), and what the notification trigger reads of each (GUIDs,
// Placement; migration 0014). A text array of JSON documents cost more: lib/pq escaped every
// quote of every document and PostgreSQL unescaped them (placing 250,000 instances writes
// 500,000 events; the escaping alone was 2 % of the run's CPU).
type encodedEvents struct {
	Names pq.StringArray `db:"event_names"`
	Data  string         `db:"event_data"`
	// GUIDs and Placement are each event's LRP and whether it makes work for placement, NULL
	// where the trigger is to read them from the data (pendingEvent.notice).
	GUIDs     pq.GenericArray `db:"event_guids"`     // of sql.NullString
	Placement pq.GenericArray `db:"event_placement"` // of sql.NullBool
}

// eventRows is the SELECT of the events' rows (name, data, process_guid, placement) from the
// parameters named names, data, guids and placement (encodedEvents' fields in order; a named
// query of a struct embedding encodedEvents names them :event_names, :event_data,
// :event_guids and :event_placement), as e with their order e.n.
func eventRows(names, data, guids, placement string) string {
	return `SELECT (CAST(` + names + ` AS text[]))[e.n], e.data, (CAST(` + guids + ` AS text[]))[e.n],
    (CAST(` + placement + ` AS bool[]))[e.n]
FROM json_array_elements(CAST(` + data + ` AS json)) WITH ORDINALITY AS e(data, n)`
}

// encodeEvents encodes events for one INSERT.
func encodeEvents(events []pendingEvent) (*encodedEvents, error) {
	e := &encodedEvents{Names: make(pq.StringArray, len(events))}
	guids, placement := make([]sql.NullString, len(events)), make([]sql.NullBool, len(events))
	b := make([]byte, 0, 1024*len(events))
	b = append(b, '[')
	for i, ev := range events {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendEventData(b, ev.data); err != nil {
			return nil, fmt.Errorf("encode %s event: %w", ev.name, err)
		}
		e.Names[i] = ev.name
		guids[i], placement[i] = ev.notice()
	}
	e.Data = string(append(b, ']'))
	e.GUIDs, e.Placement = pq.GenericArray{A: guids}, pq.GenericArray{A: placement}
	return e, nil
}

// notice is what the events trigger (migration 0014) reads of the event: the LRP whose
// waiters it wakes, and whether it makes work for placement — for an instance's events, the
// bulk of them, the values the trigger would read from the data; NULL for the others, whose
// data the trigger reads. TestEventNoticesAreTheTriggers holds the two equal.
func (e pendingEvent) notice() (guid sql.NullString, placement sql.NullBool) {
	known := func(g string, p bool) (sql.NullString, sql.NullBool) {
		if !utf8.ValidString(g) || strings.IndexByte(g, 0) >= 0 {
			// Not text PostgreSQL stores: the trigger reads the JSON's version (and refuses a NUL).
			return sql.NullString{}, sql.NullBool{}
		}
		return sql.NullString{String: g, Valid: true}, sql.NullBool{Bool: p, Valid: true}
	}
	makesWork := e.name == model.EventActualLRPCreated || e.name == model.EventActualLRPChanged
	switch d := e.data.(type) {
	case model.ActualLRP:
		return known(d.ProcessGUID, makesWork && d.State == model.StateUnclaimed)
	case model.Change[model.ActualLRP]:
		return known(d.After.ProcessGUID, makesWork && d.After.State == model.StateUnclaimed)
	case model.Crash:
		return known(d.ProcessGUID, makesWork && d.State == model.StateUnclaimed)
	}
	return sql.NullString{}, sql.NullBool{}
}

// appendEventData appends an event's data as encoding/json writes it. Instances, the data of
// most events (every claim, start and retirement), are written by model.ActualLRP.AppendJSON,
// which writes the same bytes without reflection.
func appendEventData(b []byte, data any) ([]byte, error) {
	switch d := data.(type) {
	case model.ActualLRP:
		return d.AppendJSON(b), nil
	case model.Change[model.ActualLRP]:
		b = d.Before.AppendJSON(append(b, `{"before":`...))
		b = d.After.AppendJSON(append(b, `,"after":`...))
		return append(b, '}'), nil
	}
	j, err := json.Marshal(data)
	return append(b, j...), err
}

// EventsAfter returns up to limit events with ids above after, in id order. When events
// the reader had not read yet were pruned, the first is the EventsPruned marker.
func (s *Store) EventsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	var rows []struct {
		ID   int64  `db:"id"`
		Name string `db:"name"`
		Data []byte `db:"data"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, name, data FROM events WHERE id > $1 ORDER BY id LIMIT $2`, after, limit); err != nil {
		return nil, mapError(err)
	}
	out := make([]model.Event, len(rows))
	for i, r := range rows {
		out[i] = model.Event{ID: r.ID, Name: r.Name, Data: r.Data}
	}
	return out, nil
}

// EventIDsAfter is EventsAfter without the events' data: a reader with nobody to hand the
// data to (an event hub without subscribers) still follows the log's ids, its holes and
// the pruned marker, without reading every event's document (a placement of 250,000
// instances writes 500,000 of them).
func (s *Store) EventIDsAfter(ctx context.Context, after int64, limit int) ([]model.Event, error) {
	var out []model.Event
	if err := s.db.SelectContext(ctx, &out, `SELECT id, name FROM events WHERE id > $1 ORDER BY id LIMIT $2`, after, limit); err != nil {
		return nil, mapError(err)
	}
	return out, nil
}

// LastEventID is the id of the newest event, 0 when there is none.
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.GetContext(ctx, &id, `SELECT coalesce(max(id), 0) FROM events`)
	return id, mapError(err)
}

// EventsPruned names the row that stands for pruned events. Pruning rewrites the newest
// event it removes into this marker, which therefore stays the oldest row: EventsAfter
// returns it first to a reader whose cursor is older than the pruning, and only to such a
// reader, which so learns that it missed events (a hole in the ids alone could be a
// rolled-back transaction's).
const EventsPruned = "bbs_events_pruned"

// Defaults of event pruning: the log serves the event stream, whose readers follow it live
// and re-read the state after a lost connection, so it need not outlive that by much; an
// hour of events, at most 100,000 of them (100–200 MB of JSON), covers readers that stall
// for a while and leaves room to look into what just happened with SQL.
const (
	DefaultEventRetention = time.Hour
	DefaultEventsKept     = 100_000
)

// pruneBatch is the most events one call deletes. A log that grew for long (or before
// pruning existed) shrinks over several passes, each of them short, rather than in one
// statement that outlasts the convergence activity's timeout and is rolled back every time.
const pruneBatch = 100_000

// PruneEvents deletes the events older than retention and all but the newest keep, oldest
// first and at most pruneBatch of them, leaving the EventsPruned marker in their place. It
// returns how many it deleted. Age is the committing transaction's start, so an event of a
// long transaction may go up to its length early.
func (s *Store) PruneEvents(ctx context.Context, retention time.Duration, keep int) (int, error) {
	if retention < 0 || keep < 0 {
		return 0, model.Errorf(model.ErrInvalidRequest, "event retention and events kept must not be negative")
	}
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		// The cut is the newest event to go: the newest beyond keep, or the newest older
		// than retention, whichever is newer, but no further than pruneBatch from the oldest.
		// Each OFFSET walks that many ids of the key, so both are skipped when they cannot
		// matter — the common pass, with a log within its bounds: ids being unique, a log
		// whose newest and oldest ids are less than keep apart holds no more than keep
		// events, and the cap (a subquery in the CASE, run only when reached) is needed only
		// when something goes.
		var cut int64
		if err := tx.GetContext(ctx, &cut, `SELECT CASE WHEN want IS NULL THEN 0
    ELSE least(want, (SELECT id FROM events ORDER BY id OFFSET $3 LIMIT 1)) END
FROM (SELECT greatest(
        CASE WHEN (SELECT max(id) - min(id) FROM events) >= $1
            THEN (SELECT id FROM events ORDER BY id DESC OFFSET $1 LIMIT 1) END,
        (SELECT id FROM events WHERE created_at < now() - make_interval(secs => $2)
         ORDER BY created_at DESC, id DESC LIMIT 1)) AS want) c`, keep, retention.Seconds(), pruneBatch-1); err != nil {
			return err
		}
		if cut == 0 {
			return nil
		}
		return tx.GetContext(ctx, &n, `WITH gone AS (DELETE FROM events WHERE id < $1 RETURNING name),
    marked AS (UPDATE events SET name = $2, data = '{}' WHERE id = $1 AND name <> $2 RETURNING 1)
SELECT (SELECT count(*) FROM gone WHERE name <> $2) + (SELECT count(*) FROM marked)`, cut, EventsPruned)
	})
	return n, err
}
