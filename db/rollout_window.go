package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// windowRow is one row of rollout_windows.
type windowRow struct {
	Name      string   `db:"name"`
	Schedule  jsonText `db:"schedule"`
	UpdatedAt int64    `db:"updated_at"`
}

const windowColumns = `name, schedule, (extract(epoch FROM updated_at) * 1e9)::bigint AS updated_at`

func (r windowRow) model() (model.RolloutWindow, error) {
	w := model.RolloutWindow{Name: r.Name, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal(r.Schedule, &w.Schedule); err != nil {
		return w, fmt.Errorf("stored schedule of rollout window %q: %w", r.Name, err)
	}
	return w, nil
}

// UpsertRolloutWindow creates the window or replaces its schedule; it must have been
// validated. created says which.
func (s *Store) UpsertRolloutWindow(ctx context.Context, w model.RolloutWindow) (out *model.RolloutWindow, created bool, err error) {
	schedule, err := json.Marshal(w.Schedule)
	if err != nil {
		return nil, false, err
	}
	var r struct {
		windowRow
		Created bool `db:"created"`
	}
	err = s.db.GetContext(ctx, &r, `INSERT INTO rollout_windows (name, schedule) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET schedule = EXCLUDED.schedule, updated_at = now()
RETURNING `+windowColumns+`, (xmax = 0) AS created`, w.Name, jsonText(schedule))
	if err != nil {
		return nil, false, mapError(err)
	}
	m, err := r.model()
	return &m, r.Created, err
}

// RolloutWindow returns the window of the name (ResourceNotFound when there is none).
func (s *Store) RolloutWindow(ctx context.Context, name string) (*model.RolloutWindow, error) {
	var r windowRow
	err := s.db.GetContext(ctx, &r, `SELECT `+windowColumns+` FROM rollout_windows WHERE name = $1`, name)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout window", name)
	}
	if err != nil {
		return nil, mapError(err)
	}
	w, err := r.model()
	return &w, err
}

// RolloutWindows lists every window by name.
func (s *Store) RolloutWindows(ctx context.Context) ([]model.RolloutWindow, error) {
	var rows []windowRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+windowColumns+` FROM rollout_windows ORDER BY name`); err != nil {
		return nil, mapError(err)
	}
	out := make([]model.RolloutWindow, 0, len(rows))
	for _, r := range rows {
		w, err := r.model()
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// DeleteRolloutWindow removes the window. It refuses (ResourceConflict, naming them) while a
// rollout under way or an LRP's default strategy names it: the rollout would hold for ever,
// the LRP's next update be refused. The window's row is locked first, so that a rollout
// starting meanwhile (which takes it FOR SHARE, requireWindow) is either seen here or
// refused there.
func (s *Store) DeleteRolloutWindow(ctx context.Context, name string) error {
	return mapError(s.inTx(ctx, func(tx *sqlx.Tx) error {
		var found string
		err := tx.GetContext(ctx, &found, `SELECT name FROM rollout_windows WHERE name = $1 FOR UPDATE`, name)
		if err == sql.ErrNoRows {
			return notFound("rollout window", name)
		}
		if err != nil {
			return err
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `SELECT 'the rollout of ' || process_guid FROM rollouts
WHERE state IN `+inProgressStates+` AND strategy->>'window' = $1
UNION ALL
SELECT 'the default strategy of ' || process_guid FROM desired_lrps WHERE rollout_strategy->>'window' = $1
UNION ALL
SELECT 'rollout group ' || group_id FROM rollout_groups
WHERE state NOT IN ('completed', 'aborted') AND spec->>'window' = $1
ORDER BY 1 LIMIT 11`, name); err != nil {
			return err
		}
		if len(users) > 0 {
			more := ""
			if len(users) > 10 {
				users, more = users[:10], ", ..."
			}
			return model.Errorf(model.ErrResourceConflict, "rollout window %q is named by %s%s: delete it once none does",
				name, strings.Join(users, ", "), more)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM rollout_windows WHERE name = $1`, name)
		return err
	}))
}

// requireWindow refuses (InvalidRequest) a strategy naming a window that does not exist, and
// holds the window's row FOR SHARE until the transaction ends, so that it cannot be deleted
// under the rollout or default being written (DeleteRolloutWindow).
func requireWindow(ctx context.Context, tx *sqlx.Tx, field string, s *model.RolloutStrategy) error {
	if s == nil || s.Window == nil {
		return nil
	}
	var found string
	err := tx.GetContext(ctx, &found, `SELECT name FROM rollout_windows WHERE name = $1 FOR SHARE`, *s.Window)
	if err == sql.ErrNoRows {
		return model.Errorf(model.ErrInvalidRequest, "%s.window: no rollout window %q is defined (POST /v1/rollout_windows/upsert)", field, *s.Window)
	}
	return err
}

// RolloutsNamingWindow lists the rollouts under way whose strategy names the window: those
// its upsert must tell.
func (s *Store) RolloutsNamingWindow(ctx context.Context, name string) ([]model.Rollout, error) {
	var rows []rolloutRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+rolloutColumns+` FROM rollouts
WHERE state IN `+inProgressStates+` AND strategy->>'window' = $1 ORDER BY process_guid`, name); err != nil {
		return nil, mapError(err)
	}
	out := make([]model.Rollout, len(rows))
	for i := range rows {
		out[i] = rows[i].model()
	}
	return out, nil
}

// requireResolvedWindow is requireWindow for a rollout's resolved strategy (its column).
func requireResolvedWindow(ctx context.Context, tx *sqlx.Tx, raw jsonText) error {
	s, err := decodeStrategy(raw)
	if err != nil {
		return err
	}
	return requireWindow(ctx, tx, "strategy", s)
}
