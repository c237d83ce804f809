package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// Traffic through the router (ROLLOUTS-NEXT.md section 5): a rollout at a weighted step sets
// its LRP's split (SetTraffic); routers apply it from the event stream and report the
// generation they route by (ReportRouter); the rollout waits until every live router has
// (TrafficWaiting) and then records the split as acknowledged (RecordTrafficAcked). A
// rollout's end, or a new rollout taking its place, gives the LRP back to routing by
// instances in the same transaction (endTraffic).

// SetTraffic gives the LRP of the rollout in progress rolloutID the split weights (nil:
// by instances) and returns it with its generation. Setting the split the LRP already has
// changes nothing and answers its generation, so that a retried call is not a new
// generation. A rollout no longer in progress cannot set a split (NoUpdateInProgress):
// its end already gave the LRP back to routing by instances.
func (s *Store) SetTraffic(ctx context.Context, rolloutID string, weights map[string]int32) (model.TrafficSplit, error) {
	var out model.TrafficSplit
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := lockRolloutAfterLRP(ctx, tx, rolloutID)
		if err != nil {
			return err
		}
		if !r.InProgress() {
			return model.Errorf(model.ErrNoUpdateInProgress, "rollout %s is %s", rolloutID, r.State)
		}
		var cur struct {
			Traffic    jsonText `db:"traffic"`
			Generation int64    `db:"traffic_generation"`
		}
		if err := tx.GetContext(ctx, &cur, `SELECT traffic, traffic_generation FROM desired_lrps WHERE process_guid = $1`, r.ProcessGUID); err != nil {
			if err == sql.ErrNoRows {
				return notFound("desired LRP", r.ProcessGUID)
			}
			return err
		}
		have, err := decodeWeights(cur.Traffic)
		if err != nil {
			return err
		}
		out = model.TrafficSplit{ProcessGUID: r.ProcessGUID, Generation: cur.Generation, Weights: have}
		if maps.Equal(have, weights) && (len(weights) > 0 || cur.Traffic == nil) {
			return nil
		}
		split, err := writeTraffic(ctx, tx, r.ProcessGUID, weights)
		if err != nil {
			return err
		}
		out = split
		return appendEvents(ctx, tx, event(model.EventTrafficChanged, out))
	})
	return out, err
}

// WithdrawWeight takes the new definition's weight of the rollout in progress rolloutID to
// 0 when its LRP routes by weight — the first thing an abort or a cancel does, before the
// workflow hears of it (the workflow then sets the same split, which keeps its generation).
// An LRP routed by instances is left as it is: its new definition's instances still carry
// their share until the walk back replaces them. changed says whether it wrote.
func (s *Store) WithdrawWeight(ctx context.Context, rolloutID string) (changed bool, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := lockRolloutAfterLRP(ctx, tx, rolloutID)
		if err != nil || !r.InProgress() {
			return err
		}
		var raw jsonText
		if err := tx.GetContext(ctx, &raw, `SELECT traffic FROM desired_lrps WHERE process_guid = $1`, r.ProcessGUID); err != nil {
			return err
		}
		have, err := decodeWeights(raw)
		if err != nil || have[r.ToDefinitionID] == 0 {
			return err
		}
		split, err := writeTraffic(ctx, tx, r.ProcessGUID, map[string]int32{r.ToDefinitionID: 0})
		if err != nil {
			return err
		}
		changed = true
		return appendEvents(ctx, tx, event(model.EventTrafficChanged, split))
	})
	return changed, err
}

// endTraffic is what a rollout's end does to traffic, in one statement: its LRP routes by
// instances again (with the event) if a weighted step held it, and its analysis marks go
// (its verdicts stay on the row).
func endTraffic(ctx context.Context, tx *sqlx.Tx, guid, rolloutID string) error {
	var gen int64
	err := tx.GetContext(ctx, &gen, `WITH marks AS (DELETE FROM analysis_marks WHERE rollout_id = $2)
UPDATE desired_lrps SET traffic = NULL, traffic_generation = traffic_generation + 1
WHERE process_guid = $1 AND traffic IS NOT NULL RETURNING traffic_generation`, guid, rolloutID)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	return appendEvents(ctx, tx, event(model.EventTrafficChanged, model.TrafficSplit{ProcessGUID: guid, Generation: gen}))
}

// writeTraffic stores weights as guid's split under the next generation.
func writeTraffic(ctx context.Context, tx *sqlx.Tx, guid string, weights map[string]int32) (model.TrafficSplit, error) {
	var raw jsonText
	if len(weights) > 0 {
		b, err := json.Marshal(weights)
		if err != nil {
			return model.TrafficSplit{}, err
		}
		raw = b
	}
	var gen int64
	err := tx.GetContext(ctx, &gen, `UPDATE desired_lrps SET traffic = $2, traffic_generation = traffic_generation + 1
WHERE process_guid = $1 RETURNING traffic_generation`, guid, raw)
	return model.TrafficSplit{ProcessGUID: guid, Generation: gen, Weights: weights}, err
}

func decodeWeights(raw jsonText) (map[string]int32, error) {
	if raw == nil {
		return nil, nil
	}
	var w map[string]int32
	err := json.Unmarshal(raw, &w)
	return w, err
}

// ReportRouter records a router's report: it is live from now, routes by the generations it
// lists, and its telemetry series are the ones given (merged into what it reported before,
// or in place of it when the router started again). Routers not heard of for an hour are
// forgotten.
func (s *Store) ReportRouter(ctx context.Context, r model.RouterReport) error {
	applied, err := json.Marshal(r.Applied)
	if err != nil {
		return err
	}
	series := make(map[string]model.RouteTelemetry, len(r.Telemetry))
	for _, t := range r.Telemetry {
		series[t.ProcessGUID+"/"+t.DefinitionID] = t
	}
	telemetry, err := json.Marshal(series)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `WITH gone AS (DELETE FROM routers WHERE seen_at < now() - interval '1 hour')
INSERT INTO routers (router_id, started_at, seen_at, applied, telemetry)
VALUES ($1, to_timestamp($2::float8 / 1e9), now(), $3, $4)
ON CONFLICT (router_id) DO UPDATE SET seen_at = now(), applied = EXCLUDED.applied,
    telemetry = CASE WHEN routers.started_at = EXCLUDED.started_at
        THEN routers.telemetry || EXCLUDED.telemetry ELSE EXCLUDED.telemetry END,
    started_at = EXCLUDED.started_at`, r.RouterID, r.StartedAt, jsonText(applied), jsonText(telemetry))
	return mapError(err)
}

// TrafficWaiting lists the live routers (heard of within live) that do not yet route guid
// by generation gen or a later one: a step waits until none is left.
func (s *Store) TrafficWaiting(ctx context.Context, guid string, gen int64, live time.Duration) ([]string, error) {
	waiting := []string{}
	err := s.db.SelectContext(ctx, &waiting, `SELECT router_id FROM routers
WHERE seen_at > now() - make_interval(secs => $3) AND COALESCE((applied->>$1)::bigint, 0) < $2
ORDER BY router_id`, guid, gen, live.Seconds())
	return waiting, mapError(err)
}

// RecordTrafficAcked records split as what every router routes the rollout's LRP by, for
// the rollout to report; an older generation than the one recorded changes nothing.
func (s *Store) RecordTrafficAcked(ctx context.Context, rolloutID string, split model.TrafficSplit) error {
	if _, err := uuidOrInvalid(rolloutID); err != nil {
		return err
	}
	var raw jsonText
	if len(split.Weights) > 0 {
		b, err := json.Marshal(split.Weights)
		if err != nil {
			return err
		}
		raw = b
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var r rolloutRow
		err := tx.GetContext(ctx, &r, `UPDATE rollouts SET traffic = $2, traffic_generation = $3
WHERE id = $1 AND traffic_generation < $3 AND state IN `+inProgressStates+` RETURNING `+rolloutColumns, rolloutID, raw, split.Generation)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, event(model.EventRolloutChanged, r.model()))
	})
}

// RouterSeries is one live router's cumulative telemetry of one definition of an LRP.
type RouterSeries struct {
	RouterID  string
	StartedAt int64
	model.RouteTelemetry
}

// RouteTelemetry reads what every live router (heard of within live) counted for guid, by
// router and definition: analysis subtracts two reads of it to judge a window.
func (s *Store) RouteTelemetry(ctx context.Context, guid string, live time.Duration) ([]RouterSeries, error) {
	var rows []struct {
		RouterID  string   `db:"router_id"`
		StartedAt int64    `db:"started_at"`
		Series    jsonText `db:"series"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT router_id, (extract(epoch FROM started_at) * 1e9)::bigint AS started_at, s.value AS series
FROM routers, jsonb_each(telemetry) s
WHERE seen_at > now() - make_interval(secs => $2) AND starts_with(s.key, $1 || '/')
ORDER BY router_id, s.key`, guid, live.Seconds())
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]RouterSeries, 0, len(rows))
	for _, r := range rows {
		var t model.RouteTelemetry
		if err := json.Unmarshal(r.Series, &t); err != nil {
			return nil, err
		}
		out = append(out, RouterSeries{RouterID: r.RouterID, StartedAt: r.StartedAt, RouteTelemetry: t})
	}
	return out, nil
}

// RoutableCounts counts the LRP's instances that routers send requests to, by definition:
// RUNNING, ready and not retiring (what the capacity guard weighs a split against).
func (s *Store) RoutableCounts(ctx context.Context, guid string) (map[string]int32, error) {
	var rows []struct {
		Def string `db:"definition_id"`
		N   int32  `db:"n"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT definition_id, count(*) AS n FROM actual_lrps
WHERE process_guid = $1 AND state = 'RUNNING' AND NOT not_ready AND NOT retiring
GROUP BY definition_id`, guid)
	if err != nil {
		return nil, mapError(err)
	}
	out := make(map[string]int32, len(rows))
	for _, r := range rows {
		out[r.Def] = r.N
	}
	return out, nil
}
