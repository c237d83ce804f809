package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// rolloutRow is one row of rollouts.
type rolloutRow struct {
	ID               string         `db:"id"`
	ProcessGUID      string         `db:"process_guid"`
	Kind             string         `db:"kind"`
	FromDefinitionID string         `db:"from_definition_id"`
	ToDefinitionID   string         `db:"to_definition_id"`
	State            string         `db:"state"`
	CurrentIndex     int32          `db:"current_index"`
	UpdatedInstances int32          `db:"updated_instances"`
	Instances        int32          `db:"instances"`
	GivenUpIndices   pq.Int32Array  `db:"given_up_indices"`
	StartedAt        int64          `db:"started_at"`
	FinishedAt       sql.NullInt64  `db:"finished_at"`
	WorkflowID       string         `db:"workflow_id"`
	RunID            string         `db:"run_id"`
	Reason           string         `db:"reason"`
	Strategy         strategyColumn `db:"strategy"`
	Failure          failureColumn  `db:"failure"`
	RevertFailure    failureColumn  `db:"revert_failure"`
	RevertedTo       string         `db:"reverted_to"`
	StoredPhase      string         `db:"phase"`
	Step             sql.NullInt32  `db:"step"`
	LastControl      string         `db:"last_control"`
	// Traffic is the split the routers last acknowledged (NULL: by instances).
	Traffic           jsonText `db:"traffic"`
	TrafficGeneration int64    `db:"traffic_generation"`
	Analysis          jsonText `db:"analysis"`
	GroupID           string   `db:"group_id"`
}

// inProgressStates is model.RolloutStatesInProgress as an SQL list for `state IN`: literals
// rather than a parameter, so that the planner can match the partial index
// rollouts_one_in_progress, whose predicate is the same list (TestInProgressStatesMatchTheIndex).
var inProgressStates = sqlList(model.RolloutStatesInProgress())

// sqlList quotes words as SQL string literals, in parentheses.
func sqlList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}

const rolloutColumns = `id, process_guid, kind, from_definition_id, to_definition_id, state,
    current_index, updated_instances, instances, given_up_indices,
    (extract(epoch FROM started_at) * 1e9)::bigint AS started_at,
    (extract(epoch FROM finished_at) * 1e9)::bigint AS finished_at,
    workflow_id, run_id, reason, strategy, failure, revert_failure, reverted_to, phase, step,
    last_control, traffic, traffic_generation, analysis, COALESCE(group_id, '') AS group_id`

func (r *rolloutRow) model() model.Rollout {
	given := []int32(r.GivenUpIndices)
	if given == nil {
		given = []int32{}
	}
	phase := model.RolloutPhaseOf(r.State)
	if r.State == model.RolloutActive && r.StoredPhase != "" {
		phase = r.StoredPhase // a rollout with canary steps, walking: where it stands
	}
	var step *int32
	if r.Step.Valid {
		step = &r.Step.Int32
	}
	traffic, _ := decodeWeights(r.Traffic) // the store's own JSON
	analysis := []model.AnalysisVerdict{}
	if r.Analysis != nil {
		_ = json.Unmarshal(r.Analysis, &analysis)
	}
	total := 0
	if s := r.Strategy.s; s != nil && s.Canary != nil {
		total = len(s.Canary.Steps)
	}
	return model.Rollout{
		ID: r.ID, ProcessGUID: r.ProcessGUID, Kind: r.Kind,
		FromDefinitionID: r.FromDefinitionID, ToDefinitionID: r.ToDefinitionID, State: r.State, Phase: phase, Step: step, StepsTotal: total,
		CurrentIndex: r.CurrentIndex, UpdatedInstances: r.UpdatedInstances, Instances: r.Instances,
		GivenUpIndices: given, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt.Int64,
		WorkflowID: r.WorkflowID, RunID: r.RunID, Reason: r.Reason, Strategy: r.Strategy.s,
		Failure: r.Failure.f, RevertFailure: r.RevertFailure.f, RevertedTo: r.RevertedTo,
		LastControl: r.LastControl, Traffic: traffic, TrafficGeneration: r.TrafficGeneration, Analysis: analysis,
		GroupID: r.GroupID,
	}
}

// Rollouts lists rollouts, newest first, of one LRP or all, optionally only those in progress.
func (s *Store) Rollouts(ctx context.Context, f model.RolloutFilter) ([]model.Rollout, error) {
	var rows []rolloutRow
	err := s.db.SelectContext(ctx, &rows, planPerCall+`SELECT `+rolloutColumns+` FROM rollouts
WHERE ($1 = '' OR process_guid = $1)
  AND (NOT $2 OR state IN `+inProgressStates+`)
ORDER BY started_at DESC, id`, f.ProcessGUID, f.Active)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]model.Rollout, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].model())
	}
	return out, nil
}

// RolloutByProcessGUID returns the LRP's rollout in progress, else its latest one.
func (s *Store) RolloutByProcessGUID(ctx context.Context, guid string) (*model.Rollout, error) {
	var row rolloutRow
	err := s.db.GetContext(ctx, &row, `SELECT `+rolloutColumns+` FROM rollouts
WHERE process_guid = $1
ORDER BY state IN `+inProgressStates+` DESC, started_at DESC, id
LIMIT 1`, guid)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout of", guid)
	}
	if err != nil {
		return nil, mapError(err)
	}
	r := row.model()
	return &r, nil
}

// finishRolloutRow moves a rollout to a final state and returns it: a start that supersedes
// the rollout under way and a walk that ends both write the row this way.
func finishRolloutRow(ctx context.Context, tx *sqlx.Tx, id, state, reason string) (*model.Rollout, error) {
	var r rolloutRow
	// A revert restores the definition the rollout started from.
	if err := tx.GetContext(ctx, &r, `UPDATE rollouts SET state = $2, reason = $3, finished_at = now(), traffic = NULL,
    reverted_to = CASE WHEN $2 = 'reverted' THEN from_definition_id ELSE reverted_to END
WHERE id = $1 RETURNING `+rolloutColumns, id, state, reason); err != nil {
		return nil, err
	}
	ro := r.model()
	if ro.GroupID != "" {
		if err := endGroupMember(ctx, tx, ro.ID, state, reason); err != nil {
			return nil, err
		}
	}
	// The LRP routes by instances again once no rollout holds a weighted step.
	return &ro, endTraffic(ctx, tx, ro.ProcessGUID, ro.ID)
}
