package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// GroupAdvance is what one decision of a group did, and what the group waits for next.
type GroupAdvance struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Wave   int    `json:"wave"`
	// Started are the member rollouts this decision started: the caller starts their
	// workflows (should it die first, convergence does).
	Started []MemberRollout `json:"started,omitempty"`
	// Aborting are the member rollouts an aborted group still has under way: the caller
	// aborts each (repeating an abort changes nothing).
	Aborting []MemberRollout `json:"aborting,omitempty"`
	// Rolling counts the members under way, fleet-wide.
	Rolling int `json:"rolling"`
	// WaveOpensAt is when the current wave may start, while the pause between waves runs
	// (zero otherwise).
	WaveOpensAt time.Time `json:"wave_opens_at,omitempty"`
	// Done says the group has ended and none of its members rolls: its workflow may end.
	Done bool `json:"done,omitempty"`
}

// MemberRollout is a member's rollout and its LRP's domain (what a workflow start needs).
type MemberRollout struct {
	Rollout model.Rollout `json:"rollout"`
	Domain  string        `json:"domain"`
}

// AdvanceRolloutGroup makes the group's next decisions, in one transaction holding the
// group's row: it aborts the group when the current wave's failed and reverted members pass
// max_failed_percent, ends a wave whose members have all ended (the next opens after
// pause_between_waves_ms; the last completes the group), and starts the current wave's next
// pending members while fewer than max_concurrent_lrps roll. Each member starts as an
// ordinary update of its LRP to its active definition with the group's patch (defaults is the
// server's strategy layer); a member that cannot start — its LRP gone or already rolling out,
// the patch no longer changing it — is skipped, said why. Calling it again with nothing
// changed changes nothing: the group's workflow calls it whenever a member may have ended.
// It starts at most MaxMemberStarts members, so that its transaction stays short (it holds
// the group's row, and each start the member's LRP); Started says when it stopped there
// (len == MaxMemberStarts) and another call would start more.
func (s *Store) AdvanceRolloutGroup(ctx context.Context, id string, defaults *model.RolloutStrategy) (*GroupAdvance, error) {
	var out *GroupAdvance
	err := s.inTx(ctx, func(tx *sqlx.Tx) (err error) {
		out, err = s.advanceIn(ctx, tx, id, defaults)
		return err
	})
	return out, err
}

// MaxMemberStarts bounds the members one AdvanceRolloutGroup starts: a hundred starts in one
// transaction took longer than the activity's heartbeat timeout on a loaded machine, whose
// retries then took as long, again and again (found by BenchmarkRolloutGroupFleet).
const MaxMemberStarts = 10

func (s *Store) advanceIn(ctx context.Context, tx *sqlx.Tx, id string, defaults *model.RolloutStrategy) (*GroupAdvance, error) {
	row, err := lockRolloutGroup(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	spec, err := row.spec()
	if err != nil {
		return nil, err
	}
	out := &GroupAdvance{State: row.State, Reason: row.Reason, Wave: row.Wave}
	changed := false
	switch row.State {
	case model.GroupCompleted:
		out.Done = true
		return out, nil
	case model.GroupAborted:
		return out, s.aborting(ctx, tx, id, out)
	case model.GroupPaused, model.GroupWaitingForWindow:
		return out, countRolling(ctx, tx, id, out)
	case model.GroupPending:
		if err := setGroupState(ctx, tx, id, model.GroupRolling, ""); err != nil {
			return nil, err
		}
		out.State, changed = model.GroupRolling, true
	}
	for {
		c, err := waveCounts(ctx, tx, id, out.Wave)
		if err != nil {
			return nil, err
		}
		if failed := c[model.MemberFailed] + c[model.MemberReverted]; c.total() > 0 &&
			float64(failed)*100 > spec.MaxFailedPercent*float64(c.total()) {
			out.State = model.GroupAborted
			out.Reason = fmt.Sprintf("wave %d of %d: %d of its %d members failed or reverted, more than max_failed_percent (%g %%)",
				out.Wave+1, len(spec.Waves), failed, c.total(), spec.MaxFailedPercent)
			if err := setGroupState(ctx, tx, id, out.State, out.Reason); err != nil {
				return nil, err
			}
			return out, s.finishAdvance(ctx, tx, id, s.aborting(ctx, tx, id, out))
		}
		if c[model.MemberPending] > 0 || c[model.MemberRolling] > 0 {
			break
		}
		// The wave has ended.
		if out.Wave == len(spec.Waves)-1 {
			out.State, out.Done = model.GroupCompleted, true
			if err := setGroupState(ctx, tx, id, out.State, ""); err != nil {
				return nil, err
			}
			return out, s.finishAdvance(ctx, tx, id, nil)
		}
		var opens sql.NullTime
		var open bool
		if err := tx.QueryRowxContext(ctx, `UPDATE rollout_groups
SET wave_opens_at = COALESCE(wave_opens_at, now() + $2 * interval '1 millisecond')
WHERE group_id = $1 RETURNING wave_opens_at, wave_opens_at <= now()`, id, spec.PauseBetweenWavesMS).Scan(&opens, &open); err != nil {
			return nil, err
		}
		if !open {
			out.WaveOpensAt = opens.Time
			changed = changed || !row.WaveOpensAt.Valid
			break
		}
		out.Wave++
		if _, err := tx.ExecContext(ctx, `UPDATE rollout_groups SET wave = $2, wave_opens_at = NULL, updated_at = now()
WHERE group_id = $1`, id, out.Wave); err != nil {
			return nil, err
		}
		changed = true
	}
	if err := countRolling(ctx, tx, id, out); err != nil {
		return nil, err
	}
	if out.WaveOpensAt.IsZero() {
		if err := s.startMembers(ctx, tx, spec, out, defaults); err != nil {
			return nil, err
		}
	}
	if !changed {
		return out, nil
	}
	return out, s.finishAdvance(ctx, tx, id, nil)
}

// finishAdvance records the group's change as an event, unless err.
func (s *Store) finishAdvance(ctx context.Context, tx *sqlx.Tx, id string, err error) error {
	if err != nil {
		return err
	}
	g, err := rolloutGroupIn(ctx, tx, id, false)
	if err != nil {
		return err
	}
	return appendEvents(ctx, tx, groupEvent(g))
}

// memberCounts are a wave's members by state.
type memberCounts map[string]int

func (c memberCounts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func waveCounts(ctx context.Context, tx *sqlx.Tx, id string, wave int) (memberCounts, error) {
	var rows []struct {
		State string `db:"state"`
		N     int    `db:"n"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT state, count(*) AS n FROM rollout_group_members
WHERE group_id = $1 AND wave = $2 GROUP BY state`, id, wave); err != nil {
		return nil, err
	}
	c := memberCounts{}
	for _, r := range rows {
		c[r.State] = r.N
	}
	return c, nil
}

func countRolling(ctx context.Context, tx *sqlx.Tx, id string, out *GroupAdvance) error {
	return tx.GetContext(ctx, &out.Rolling, `SELECT count(*) FROM rollout_group_members WHERE group_id = $1 AND state = 'rolling'`, id)
}

// aborting lists an aborted group's member rollouts still under way.
func (s *Store) aborting(ctx context.Context, tx *sqlx.Tx, id string, out *GroupAdvance) error {
	var rows []struct {
		rolloutRow
		Domain string `db:"domain"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT `+rolloutColumns+`,
    COALESCE((SELECT l.domain FROM desired_lrps l WHERE l.process_guid = rollouts.process_guid), '') AS domain
FROM rollouts
WHERE id IN (SELECT m.rollout_id FROM rollout_group_members m WHERE m.group_id = $1 AND m.state = 'rolling')
    AND state IN `+inProgressStates+`
ORDER BY started_at`, id); err != nil {
		return err
	}
	for i := range rows {
		out.Aborting = append(out.Aborting, MemberRollout{Rollout: rows[i].model(), Domain: rows[i].Domain})
	}
	if err := countRolling(ctx, tx, id, out); err != nil {
		return err
	}
	out.Done = out.Rolling == 0
	return nil
}

// startMembers starts the current wave's next pending members, in order, while fewer than
// max_concurrent_lrps roll, at most MaxMemberStarts of them.
func (s *Store) startMembers(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec, out *GroupAdvance, defaults *model.RolloutStrategy) error {
	slots := min(int(spec.MaxConcurrentLRPs)-out.Rolling, MaxMemberStarts)
	for slots > 0 {
		var pending []memberRow
		if err := tx.SelectContext(ctx, &pending, `SELECT `+memberColumns+` FROM rollout_group_members
WHERE group_id = $1 AND wave = $2 AND state = 'pending' ORDER BY position LIMIT $3`, spec.GroupID, out.Wave, slots); err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		for _, m := range pending {
			started, err := s.startMember(ctx, tx, spec, m, defaults)
			if err != nil {
				return err
			}
			if started != nil {
				out.Started = append(out.Started, *started)
				out.Rolling++
				slots--
			}
		}
	}
	return nil
}

// startMember starts one member's rollout, or skips the member when its LRP cannot take it
// (a model error: the LRP gone, rolling out already, the patch changing nothing now). The
// start runs under a savepoint, so that a refused member leaves nothing of its attempt.
func (s *Store) startMember(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec, m memberRow, defaults *model.RolloutStrategy) (*MemberRollout, error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT member_start`); err != nil {
		return nil, err
	}
	st, err := s.memberRollout(ctx, tx, spec, m, defaults)
	var me *model.Error
	if err != nil && !errors.As(err, &me) {
		return nil, err
	}
	if err != nil {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT member_start`); err != nil {
			return nil, err
		}
		_, err := tx.ExecContext(ctx, `UPDATE rollout_group_members SET state = 'skipped', reason = $3
WHERE group_id = $1 AND position = $2`, spec.GroupID, m.Position, me.Message)
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT member_start`); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rollout_group_members SET state = 'rolling', rollout_id = $3, definition_id = $4
WHERE group_id = $1 AND position = $2`, spec.GroupID, m.Position, st.Rollout.ID, st.Rollout.ToDefinitionID); err != nil {
		return nil, err
	}
	return &MemberRollout{Rollout: *st.Rollout, Domain: st.Desired.Domain}, nil
}

// memberRollout starts the rollout of a member: an update of its LRP to its active
// definition with the group's patch, under the group's id.
func (s *Store) memberRollout(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec, m memberRow, defaults *model.RolloutStrategy) (*RolloutStart, error) {
	d, err := s.desiredInTx(ctx, tx, m.ProcessGUID)
	if err != nil {
		return nil, err
	}
	def, changes := spec.Patch.Apply(d.LRPDefinition, spec.GroupID)
	if !changes {
		return nil, model.Errorf(model.ErrInvalidRequest, "the patch changes nothing in its active definition %q", d.DefinitionID)
	}
	if def.Protobuf != nil {
		if s.patchProtobuf == nil {
			return nil, model.Errorf(model.ErrInvalidRequest, "its definition came through the BBS protocol, which this server cannot patch")
		}
		if def.Protobuf, err = s.patchProtobuf(def.Protobuf, spec.Patch); err != nil {
			return nil, model.Errorf(model.ErrInvalidRequest, "its definition's protobuf: %v", err)
		}
	}
	return s.startRolloutIn(ctx, tx, RolloutRequest{ProcessGUID: m.ProcessGUID, Kind: model.RolloutKindUpdate,
		Definition: &def, Strategy: spec.Strategy, Defaults: defaults, GroupID: spec.GroupID})
}
