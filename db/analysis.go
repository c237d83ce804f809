package db

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// Canary analysis reads windows of the routers' telemetry: a mark snapshots what every live
// router had counted for an LRP (and the last event), and a window is the difference of two
// marks — per router, so that a router that started again in between counts from its start
// — with the crashes logged between them.

// markRouter is one router's counts in a mark.
type markRouter struct {
	RouterID  string                 `json:"router_id"`
	StartedAt int64                  `json:"started_at"`
	Series    []model.RouteTelemetry `json:"series"`
}

// TakeAnalysisMark snapshots the live routers' counts for guid under the rollout's mark
// name and returns when it was taken (Unix nanoseconds). Taking a mark again keeps the
// first snapshot, so that a retried call measures the same window.
func (s *Store) TakeAnalysisMark(ctx context.Context, rolloutID, guid, name string) (int64, error) {
	if _, err := uuidOrInvalid(rolloutID); err != nil {
		return 0, err
	}
	var at int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO analysis_marks (rollout_id, name, last_event, routers)
SELECT $1, $2, (SELECT coalesce(max(id), 0) FROM events), coalesce(jsonb_agg(jsonb_build_object(
    'router_id', r.router_id, 'started_at', (extract(epoch FROM r.started_at) * 1e9)::bigint,
    'series', (SELECT coalesce(jsonb_agg(t.value ORDER BY t.key), '[]') FROM jsonb_each(r.telemetry) t WHERE starts_with(t.key, $3 || '/'))
) ORDER BY r.router_id), '[]')
FROM routers r WHERE r.seen_at > now() - make_interval(secs => $4)
ON CONFLICT (rollout_id, name) DO NOTHING`, rolloutID, name, guid, model.RouterLiveness.Seconds()); err != nil {
			return err
		}
		return tx.GetContext(ctx, &at, `SELECT (extract(epoch FROM taken_at) * 1e9)::bigint FROM analysis_marks
WHERE rollout_id = $1 AND name = $2`, rolloutID, name)
	})
	return at, err
}

// AnalysisWindow is what the canary definition and the others did for guid between two
// marks of a rollout: requests, errors and latency from the routers, crashes from the
// store's log, and how many instances each side has now.
type AnalysisWindow struct {
	From, To         int64
	Canary, Baseline model.AnalysisSide
}

// AnalysisWindow measures the window between the rollout's marks from and to.
func (s *Store) AnalysisWindow(ctx context.Context, rolloutID, guid, canary, from, to string) (AnalysisWindow, error) {
	if _, err := uuidOrInvalid(rolloutID); err != nil {
		return AnalysisWindow{}, err
	}
	type mark struct {
		At        int64    `db:"at"`
		LastEvent int64    `db:"last_event"`
		Routers   jsonText `db:"routers"`
	}
	read := func(name string) (mark, []markRouter, error) {
		var m mark
		err := s.db.GetContext(ctx, &m, `SELECT (extract(epoch FROM taken_at) * 1e9)::bigint AS at, last_event, routers
FROM analysis_marks WHERE rollout_id = $1 AND name = $2`, rolloutID, name)
		if err == sql.ErrNoRows {
			return m, nil, notFound("analysis mark", name)
		}
		if err != nil {
			return m, nil, mapError(err)
		}
		var routers []markRouter
		return m, routers, json.Unmarshal(m.Routers, &routers)
	}
	a, before, err := read(from)
	if err != nil {
		return AnalysisWindow{}, err
	}
	b, after, err := read(to)
	if err != nil {
		return AnalysisWindow{}, err
	}
	var canarySeries, baseSeries []model.RouteTelemetry
	for _, r := range after {
		for _, t := range r.Series {
			d := minus(t, earlier(before, r, t.DefinitionID))
			if t.DefinitionID == canary {
				canarySeries = append(canarySeries, d)
			} else {
				baseSeries = append(baseSeries, d)
			}
		}
	}
	w := AnalysisWindow{From: a.At, To: b.At, Canary: model.Side(canarySeries), Baseline: model.Side(baseSeries)}
	var counts struct {
		CanaryCrashes    int32 `db:"canary_crashes"`
		BaselineCrashes  int32 `db:"baseline_crashes"`
		CanaryInstances  int32 `db:"canary_instances"`
		BaselineInstance int32 `db:"baseline_instances"`
	}
	err = s.db.GetContext(ctx, &counts, `SELECT
    (SELECT count(*) FROM events WHERE id > $3 AND id <= $4 AND name = 'actual_lrp_instance_crashed'
        AND process_guid = $1 AND data->>'definition_id' = $2) AS canary_crashes,
    (SELECT count(*) FROM events WHERE id > $3 AND id <= $4 AND name = 'actual_lrp_instance_crashed'
        AND process_guid = $1 AND data->>'definition_id' <> $2) AS baseline_crashes,
    (SELECT count(*) FROM actual_lrps WHERE process_guid = $1 AND definition_id = $2 AND NOT retiring) AS canary_instances,
    (SELECT count(*) FROM actual_lrps WHERE process_guid = $1 AND definition_id <> $2 AND NOT retiring) AS baseline_instances`,
		guid, canary, a.LastEvent, b.LastEvent)
	if err != nil {
		return AnalysisWindow{}, mapError(err)
	}
	w.Canary.Crashes, w.Canary.Instances = counts.CanaryCrashes, counts.CanaryInstances
	w.Baseline.Crashes, w.Baseline.Instances = counts.BaselineCrashes, counts.BaselineInstance
	return w, nil
}

// earlier is router r's series of def in an earlier mark, when the router has not started
// again since: nil means the window counts everything r counted.
func earlier(before []markRouter, r markRouter, def string) *model.RouteTelemetry {
	for _, b := range before {
		if b.RouterID != r.RouterID || b.StartedAt != r.StartedAt {
			continue
		}
		for i := range b.Series {
			if b.Series[i].DefinitionID == def {
				return &b.Series[i]
			}
		}
	}
	return nil
}

// minus is t less what an earlier snapshot of it had counted.
func minus(t model.RouteTelemetry, e *model.RouteTelemetry) model.RouteTelemetry {
	if e == nil {
		return t
	}
	out := t
	out.Requests -= e.Requests
	out.Errors -= e.Errors
	out.DurationUS -= e.DurationUS
	out.Latency = make([]int64, len(t.Latency))
	for i := range t.Latency {
		out.Latency[i] = t.Latency[i]
		if i < len(e.Latency) {
			out.Latency[i] -= e.Latency[i]
		}
	}
	return out
}

// RecordVerdict adds a verdict to the rollout's analysis list, with its event; a verdict of a
// window already recorded (a retry) changes nothing.
func (s *Store) RecordVerdict(ctx context.Context, rolloutID string, v model.AnalysisVerdict) error {
	if _, err := uuidOrInvalid(rolloutID); err != nil {
		return err
	}
	raw, err := json.Marshal([]model.AnalysisVerdict{v})
	if err != nil {
		return err
	}
	key, err := json.Marshal([]map[string]string{{"window": v.Window}})
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var r rolloutRow
		err := tx.GetContext(ctx, &r, `UPDATE rollouts SET analysis = analysis || $2::jsonb
WHERE id = $1 AND NOT analysis @> $3::jsonb RETURNING `+rolloutColumns, rolloutID, string(raw), string(key))
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, event(model.EventRolloutChanged, r.model()))
	})
}
