package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/updatable-lrps/bbs/model"
)

// encodeStrategy is a strategy as its jsonb column holds it: NULL for none.
func encodeStrategy(s *model.RolloutStrategy) (jsonText, error) {
	if s == nil {
		return nil, nil
	}
	return json.Marshal(s)
}

// decodeStrategy reads a strategy column (nil for NULL). The store wrote it from a validated
// strategy, so a column it cannot read is corruption, not a client's mistake.
func decodeStrategy(col jsonText) (*model.RolloutStrategy, error) {
	if col == nil {
		return nil, nil
	}
	var s model.RolloutStrategy
	if err := json.Unmarshal(col, &s); err != nil {
		return nil, fmt.Errorf("stored rollout strategy %s: %w", col, err)
	}
	return &s, nil
}

// strategyColumn scans a strategy column (NULL: none), so that a row struct reads it like any
// other column and a column it cannot read fails the scan.
type strategyColumn struct{ s *model.RolloutStrategy }

// Scan reads a json or jsonb column.
func (c *strategyColumn) Scan(src any) error {
	var col jsonText
	if err := col.Scan(src); err != nil {
		return err
	}
	s, err := decodeStrategy(col)
	c.s = s
	return err
}

// failureColumn scans a failure column (NULL: none).
type failureColumn struct{ f *model.RolloutFailure }

// Scan reads a json or jsonb column.
func (c *failureColumn) Scan(src any) error {
	var col jsonText
	if err := col.Scan(src); err != nil || col == nil {
		c.f = nil
		return err
	}
	var f model.RolloutFailure
	if err := json.Unmarshal(col, &f); err != nil {
		return fmt.Errorf("stored rollout failure %s: %w", col, err)
	}
	c.f = &f
	return nil
}

// encodeFailure is a failure as its column holds it: NULL for none.
func encodeFailure(f *model.RolloutFailure) (jsonText, error) {
	if f == nil {
		return nil, nil
	}
	return json.Marshal(f)
}

// resolveStrategy is the strategy a rollout starts with: the request's over the LRP's default
// (its column, as the request's own update may just have set it) over the server's.
func resolveStrategy(req RolloutRequest, lrpDefault jsonText) (jsonText, error) {
	if req.Strategy == nil && lrpDefault == nil && req.Defaults == nil {
		return nil, nil
	}
	def, err := decodeStrategy(lrpDefault)
	if err != nil {
		return nil, err
	}
	resolved := model.ResolveStrategy(req.Strategy, def, req.Defaults)
	return encodeStrategy(&resolved)
}

// checkWeightCapacity refuses a strategy whose weighted steps the LRP's instances cannot
// carry at all: the capacity guard's fewest instances on each side of a weight exceed them
// (one instance cannot be split 10/90). Nothing is written then.
func checkWeightCapacity(raw jsonText, instances int32) error {
	s, err := decodeStrategy(raw)
	if err != nil || s == nil || s.Canary == nil {
		return err
	}
	for i, st := range s.Canary.Steps {
		if st.Weight == nil || *st.Weight == 0 {
			continue
		}
		newMin, oldMin := model.WeightInstances(*st.Weight, instances, model.DefaultWeightHeadroom)
		if newMin+oldMin > instances {
			return model.Errorf(model.ErrInvalidRequest, "strategy.canary.steps[%d].weight %d %% cannot be carried by %d instances: "+
				"the capacity guard needs at least %d of the new definition and %d of the others (%.0f× an even share at most)",
				i, *st.Weight, instances, newMin, oldMin, model.DefaultWeightHeadroom)
		}
	}
	return nil
}

// SetRolloutPace records a rollout's new max_in_flight (set_pace) in its strategy, with a
// rollout_changed event; NoRolloutInProgress once the rollout has ended.
func (s *Store) SetRolloutPace(ctx context.Context, id string, maxInFlight int32) (*model.Rollout, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return nil, err
	}
	var out model.Rollout
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var r rolloutRow
		err := tx.GetContext(ctx, &r, `UPDATE rollouts
SET strategy = jsonb_set(COALESCE(strategy, '{}'), '{max_in_flight}', to_jsonb($2::integer))
WHERE id = $1 AND state IN `+inProgressStates+` RETURNING `+rolloutColumns, id, maxInFlight)
		if err == sql.ErrNoRows {
			return model.Errorf(model.ErrNoRolloutInProgress, "rollout %s is no longer in progress", id)
		}
		if err != nil {
			return err
		}
		out = r.model()
		return appendEvents(ctx, tx, event(model.EventRolloutChanged, out))
	})
	if err != nil {
		return nil, mapError(err)
	}
	return &out, nil
}

// nullInt32 is an optional integer as a parameter: NULL for nil.
func nullInt32(v *int32) sql.NullInt32 {
	if v == nil {
		return sql.NullInt32{}
	}
	return sql.NullInt32{Int32: *v, Valid: true}
}
