package db

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// An index run is a stretch of a rollout's forward walk that one activity performs, index
// after index, without a Temporal round trip per index (activities.Rollouts.WalkRun). The
// workflow still decides where it starts, the health gate and the deadline, and it stops the
// run for any signal. Every write of a run is fenced (migration 0012):
//
//   - the workflow opens a run (OpenRun: run_fence+1, the run's record cleared) and stops it
//     (StopRun: run_fence+1 again, returning what the run did);
//   - an attempt of the activity holds the run with the fence it was given and its attempt
//     number (TakeRun), so that a later attempt (the worker of an earlier one presumed dead)
//     locks the earlier one out;
//   - each step of the run (AdvanceRun) checks both under the rollout row's lock, in the
//     transaction that makes its changes.
//
// So once StopRun has committed, the run it stopped changes nothing more, and StopRun's
// answer is all it did.

// ErrRunFenced says an index run no longer holds its rollout: the workflow stopped it, or a
// later attempt took it over. The run ends without another write.
var ErrRunFenced = errors.New("the index run was stopped or taken over by a later attempt")

// RunHold is what holds an index run: the fence the workflow opened it with and the attempt
// of the activity performing it.
type RunHold struct {
	RolloutID string
	Fence     int64
	Attempt   int32
}

// RunState is what an index run has done, as its rollout row records it.
type RunState struct {
	// Updated are the indices the run updated (the definition runs there, the others retired).
	Updated []int32
	// GivenUp are the indices whose deadline passed (the definition's instance retired).
	GivenUp []int32
	// Index is the index the run desired and has not decided yet, -1 for none.
	Index int32
}

type runRow struct {
	Updated pq.Int32Array `db:"run_updated"`
	GivenUp pq.Int32Array `db:"run_given_up"`
	Index   int32         `db:"run_index"`
}

func (r runRow) state() RunState {
	return RunState{Updated: indices(r.Updated), GivenUp: indices(r.GivenUp), Index: r.Index}
}

func indices(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}

// OpenRun opens a new index run of the rollout and returns its fence. An earlier run, if
// any attempt of it still goes on, is fenced out.
func (s *Store) OpenRun(ctx context.Context, id string) (fence int64, err error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return 0, err
	}
	err = s.db.GetContext(ctx, &fence, `UPDATE rollouts SET run_fence = run_fence + 1, run_attempt = 0,
    run_updated = '{}', run_given_up = '{}', run_index = -1
WHERE id = $1 RETURNING run_fence`, id)
	if err == sql.ErrNoRows {
		return 0, notFound("rollout", id)
	}
	return fence, mapError(err)
}

// StopRun fences out the rollout's index run and returns what it did. Stopping a stopped run
// changes nothing more and answers the same.
func (s *Store) StopRun(ctx context.Context, id string) (RunState, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return RunState{}, err
	}
	var r runRow
	err := s.db.GetContext(ctx, &r, `UPDATE rollouts SET run_fence = run_fence + 1
WHERE id = $1 RETURNING run_updated, run_given_up, run_index`, id)
	if err == sql.ErrNoRows {
		return RunState{}, notFound("rollout", id)
	}
	if err != nil {
		return RunState{}, mapError(err)
	}
	return r.state(), nil
}

// TakeRun makes attempt h.Attempt the holder of the run opened with h.Fence and returns what
// the run has done so far (an earlier attempt's work, for a retried one to resume).
// ErrRunFenced: the run was stopped, or a later attempt holds it.
func (s *Store) TakeRun(ctx context.Context, h RunHold) (RunState, error) {
	if _, err := uuidOrInvalid(h.RolloutID); err != nil {
		return RunState{}, err
	}
	var r runRow
	err := s.db.GetContext(ctx, &r, `UPDATE rollouts SET run_attempt = $3
WHERE id = $1 AND run_fence = $2 AND run_attempt <= $3 RETURNING run_updated, run_given_up, run_index`,
		h.RolloutID, h.Fence, h.Attempt)
	if err == sql.ErrNoRows {
		return RunState{}, ErrRunFenced
	}
	if err != nil {
		return RunState{}, mapError(err)
	}
	return r.state(), nil
}

// HoldsRun reports whether h still holds its run; a waiting run asks now and then, so that it
// does not wait on for a workflow that has moved on.
func (s *Store) HoldsRun(ctx context.Context, h RunHold) (bool, error) {
	var held bool
	err := s.db.GetContext(ctx, &held, `SELECT EXISTS (SELECT 1 FROM rollouts
WHERE id = $1 AND run_fence = $2 AND run_attempt = $3)`, h.RolloutID, h.Fence, h.Attempt)
	return held, mapError(err)
}

// RunAdvance is one step of an index run: decide an index, desire the next, or both.
type RunAdvance struct {
	ProcessGUID  string
	DefinitionID string
	// Done is the index decided, -1 for none, and Outcome how (model.StepUpdated: the others
	// at Done retire; model.StepGivenUp or model.StepScaledAway: DefinitionID's instance there
	// retires, as RetireInstance does).
	Done    int32
	Outcome string
	// Next is the index whose instance of DefinitionID to desire, -1 for none.
	Next int32
	// Before are the indices the walk updated before this run, for the row's count of
	// updated instances; RunID names the workflow run, for the row.
	Before []int32
	RunID  string
}

// RunAdvanced is what a step of an index run did.
type RunAdvanced struct {
	// Exists is false once the LRP is gone: nothing was changed.
	Exists bool
	// Instances is the LRP's instance count.
	Instances int32
	// Desired is the instance at Next (no state when Next is beyond Instances).
	Desired *model.ActualLRP
	// ToStop are the instances the step retired that their cells must stop.
	ToStop []model.ActualLRP
	// Run is what the run has done, this step included.
	Run RunState
}

// AdvanceRun performs one step of an index run in one transaction, if h still holds it
// (else ErrRunFenced): the decided index's retirement, the run's record and the row's
// progress (with its rollout_changed event), and the next index's instance. It is what the
// per-index activities of a stepwise walk (RetireOthers or RetireInstance, RecordProgress,
// LoadRollout, DesireInstance) do in four transactions. Repeating a step (a retried
// transaction) leaves the same state.
func (s *Store) AdvanceRun(ctx context.Context, h RunHold, a RunAdvance) (*RunAdvanced, error) {
	out := &RunAdvanced{}
	err := s.inTxRetried(ctx, func(tx *sqlx.Tx) error {
		*out = RunAdvanced{}
		l, err := lockDesired(ctx, tx, a.ProcessGUID)
		if model.IsType(err, model.ErrResourceNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out.Exists, out.Instances = true, l.Instances
		var row struct {
			runRow
			GivenUpIndices pq.Int32Array `db:"given_up_indices"`
		}
		err = tx.GetContext(ctx, &row, `SELECT run_updated, run_given_up, run_index, given_up_indices FROM rollouts
WHERE id = $1 AND run_fence = $2 AND run_attempt = $3 FOR UPDATE`, h.RolloutID, h.Fence, h.Attempt)
		if err == sql.ErrNoRows {
			return ErrRunFenced
		}
		if err != nil {
			return err
		}
		run := row.state()
		given := indices(row.GivenUpIndices)
		// The index's retirement, the next desire and the progress write their events
		// together, at the end.
		var events eventBatch
		if a.Done >= 0 {
			switch a.Outcome {
			case model.StepUpdated:
				out.ToStop, err = retireAtTx(ctx, tx, &events, a.ProcessGUID, a.Done, matchOthers, a.DefinitionID)
				run.Updated = insertIndex(run.Updated, a.Done)
			case model.StepGivenUp, model.StepScaledAway:
				out.ToStop, err = retireAtTx(ctx, tx, &events, a.ProcessGUID, a.Done, matchInstance, a.DefinitionID)
				if a.Outcome == model.StepGivenUp {
					run.GivenUp = insertIndex(run.GivenUp, a.Done)
					given = insertIndex(given, a.Done)
				}
			default:
				return model.Errorf(model.ErrInvalidRequest, "an index run cannot end an index as %q", a.Outcome)
			}
			if err != nil {
				return err
			}
		}
		run.Index = -1
		current := a.Done + 1
		if a.Next >= 0 {
			if out.Desired, err = s.desireInTx(ctx, tx, &events, a.ProcessGUID, a.DefinitionID, a.Next, l.Instances); err != nil {
				return err
			}
			if a.Next < l.Instances {
				run.Index = a.Next
			}
			current = a.Next
		}
		out.Run = run
		updated := 0
		for _, i := range a.Before {
			if i < l.Instances && !slices.Contains(run.Updated, i) {
				updated++
			}
		}
		for _, i := range run.Updated {
			if i < l.Instances {
				updated++
			}
		}
		var r rolloutRow
		err = tx.GetContext(ctx, &r, `UPDATE rollouts SET run_updated = $2, run_given_up = $3, run_index = $4,
    current_index = $5, updated_instances = $6, instances = $7, given_up_indices = $8,
    run_id = CASE WHEN $9 = '' THEN run_id ELSE $9 END
WHERE id = $1 RETURNING `+rolloutColumns, h.RolloutID, pq.Int32Array(run.Updated), pq.Int32Array(run.GivenUp),
			run.Index, min(current, l.Instances), updated, l.Instances, pq.Int32Array(given), a.RunID)
		if err != nil {
			return err
		}
		events.add(event(model.EventRolloutChanged, r.model()))
		return events.flush(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertIndex adds x to the sorted xs, once.
func insertIndex(xs []int32, x int32) []int32 {
	if i, found := slices.BinarySearch(xs, x); !found {
		xs = slices.Insert(xs, i, x)
	}
	return xs
}
