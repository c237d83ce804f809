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

// An index run is a stretch of a rollout's walk that one activity performs — forward to the
// target, or back to the definition the rollout started from — with up to a limit of indices
// in flight at once and no Temporal round trip per index (activities.Rollouts.WalkRun). The
// workflow still decides where it starts, which way it goes, the health gate and the
// deadline; it interrupts the run for a cancel, a supersede or a revert, and steers it for
// a pause or a new pace through the run's limit (SetRunLimit). Every write of a run is
// fenced (migration 0012):
//
//   - the workflow opens a run (OpenRun: run_fence+1, the run's record cleared) and stops it
//     (StopRun, StopRunRetiring: run_fence+1 again, returning what the run did);
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
	// InFlight are the indices the run desired and has not decided yet, ascending; Index is
	// the lowest of them, -1 for none (what a run of the version before had: one index).
	InFlight []int32
	Index    int32
	// Limit is how many indices the run may have in flight as the workflow last set it
	// (SetRunLimit; 0 drains the run), -1 while it has not: the run's own input says.
	Limit int32
}

type runRow struct {
	Updated  pq.Int32Array `db:"run_updated"`
	GivenUp  pq.Int32Array `db:"run_given_up"`
	InFlight pq.Int32Array `db:"run_in_flight"`
	Index    int32         `db:"run_index"`
	Limit    int32         `db:"run_limit"`
	// Fence is the run's, LimitFence the run's whose limit run_limit is.
	Fence      int64 `db:"run_fence"`
	LimitFence int64 `db:"run_limit_fence"`
}

// runColumns are runRow's.
const runColumns = `run_updated, run_given_up, run_in_flight, run_index, run_limit, run_fence, run_limit_fence`

// state is the run the row records. run_index is what both versions write: this one keeps it
// the lowest of run_in_flight, the version before knew no set (its OpenRun left
// run_in_flight as the last run of this version had it). So a set whose lowest index is not
// run_index is stale: the run is the one index run_index names, or none.
func (r runRow) state() RunState {
	st := RunState{Updated: indices(r.Updated), GivenUp: indices(r.GivenUp), InFlight: []int32{}, Index: r.Index, Limit: -1}
	if r.LimitFence == r.Fence {
		st.Limit = r.Limit // set for this run (a StopRun since moved the fence on: no matter)
	}
	switch {
	case len(r.InFlight) > 0 && r.InFlight[0] == r.Index:
		st.InFlight = indices(r.InFlight)
	case r.Index >= 0:
		st.InFlight = []int32{r.Index}
	}
	return st
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
    run_updated = '{}', run_given_up = '{}', run_index = -1, run_in_flight = '{}', run_limit = -1
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
WHERE id = $1 RETURNING `+runColumns, id)
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
WHERE id = $1 AND run_fence = $2 AND run_attempt <= $3 RETURNING `+runColumns,
		h.RolloutID, h.Fence, h.Attempt)
	if err == sql.ErrNoRows {
		return RunState{}, ErrRunFenced
	}
	if err != nil {
		return RunState{}, mapError(err)
	}
	return r.state(), nil
}

// HoldsRun reports whether h still holds its run, and the run's limit (RunState.Limit): a
// waiting run asks now and then, so that it neither waits on for a workflow that has moved
// on nor misses a new pace.
func (s *Store) HoldsRun(ctx context.Context, h RunHold) (held bool, limit int32, err error) {
	var row struct {
		Held  bool  `db:"held"`
		Limit int32 `db:"run_limit"`
	}
	err = s.db.GetContext(ctx, &row, `SELECT run_fence = $2 AND run_attempt = $3 AS held,
    CASE WHEN run_limit_fence = $2 THEN run_limit ELSE -1 END AS run_limit FROM rollouts
WHERE id = $1`, h.RolloutID, h.Fence, h.Attempt)
	if err == sql.ErrNoRows {
		return false, 0, nil
	}
	return row.Held, row.Limit, mapError(err)
}

// SetRunLimit sets how many indices the run opened with fence may have in flight: 0 drains
// it (a pause: the indices in flight finish, no other starts), a positive limit is a new
// pace. A run stopped since (a later fence) is left alone. The run reads it at its next
// decision, or within a safety tick.
func (s *Store) SetRunLimit(ctx context.Context, id string, fence int64, limit int32) error {
	if _, err := uuidOrInvalid(id); err != nil {
		return err
	}
	if limit < 0 {
		return model.Errorf(model.ErrInvalidRequest, "a run's limit cannot be %d", limit)
	}
	_, err := s.db.ExecContext(ctx, `UPDATE rollouts SET run_limit = $3, run_limit_fence = $2 WHERE id = $1 AND run_fence = $2`, id, fence, limit)
	return mapError(err)
}

// StopRunRetiring stops the rollout's index run as StopRun does and, in the same
// transaction, retires def's instance at every index the run left in flight (desired, not
// yet decided): the instance it replaces there was never retired and keeps serving. It
// returns what the run did and the retired instances whose cells must stop them. Repeated
// (a retried local activity), it retires nothing more and answers the same.
func (s *Store) StopRunRetiring(ctx context.Context, id, guid, def string) (RunState, []model.ActualLRP, error) {
	if _, err := uuidOrInvalid(id); err != nil {
		return RunState{}, nil, err
	}
	var st RunState
	var toStop []model.ActualLRP
	err := s.inTxRetried(ctx, func(tx *sqlx.Tx) error {
		st, toStop = RunState{}, nil
		var r runRow
		err := tx.GetContext(ctx, &r, `UPDATE rollouts SET run_fence = run_fence + 1
WHERE id = $1 RETURNING `+runColumns, id)
		if err == sql.ErrNoRows {
			return notFound("rollout", id)
		}
		if err != nil {
			return err
		}
		st = r.state()
		var events eventBatch
		for _, i := range st.InFlight {
			retired, err := retireAtTx(ctx, tx, &events, guid, i, matchInstance, def)
			if err != nil {
				return err
			}
			toStop = append(toStop, retired...)
		}
		return events.flush(ctx, tx)
	})
	if err != nil {
		return RunState{}, nil, err
	}
	return st, toStop, nil
}

// RunAdvance is one step of an index run: decide indices, desire the next ones, or both.
type RunAdvance struct {
	ProcessGUID  string
	DefinitionID string
	// Decided are the indices decided, in the order the run saw them end: several when their
	// waits ended together, decided in one transaction.
	Decided []RunDecision
	// Next are the indices whose instance of DefinitionID to desire (again, for one in flight
	// already); those at or beyond the LRP's count are left out, and so are new ones over the
	// run's limit as the row has it (a pause or a new pace the run has not seen yet):
	// RunAdvanced.Run.InFlight says which were taken.
	Next []int32
	// Interrupt are indices in flight the run gives up without deciding (it ends at a
	// failure): DefinitionID's instance there retires, the one it replaces keeps serving.
	Interrupt []int32
	// Back says the run walks back (a cancel, a revert): the row counts the indices it walks
	// back off Before, and an index it gives up is not the rollout's given_up_indices.
	Back bool
	// Before are the indices the walk had updated before this run, for the row's count of
	// updated instances; RunID names the workflow run, for the row.
	Before []int32
	RunID  string
}

// RunDecision is how an index of a run ended: model.StepUpdated (the others at Index
// retire), model.StepGivenUp or model.StepScaledAway (DefinitionID's instance there retires,
// as RetireInstance does).
type RunDecision struct {
	Index   int32
	Outcome string
}

// RunAdvanced is what a step of an index run did.
type RunAdvanced struct {
	// Exists is false once the LRP is gone: nothing was changed.
	Exists bool
	// Instances is the LRP's instance count.
	Instances int32
	// ToStop are the instances the step retired that their cells must stop.
	ToStop []model.ActualLRP
	// Rewait are indices decided as updated whose instance no longer serves (it crashed
	// since the run saw it): not decided, they stay in flight.
	Rewait []int32
	// Run is what the run has done, this step included, and its limit.
	Run RunState
}

// AdvanceRun performs one step of an index run in one transaction, if h still holds it
// (else ErrRunFenced): the decided index's retirement, the run's record and the row's
// progress (with its rollout_changed event), and the next indices' instances. It is what the
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
			CurrentIndex   int32         `db:"current_index"`
		}
		err = tx.GetContext(ctx, &row, `SELECT `+runColumns+`, given_up_indices, current_index FROM rollouts
WHERE id = $1 AND run_fence = $2 AND run_attempt = $3 FOR UPDATE`, h.RolloutID, h.Fence, h.Attempt)
		if err == sql.ErrNoRows {
			return ErrRunFenced
		}
		if err != nil {
			return err
		}
		run := row.state()
		given := indices(row.GivenUpIndices)
		// The indices' retirements, the next desires and the progress write their events
		// together, at the end.
		var events eventBatch
		retire := func(i int32, match string) error {
			stop, err := retireAtTx(ctx, tx, &events, a.ProcessGUID, i, match, a.DefinitionID)
			out.ToStop = append(out.ToStop, stop...)
			run.InFlight = removeIndex(run.InFlight, i)
			return err
		}
		for _, d := range a.Decided {
			switch d.Outcome {
			case model.StepUpdated:
				// The instance the run saw serving must serve still (it may have crashed since
				// its wait ended): else the index stays in flight, to be waited for again.
				var serving []string
				if err := tx.SelectContext(ctx, &serving, `SELECT instance_guid FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND definition_id = $3 AND presence = 'ORDINARY'
  AND state = 'RUNNING' AND NOT not_ready AND NOT retiring FOR UPDATE`, a.ProcessGUID, d.Index, a.DefinitionID); err != nil {
					return err
				}
				if len(serving) == 0 {
					out.Rewait = append(out.Rewait, d.Index)
					continue
				}
				err = retire(d.Index, matchOthers)
				run.Updated = insertIndex(run.Updated, d.Index)
			case model.StepGivenUp, model.StepScaledAway:
				err = retire(d.Index, matchInstance)
				if d.Outcome == model.StepGivenUp {
					run.GivenUp = insertIndex(run.GivenUp, d.Index)
					if !a.Back {
						given = insertIndex(given, d.Index)
					}
				}
			default:
				return model.Errorf(model.ErrInvalidRequest, "an index run cannot end an index as %q", d.Outcome)
			}
			if err != nil {
				return err
			}
		}
		for _, i := range a.Interrupt {
			if err := retire(i, matchInstance); err != nil {
				return err
			}
		}
		for _, i := range a.Next {
			if i >= l.Instances {
				continue // scaled below it since the run read the count: nothing to start
			}
			if !slices.Contains(run.InFlight, i) && run.Limit >= 0 && len(run.InFlight) >= int(run.Limit) {
				continue // over the limit the workflow set: the run learns it from the answer
			}
			if a.Back {
				// The instance a walk back returns to may still be draining: withdrawn, it
				// serves on at once (db/stop_claim.go).
				if err := withdrawRetirementTx(ctx, tx, &events, a.ProcessGUID, a.DefinitionID, i); err != nil {
					return err
				}
			}
			if _, err := s.desireInTx(ctx, tx, &events, a.ProcessGUID, a.DefinitionID, i, l.Instances); err != nil {
				return err
			}
			run.InFlight = insertIndex(run.InFlight, i)
		}
		run.Index = -1
		if len(run.InFlight) > 0 {
			run.Index = run.InFlight[0]
		}
		out.Run = run
		current, updated := runProgress(a, run, l.Instances, row.CurrentIndex)
		var r rolloutRow
		err = tx.GetContext(ctx, &r, `UPDATE rollouts SET run_updated = $2, run_given_up = $3, run_index = $4,
    current_index = $5, updated_instances = $6, instances = $7, given_up_indices = $8,
    run_id = CASE WHEN $9 = '' THEN run_id ELSE $9 END, run_in_flight = $10
WHERE id = $1 RETURNING `+rolloutColumns, h.RolloutID, pq.Int32Array(run.Updated), pq.Int32Array(run.GivenUp),
			run.Index, current, updated, l.Instances, pq.Int32Array(given), a.RunID, pq.Int32Array(run.InFlight))
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

// runProgress is the row's current index and count of updated instances after a step of a
// run: forward, the lowest index in flight (else the one after the highest the run decided)
// and the indices updated before the run or by it; back, the highest index in flight (a walk
// back goes down, else the lowest the run decided) and the indices updated before the run that it has not
// walked back yet.
func runProgress(a RunAdvance, run RunState, instances, current int32) (int32, int) {
	updated := 0
	for _, i := range a.Before {
		if i < instances && !slices.Contains(run.Updated, i) {
			updated++
		}
	}
	if a.Back {
		if len(run.InFlight) > 0 {
			current = slices.Max(run.InFlight)
		} else if decided := slices.Concat(run.Updated, run.GivenUp); len(decided) > 0 {
			current = slices.Min(decided)
		}
		return min(current, instances), updated
	}
	for _, i := range run.Updated {
		if i < instances {
			updated++
		}
	}
	if decided := slices.Concat(run.Updated, run.GivenUp); len(decided) > 0 {
		current = slices.Max(decided) + 1
	}
	if len(run.InFlight) > 0 {
		current = run.InFlight[0]
	} else if len(a.Next) > 0 {
		current = slices.Min(a.Next)
	}
	return min(current, instances), updated
}

// removeIndex removes x from the sorted xs.
func removeIndex(xs []int32, x int32) []int32 {
	if i, found := slices.BinarySearch(xs, x); found {
		xs = slices.Delete(slices.Clone(xs), i, i+1)
	}
	return xs
}

// insertIndex adds x to the sorted xs, once.
func insertIndex(xs []int32, x int32) []int32 {
	if i, found := slices.BinarySearch(xs, x); !found {
		xs = slices.Insert(xs, i, x)
	}
	return xs
}
