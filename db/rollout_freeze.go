package db

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// freezeRow is the one row of rollout_freeze.
type freezeRow struct {
	Frozen     bool   `db:"frozen"`
	Reason     string `db:"reason"`
	Generation int64  `db:"generation"`
	ChangedAt  int64  `db:"changed_at"`
}

const freezeColumns = `frozen, reason, generation, COALESCE((extract(epoch FROM changed_at) * 1e9)::bigint, 0) AS changed_at`

func (r freezeRow) model() model.RolloutFreeze {
	return model.RolloutFreeze{Frozen: r.Frozen, Reason: r.Reason, Generation: r.Generation, ChangedAt: r.ChangedAt}
}

// FreezeState is the fleet's freeze as it stands: what a rollout or a group workflow reads
// when it starts or resumes (through activities.Rollouts.RolloutGate).
func (s *Store) FreezeState(ctx context.Context) (model.RolloutFreeze, error) {
	var r freezeRow
	if err := s.db.GetContext(ctx, &r, `SELECT `+freezeColumns+` FROM rollout_freeze`); err != nil {
		return model.RolloutFreeze{}, mapError(err)
	}
	return r.model(), nil
}

// SetFreeze freezes (with reason) or unfreezes the fleet and returns the freeze and whether
// it changed; each change takes the next generation. The row lock it takes waits for every
// start of a rollout in flight (checkFreeze), and every later start sees the change.
func (s *Store) SetFreeze(ctx context.Context, frozen bool, reason string) (out model.RolloutFreeze, changed bool, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var before freezeRow
		if err := tx.GetContext(ctx, &before, `SELECT `+freezeColumns+` FROM rollout_freeze FOR UPDATE`); err != nil {
			return err
		}
		if before.Frozen == frozen && (!frozen || before.Reason == reason) {
			out = before.model()
			return nil
		}
		if !frozen {
			reason = ""
		}
		var r freezeRow
		if err := tx.GetContext(ctx, &r, `UPDATE rollout_freeze SET frozen = $1, reason = $2, generation = generation + 1,
    changed_at = now() RETURNING `+freezeColumns, frozen, reason); err != nil {
			return err
		}
		out, changed = r.model(), true
		return nil
	})
	return out, changed, mapError(err)
}

// checkFreeze refuses (Frozen) to start a rollout — or a rollout group, what names which —
// while the fleet is frozen, unless its strategy breaks the glass. It holds the freeze row
// FOR SHARE until the transaction ends: starts do not wait on each other, and a freeze waits
// for those in flight (SetFreeze).
func checkFreeze(ctx context.Context, tx *sqlx.Tx, what string, s *model.RolloutStrategy) error {
	var r freezeRow
	if err := tx.GetContext(ctx, &r, `SELECT `+freezeColumns+` FROM rollout_freeze FOR SHARE`); err != nil {
		return err
	}
	if r.Frozen && (s == nil || s.BreakGlass == nil) {
		return model.Errorf(model.ErrFrozen, "rollouts are frozen (%s): %s does not start; give strategy.break_glass with a reason to pass",
			r.Reason, what)
	}
	return nil
}
