package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// ClaimCommits is how many transactions the grouped claims have tried.
func (s *Store) ClaimCommits() int64 { return s.claims.commits.Load() }

// ClaimsWaiting is how many claim batches wait for the next grouped transaction.
func (s *Store) ClaimsWaiting() int {
	s.claims.mu.Lock()
	defer s.claims.mu.Unlock()
	return len(s.claims.queue)
}

// WithStatementCacheSize bounds each connection's prepared statements (tests of eviction).
func WithStatementCacheSize(n int) Option { return func(s *Store) { s.cacheSize = n } }

// PlanPerCall is the mark that keeps a query unprepared.
const PlanPerCall = planPerCall

// AppendEvents writes events named names with data in one transaction, as a change does.
func (s *Store) AppendEvents(ctx context.Context, names []string, data []any) error {
	events := make([]pendingEvent, len(names))
	for i := range names {
		events[i] = event(names[i], data[i])
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error { return appendEvents(ctx, tx, events...) })
}
