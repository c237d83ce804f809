package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/updatable-lrps/bbs/model"
)

// Fleet is the fleet in numbers, as operators watch it: the counts Diego's BBS takes after
// each convergence pass (LRPsDesired, LRPsRunning, PresentCells, TasksPending, ...) and ours
// (callbacks pending, rollouts under way). The worker reads it once per pass (Fleet), so
// that the gauges cost one statement every convergence interval, never one per request.
type Fleet struct {
	// LRPsDesired is the instances every LRP desires, summed.
	LRPsDesired int `db:"lrps_desired"`
	// The ORDINARY instances by state (neither SUSPECT nor EVACUATING, as Diego counts them),
	// and the LRPs with at least one CRASHED instance.
	LRPsUnclaimed       int `db:"lrps_unclaimed"`
	LRPsClaimed         int `db:"lrps_claimed"`
	LRPsRunning         int `db:"lrps_running"`
	LRPsCrashed         int `db:"lrps_crashed"`
	CrashingDesiredLRPs int `db:"crashing_desired_lrps"`
	// SuspectRunning are RUNNING instances on cells that lost their presence, kept until
	// their replacement runs. (A CLAIMED instance there goes back to UNCLAIMED instead, so
	// Diego's SuspectClaimedActualLRPs has no counterpart.)
	SuspectRunning int `db:"suspect_running"`
	// PresentCells are the cells whose presence has not expired.
	PresentCells int `db:"present_cells"`
	// Tasks by state.
	TasksPending   int `db:"tasks_pending"`
	TasksRunning   int `db:"tasks_running"`
	TasksCompleted int `db:"tasks_completed"`
	TasksResolving int `db:"tasks_resolving"`
	// CallbacksPending are the completed (or resolving) tasks with a completion callback:
	// such a task leaves the store once its callback is delivered, so each is one still owed.
	CallbacksPending int `db:"callbacks_pending"`
	// RolloutsInProgress counts the rollouts under way by state (every state of
	// model.RolloutStatesInProgress is present, 0 when none is in it).
	RolloutsInProgress map[string]int `db:"-"`
	// Domains maps every domain ever upserted to whether it is fresh (BBS's Domain.<name>).
	Domains map[string]bool `db:"-"`
}

// fleetQuery takes every count in one statement: one scan of the instances, one of the
// tasks, and reads of the small tables (cells, domains, the rollouts under way through the
// partial index rollouts_one_in_progress).
var fleetQuery = `SELECT
    (SELECT coalesce(sum(instances), 0) FROM desired_lrps) AS lrps_desired,
    a.*, t.*,
    (SELECT count(*) FROM cells WHERE expires_at > now()) AS present_cells,
    (SELECT coalesce(json_object_agg(name, expires_at IS NULL OR expires_at > now()), '{}')
     FROM domains) AS domains,
    (SELECT coalesce(json_object_agg(state, n), '{}')
     FROM (SELECT state, count(*) AS n FROM rollouts WHERE state IN ` + inProgressStates + ` GROUP BY state) r) AS rollouts
FROM (SELECT
    count(*) FILTER (WHERE presence = 'ORDINARY' AND state = 'UNCLAIMED') AS lrps_unclaimed,
    count(*) FILTER (WHERE presence = 'ORDINARY' AND state = 'CLAIMED') AS lrps_claimed,
    count(*) FILTER (WHERE presence = 'ORDINARY' AND state = 'RUNNING') AS lrps_running,
    count(*) FILTER (WHERE presence = 'ORDINARY' AND state = 'CRASHED') AS lrps_crashed,
    count(DISTINCT process_guid) FILTER (WHERE presence = 'ORDINARY' AND state = 'CRASHED') AS crashing_desired_lrps,
    count(*) FILTER (WHERE presence = 'SUSPECT' AND state = 'RUNNING') AS suspect_running
  FROM actual_lrps) a,
 (SELECT
    count(*) FILTER (WHERE state = 'PENDING') AS tasks_pending,
    count(*) FILTER (WHERE state = 'RUNNING') AS tasks_running,
    count(*) FILTER (WHERE state = 'COMPLETED') AS tasks_completed,
    count(*) FILTER (WHERE state = 'RESOLVING') AS tasks_resolving,
    count(*) FILTER (WHERE state IN ('COMPLETED', 'RESOLVING') AND callback_url <> '') AS callbacks_pending
  FROM tasks) t`

// Fleet counts the fleet (see Fleet).
func (s *Store) Fleet(ctx context.Context) (*Fleet, error) {
	var row struct {
		Fleet
		DomainsJSON  jsonText `db:"domains"`
		RolloutsJSON jsonText `db:"rollouts"`
	}
	if err := s.db.GetContext(ctx, &row, fleetQuery); err != nil {
		return nil, mapError(err)
	}
	f := row.Fleet
	if err := json.Unmarshal(row.DomainsJSON, &f.Domains); err != nil {
		return nil, fmt.Errorf("fleet: domains: %w", err)
	}
	if err := json.Unmarshal(row.RolloutsJSON, &f.RolloutsInProgress); err != nil {
		return nil, fmt.Errorf("fleet: rollouts: %w", err)
	}
	for _, state := range model.RolloutStatesInProgress() {
		if _, ok := f.RolloutsInProgress[state]; !ok {
			f.RolloutsInProgress[state] = 0
		}
	}
	return &f, nil
}
