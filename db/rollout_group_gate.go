package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// A rollout group holds, as a rollout does, while the fleet is frozen (unless its strategy
// breaks the glass) and while the window it names is closed: it starts no member, and its
// members under way — whose strategies name the group's window and carry its break glass —
// hold at their next index boundary by themselves. The group's decision reads both in its
// transaction (the freeze row and the window's row FOR SHARE, as a rollout's start does), so
// that a freeze committed before it is seen, and one after it waits for it.

// Why a group holds (GroupAdvance.Held).
const (
	HeldFrozen = "frozen"
	HeldWindow = "window"
)

// checkGroupStart refuses a group whose window does not exist (InvalidRequest), or that
// would start while the fleet is frozen without breaking the glass (Frozen).
func checkGroupStart(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec) error {
	if spec.Window != "" {
		if err := requireWindow(ctx, tx, "group", &model.RolloutStrategy{Window: &spec.Window}); err != nil {
			return err
		}
	}
	return checkFreeze(ctx, tx, fmt.Sprintf("rollout group %q", spec.GroupID), spec.Strategy)
}

// groupGate is what holds the group now, said why: "" with no reason when nothing does.
// opensAt is when a closed window next opens (zero when never, or when no window holds).
func (s *Store) groupGate(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec) (held, why string, opensAt time.Time, err error) {
	var f freezeRow
	if err := tx.GetContext(ctx, &f, `SELECT `+freezeColumns+` FROM rollout_freeze FOR SHARE`); err != nil {
		return "", "", time.Time{}, err
	}
	if f.Frozen && (spec.Strategy == nil || spec.Strategy.BreakGlass == nil) {
		return HeldFrozen, "frozen: " + f.Reason, time.Time{}, nil
	}
	if spec.Window == "" {
		return "", "", time.Time{}, nil
	}
	var row windowRow
	err = tx.GetContext(ctx, &row, `SELECT `+windowColumns+` FROM rollout_windows WHERE name = $1 FOR SHARE`, spec.Window)
	if err == sql.ErrNoRows {
		return HeldWindow, fmt.Sprintf("waiting for rollout window %q, which is not defined", spec.Window), time.Time{}, nil
	}
	if err != nil {
		return "", "", time.Time{}, err
	}
	w, err := row.model()
	if err != nil {
		return "", "", time.Time{}, err
	}
	now := s.now()
	open, next := w.GateAt(now)
	if open {
		return "", "", time.Time{}, nil
	}
	why = fmt.Sprintf("waiting for rollout window %q", spec.Window)
	if next > 0 {
		opensAt = time.Unix(0, next).UTC()
		why += " (opens " + opensAt.Format(time.RFC3339) + ")"
	}
	return HeldWindow, why, opensAt, nil
}
