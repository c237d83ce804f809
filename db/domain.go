package db

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// UpsertDomain marks a domain fresh for ttl seconds (0: forever).
func (s *Store) UpsertDomain(ctx context.Context, d model.Domain) error {
	_, err := s.db.ExecContext(ctx, `
INSERT INTO domains (name, expires_at)
VALUES ($1, CASE WHEN $2::bigint = 0 THEN NULL ELSE now() + make_interval(secs => $2::bigint) END)
ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at`, d.Name, d.TTL)
	return mapError(err)
}

// FreshDomains lists the names of the domains whose freshness has not expired.
func (s *Store) FreshDomains(ctx context.Context) ([]string, error) {
	names := []string{}
	err := s.db.SelectContext(ctx, &names, `
SELECT name FROM domains WHERE expires_at IS NULL OR expires_at > now() ORDER BY name`)
	return names, mapError(err)
}
