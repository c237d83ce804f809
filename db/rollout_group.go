package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// A rollout group's rows are its authority: its state, its current wave and its members'
// states live in the store, and every decision that spends a budget (a member's start) is
// made in a transaction that holds the group's row, so that the group workflow is only the
// durable clock that asks for the next decision (AdvanceRolloutGroup). A member is rolling
// exactly while its rollout is in progress, because the statement that ends a rollout ends
// its member (endGroupMember, from finishRolloutRow).

// EventRolloutGroupChanged is the event of a group's change of state or wave; it carries the
// group as get reports it, without its members.
const EventRolloutGroupChanged = "rollout_group_changed"

type rolloutGroupRow struct {
	GroupID     string        `db:"group_id"`
	Spec        jsonText      `db:"spec"`
	State       string        `db:"state"`
	Reason      string        `db:"reason"`
	Wave        int           `db:"wave"`
	WaveOpensAt sql.NullInt64 `db:"wave_opens_at"`
	CreatedAt   int64         `db:"created_at"`
	FinishedAt  sql.NullInt64 `db:"finished_at"`
}

const rolloutGroupColumns = `group_id, spec, state, reason, wave,
    (extract(epoch FROM wave_opens_at) * 1e9)::bigint AS wave_opens_at,
    (extract(epoch FROM created_at) * 1e9)::bigint AS created_at,
    (extract(epoch FROM finished_at) * 1e9)::bigint AS finished_at`

func (r *rolloutGroupRow) spec() (model.RolloutGroupSpec, error) {
	var s model.RolloutGroupSpec
	if err := json.Unmarshal(r.Spec, &s); err != nil {
		return s, fmt.Errorf("decode the spec of rollout group %q: %w", r.GroupID, err)
	}
	return s, nil
}

func (r *rolloutGroupRow) model() (model.RolloutGroup, error) {
	spec, err := r.spec()
	g := model.RolloutGroup{GroupID: r.GroupID, State: r.State, Reason: r.Reason, Wave: r.Wave, Spec: spec,
		WaveOpensAt: r.WaveOpensAt.Int64, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt.Int64}
	g.Budgets.MaxConcurrentLRPs, g.Budgets.MaxConcurrentPerCell = spec.MaxConcurrentLRPs, spec.MaxConcurrentPerCell
	return g, err
}

type memberRow struct {
	Position     int            `db:"position"`
	ProcessGUID  string         `db:"process_guid"`
	Wave         int            `db:"wave"`
	State        string         `db:"state"`
	Reason       string         `db:"reason"`
	RolloutID    sql.NullString `db:"rollout_id"`
	DefinitionID string         `db:"definition_id"`
}

const memberColumns = `position, process_guid, wave, state, reason, rollout_id, definition_id`

// ProtobufPatcher applies a group's patch to a definition's protobuf, as a BBS-protocol
// client gave it (model.LRPDefinition.Protobuf): package protocol knows the message; the
// store only keeps it. Set by the composition root (WithProtobufPatcher).
type ProtobufPatcher func(pb []byte, p model.DefinitionPatch) ([]byte, error)

// WithProtobufPatcher lets rollout groups patch definitions a BBS-protocol client desired.
// Without it, a member whose definition came through the protocol is skipped, said why.
func WithProtobufPatcher(p ProtobufPatcher) Option { return func(s *Store) { s.patchProtobuf = p } }

// CreateRolloutGroup records a group, its members chosen by its selector and ordered by
// process guid, and their waves, in one transaction. The selection must not be empty, every
// process guid it names must exist, and the patch must change some member's definition;
// otherwise InvalidRequest, and nothing is written. A group id in use is ResourceExists.
func (s *Store) CreateRolloutGroup(ctx context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.WithDefaults()
	var out *model.RolloutGroup
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if spec.Window != "" {
			if err := checkWindowExists(ctx, tx, spec.Window); err != nil {
				return err
			}
		}
		members, err := selectMembers(ctx, tx, spec)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO rollout_groups (group_id, spec, state) VALUES ($1, $2, 'pending')
ON CONFLICT (group_id) DO NOTHING`, spec.GroupID, string(raw))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.Errorf(model.ErrResourceExists, "rollout group %q already exists", spec.GroupID)
		}
		ends := model.WaveEnds(len(members), spec.Waves)
		guids, waves, states, reasons := make([]string, len(members)), make([]int64, len(members)), make([]string, len(members)), make([]string, len(members))
		w := 0
		for i, m := range members {
			for i >= ends[w] {
				w++
			}
			guids[i], waves[i], states[i], reasons[i] = m.guid, int64(w), model.MemberPending, ""
			if !m.changes {
				states[i], reasons[i] = model.MemberSkipped, "the patch changes nothing in its active definition"
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rollout_group_members (group_id, position, process_guid, wave, state, reason)
SELECT $1, k.i - 1, k.g, k.w, k.s, k.r FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[]) WITH ORDINALITY AS k(g, w, s, r, i)`,
			spec.GroupID, pq.StringArray(guids), pq.Int64Array(waves), pq.StringArray(states), pq.StringArray(reasons)); err != nil {
			return err
		}
		if out, err = rolloutGroupIn(ctx, tx, spec.GroupID, true); err != nil {
			return err
		}
		return appendEvents(ctx, tx, groupEvent(out))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// selected is one LRP a selector chose, and whether the patch changes its definition.
type selected struct {
	guid    string
	changes bool
}

// selectMembers reads the LRPs spec's selector chooses, in process guid order, with whether
// the patch changes each one's active definition.
func selectMembers(ctx context.Context, tx *sqlx.Tx, spec model.RolloutGroupSpec) ([]selected, error) {
	sel := spec.Selector
	tags := map[string]model.MetricTagValue{}
	for k, v := range sel.MetricTags {
		tags[k] = model.MetricTagValue{Static: v}
	}
	rawTags, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	var rows []definitionRow
	if err := tx.SelectContext(ctx, &rows, `SELECT `+definitionColumns+`
FROM desired_lrps l JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = l.active_definition_id
WHERE ($1 = '' OR l.domain = $1) AND (COALESCE(cardinality($2::text[]), 0) = 0 OR l.process_guid = ANY($2::text[]))
    AND ($3 = '{}' OR l.metric_tags::jsonb @> $3::jsonb)
ORDER BY l.process_guid`, sel.Domain, pq.StringArray(sel.ProcessGUIDs), string(rawTags)); err != nil {
		return nil, err
	}
	if len(sel.ProcessGUIDs) > 0 {
		found := make(map[string]bool, len(rows))
		for _, r := range rows {
			found[r.ProcessGUID] = true
		}
		var missing []string
		for _, g := range sel.ProcessGUIDs {
			if !found[g] {
				missing = append(missing, g)
			}
		}
		if len(missing) > 0 {
			return nil, model.Errorf(model.ErrInvalidRequest, "selector.process_guids: no LRP %s matches the selector", quoteList(missing, 5))
		}
	}
	if len(rows) == 0 {
		return nil, model.Errorf(model.ErrInvalidRequest, "selector: no LRP matches (an empty group rolls nothing)")
	}
	if len(rows) > model.MaxGroupMembers {
		return nil, model.Errorf(model.ErrInvalidRequest, "selector: %d LRPs match, more than a group's %d", len(rows), model.MaxGroupMembers)
	}
	out := make([]selected, len(rows))
	anyChange := false
	for i := range rows {
		def, err := rows[i].model()
		if err != nil {
			return nil, err
		}
		_, changes := spec.Patch.Apply(def, spec.GroupID)
		out[i] = selected{guid: rows[i].ProcessGUID, changes: changes}
		anyChange = anyChange || changes
	}
	if !anyChange {
		return nil, model.Errorf(model.ErrInvalidRequest, "patch: changes nothing in any of the %d selected LRPs' definitions", len(rows))
	}
	return out, nil
}

func quoteList(items []string, most int) string {
	q := make([]string, 0, most)
	for i, it := range items {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(items)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", it))
	}
	return strings.Join(q, ", ")
}

// RolloutGroup reads a group with its waves, members and budgets in use; ResourceNotFound
// when there is none.
func (s *Store) RolloutGroup(ctx context.Context, id string) (*model.RolloutGroup, error) {
	var out *model.RolloutGroup
	err := s.inTx(ctx, func(tx *sqlx.Tx) (err error) {
		out, err = rolloutGroupIn(ctx, tx, id, true)
		return err
	})
	return out, err
}

// RolloutGroups lists the groups, newest first, with each wave's counts but not its members
// (get has them).
func (s *Store) RolloutGroups(ctx context.Context) ([]model.RolloutGroup, error) {
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT group_id FROM rollout_groups ORDER BY created_at DESC, group_id`); err != nil {
		return nil, mapError(err)
	}
	out := make([]model.RolloutGroup, 0, len(ids))
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, id := range ids {
			g, err := rolloutGroupIn(ctx, tx, id, false)
			if model.IsType(err, model.ErrResourceNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, *g)
		}
		return nil
	})
	return out, err
}

// RolloutGroupsInProgress lists the ids of the groups not yet completed or aborted, and of
// the aborted ones with members still rolling: those whose workflow must run.
func (s *Store) RolloutGroupsInProgress(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.db.SelectContext(ctx, &ids, `SELECT group_id FROM rollout_groups g
WHERE state NOT IN ('completed', 'aborted')
    OR (state = 'aborted' AND EXISTS (SELECT 1 FROM rollout_group_members m WHERE m.group_id = g.group_id AND m.state = 'rolling'))
ORDER BY group_id`)
	return ids, mapError(err)
}

// rolloutGroupIn reads a group in tx; withMembers lists each wave's members.
func rolloutGroupIn(ctx context.Context, tx *sqlx.Tx, id string, withMembers bool) (*model.RolloutGroup, error) {
	var row rolloutGroupRow
	err := tx.GetContext(ctx, &row, `SELECT `+rolloutGroupColumns+` FROM rollout_groups WHERE group_id = $1`, id)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout group", id)
	}
	if err != nil {
		return nil, err
	}
	g, err := row.model()
	if err != nil {
		return nil, err
	}
	var members []memberRow
	if err := tx.SelectContext(ctx, &members, `SELECT `+memberColumns+` FROM rollout_group_members WHERE group_id = $1 ORDER BY position`, id); err != nil {
		return nil, err
	}
	g.Waves = make([]model.RolloutGroupWave, len(g.Spec.Waves))
	byWave := make([][]model.RolloutGroupMember, len(g.Spec.Waves))
	for _, m := range members {
		mm := model.RolloutGroupMember{ProcessGUID: m.ProcessGUID, State: m.State, DefinitionID: m.DefinitionID,
			RolloutID: m.RolloutID.String, Reason: m.Reason}
		byWave[m.Wave] = append(byWave[m.Wave], mm)
		if m.State == model.MemberRolling {
			g.Budgets.LRPsInUse++
		}
	}
	for i, w := range g.Spec.Waves {
		wave := model.RolloutGroupWave{Percent: w.Percent, State: model.WaveState(i, g.Wave, g.State, byWave[i]),
			Counts: map[string]int{}}
		for _, m := range byWave[i] {
			wave.Counts[m.State]++
		}
		if withMembers {
			wave.Members = byWave[i]
			if wave.Members == nil {
				wave.Members = []model.RolloutGroupMember{}
			}
		}
		g.Waves[i] = wave
	}
	if g.Budgets.PerCellMaxInUse, err = groupCellsInUse(ctx, tx, id); err != nil {
		return nil, err
	}
	return &g, nil
}

// groupEvent is the event of a group's change: the group without its members.
func groupEvent(g *model.RolloutGroup) pendingEvent {
	e := *g
	e.Waves = make([]model.RolloutGroupWave, len(g.Waves))
	for i, w := range g.Waves {
		w.Members = nil
		e.Waves[i] = w
	}
	return event(EventRolloutGroupChanged, e)
}

// lockRolloutGroup reads a group's row and locks it until the transaction ends: every
// change of a group's state and every member start holds it.
func lockRolloutGroup(ctx context.Context, tx *sqlx.Tx, id string) (*rolloutGroupRow, error) {
	var row rolloutGroupRow
	err := tx.GetContext(ctx, &row, `SELECT `+rolloutGroupColumns+` FROM rollout_groups WHERE group_id = $1 FOR UPDATE`, id)
	if err == sql.ErrNoRows {
		return nil, notFound("rollout group", id)
	}
	return &row, err
}

// ControlRolloutGroup pauses, resumes or aborts a group (model.GroupControl*), in one
// transaction, and returns it as changed. A pause stops new members from starting (those
// rolling go on); an abort also skips every member not yet started, and the group's
// workflow then aborts those rolling (they revert). Repeating a control that took effect
// changes nothing; a control that does not apply to the group's state is InvalidPhase.
func (s *Store) ControlRolloutGroup(ctx context.Context, id, kind, reason string) (*model.RolloutGroup, error) {
	var out *model.RolloutGroup
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		row, err := lockRolloutGroup(ctx, tx, id)
		if err != nil {
			return err
		}
		to, why := row.State, row.Reason
		switch kind {
		case model.GroupControlPause:
			switch row.State {
			case model.GroupPending, model.GroupRolling, model.GroupWaitingForWindow:
				to, why = model.GroupPaused, "paused by an operator"
			case model.GroupPaused:
			default:
				return model.Errorf(model.ErrInvalidPhase, "rollout group %q is %s: there is nothing to pause", id, row.State)
			}
		case model.GroupControlResume:
			switch row.State {
			case model.GroupPaused:
				to, why = model.GroupRolling, ""
			case model.GroupPending, model.GroupRolling, model.GroupWaitingForWindow:
			default:
				return model.Errorf(model.ErrInvalidPhase, "rollout group %q is %s: there is nothing to resume", id, row.State)
			}
		case model.GroupControlAbort:
			switch row.State {
			case model.GroupAborted:
			case model.GroupCompleted:
				return model.Errorf(model.ErrInvalidPhase, "rollout group %q is completed: there is nothing to abort", id)
			default:
				to, why = model.GroupAborted, "aborted by an operator"
				if reason != "" {
					why += ": " + reason
				}
			}
		default:
			return model.Errorf(model.ErrInvalidRequest, "unknown rollout group control %q", kind)
		}
		if to != row.State {
			if err := setGroupState(ctx, tx, id, to, why); err != nil {
				return err
			}
		}
		if out, err = rolloutGroupIn(ctx, tx, id, true); err != nil {
			return err
		}
		if to != row.State {
			return appendEvents(ctx, tx, groupEvent(out))
		}
		return nil
	})
	return out, err
}

// setGroupState moves a group to state, saying why; an abort skips the members not yet
// started, and a final state records when the group finished.
func setGroupState(ctx context.Context, tx *sqlx.Tx, id, state, reason string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE rollout_groups SET state = $2, reason = $3, updated_at = now(),
    finished_at = CASE WHEN $2 IN ('completed', 'aborted') THEN now() ELSE NULL END
WHERE group_id = $1`, id, state, reason); err != nil {
		return err
	}
	if state != model.GroupAborted {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE rollout_group_members SET state = 'skipped', reason = 'the group aborted first'
WHERE group_id = $1 AND state = 'pending'`, id)
	return err
}

// endGroupMember ends the member whose rollout just ended in state, in the rollout's own
// transaction: the member's slot in max_concurrent_lrps is free from the same commit.
func endGroupMember(ctx context.Context, tx *sqlx.Tx, rolloutID, state, reason string) error {
	_, err := tx.ExecContext(ctx, `UPDATE rollout_group_members SET state = $2, reason = $3
WHERE rollout_id = $1 AND state = 'rolling'`, rolloutID, model.MemberStateOf(state), reason)
	return err
}

// checkWindowExists refuses a window no one defined.
func checkWindowExists(ctx context.Context, tx *sqlx.Tx, name string) error {
	return model.Errorf(model.ErrInvalidRequest, "window: no rollout window %q is defined", name)
}
