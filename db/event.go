package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// pendingEvent is an event to append in the current transaction.
type pendingEvent struct {
	name string
	data any
}

func event(name string, data any) pendingEvent { return pendingEvent{name: name, data: data} }

func changed[T any](name string, before, after T) pendingEvent {
	return pendingEvent{name: name, data: model.Change[T]{Before: before, After: after}}
}

func instanceEvents(name string, lrps []model.ActualLRP) []pendingEvent {
	out := make([]pendingEvent, len(lrps))
	for i := range lrps {
		out[i] = event(name, lrps[i])
	}
	return out
}

// appendEvents writes events in the caller's transaction with one statement, so that they
// become visible, and are notified, exactly when the change commits.
func appendEvents(ctx context.Context, tx *sqlx.Tx, events ...pendingEvent) error {
	if len(events) == 0 {
		return nil
	}
	names := make([]string, len(events))
	datas := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.data)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", e.name, err)
		}
		names[i], datas[i] = e.name, string(b)
	}
	_, err := tx.ExecContext(ctx, `
INSERT INTO events (name, data) SELECT n, d::json FROM unnest($1::text[], $2::text[]) AS e(n, d)`,
		pq.StringArray(names), pq.StringArray(datas))
	return err
}

// EventsAfter returns up to limit events with ids above after, in id order.
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

// LastEventID is the id of the newest event, 0 when there is none.
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.GetContext(ctx, &id, `SELECT coalesce(max(id), 0) FROM events`)
	return id, mapError(err)
}

// PruneEvents deletes events older than age; subscribers read recent events only.
func (s *Store) PruneEvents(ctx context.Context, age time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM events WHERE created_at < now() - make_interval(secs => $1)`, age.Seconds())
	if err != nil {
		return 0, mapError(err)
	}
	return res.RowsAffected()
}
