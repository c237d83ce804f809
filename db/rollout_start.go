package db

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/model"
)

// RolloutRequest asks for a walk of an LRP's instances to a definition.
type RolloutRequest struct {
	ProcessGUID string
	Kind        string // model.RolloutKind*
	// Definition is the new definition of an update; its id must not be taken.
	Definition *model.LRPDefinition
	// DefinitionID names the stored definition of a rollback or an activation.
	DefinitionID string
	// Update carries the other fields an update may change at the same time.
	Update *model.DesiredLRPUpdate
	// Supersede lets the request replace a rollout in progress (seed 000's new definition
	// during a rollout); without it such a request fails with UpdateInProgress (seed 001).
	Supersede bool
	// Strategy is the request's own strategy; Defaults the server's. The rollout records
	// them resolved over the LRP's default (model.ResolveStrategy).
	Strategy, Defaults *model.RolloutStrategy
	// GroupID names the rollout group that starts this rollout as a member ("" for none).
	GroupID string
}

// RolloutStart is what starting a rollout changed.
type RolloutStart struct {
	Rollout    *model.Rollout
	Superseded *model.Rollout
	Desired    *model.DesiredLRP
	// ToStop are instances a scale-down in the same request left for their cells to stop.
	ToStop []model.ActualLRP
}

// StartRollout records, in one transaction, the target definition (a new row for an update;
// a rollback revives a retired one), the LRP's active and previous definitions, and a rollout
// row in state active — so that the workflow the caller starts next (or the converger, if the
// caller dies first) has everything it needs.
func (s *Store) StartRollout(ctx context.Context, req RolloutRequest) (*RolloutStart, error) {
	var out *RolloutStart
	err := s.inTx(ctx, func(tx *sqlx.Tx) (err error) {
		// The freeze is checked here, not in startRolloutIn: a rollout group's member start
		// shares that, and a group holds while frozen rather than skip its members.
		if err := checkFreeze(ctx, tx, fmt.Sprintf("the rollout of LRP %q", req.ProcessGUID), req.Strategy); err != nil {
			return err
		}
		out, err = s.startRolloutIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// startRolloutIn is StartRollout inside tx, which a rollout group's member start shares.
func (s *Store) startRolloutIn(ctx context.Context, tx *sqlx.Tx, req RolloutRequest) (*RolloutStart, error) {
	var out RolloutStart
	row, err := lockDesired(ctx, tx, req.ProcessGUID)
	if err != nil {
		return nil, err
	}
	before, err := s.desiredInTx(ctx, tx, req.ProcessGUID)
	if err != nil {
		return nil, err
	}
	var events []pendingEvent
	from := row.ActiveDefinitionID
	current, err := rolloutInProgress(ctx, tx, req.ProcessGUID)
	if err != nil {
		return nil, err
	}
	if current != nil {
		if !req.Supersede {
			return nil, model.Errorf(model.ErrUpdateInProgress, "LRP %q is rolling out to %q; cancel it or wait", req.ProcessGUID, current.ToDefinitionID)
		}
		// The walk back of a cancel or the new target both start from the last definition
		// that was fully in place.
		from = current.FromDefinitionID
		sup, err := finishRolloutRow(ctx, tx, current.ID, model.RolloutSuperseded, "superseded by a new definition")
		if err != nil {
			return nil, err
		}
		out.Superseded = sup
		events = append(events, event(model.EventRolloutChanged, sup))
	}
	to, err := s.rolloutTarget(ctx, tx, row, req)
	if err != nil {
		return nil, err
	}
	if req.Update != nil {
		var res UpdateResult
		instanceEvents, err := s.applyUpdate(ctx, tx, row, req.Update, &res)
		if err != nil {
			return nil, err
		}
		out.ToStop = res.ToStop
		events = append(events, instanceEvents...)
	}
	var instances int32
	if err := tx.GetContext(ctx, &instances, `
UPDATE desired_lrps SET active_definition_id = $2, previous_definition_id = $3,
    modification_index = modification_index + 1, updated_at = now()
WHERE process_guid = $1 RETURNING instances`, req.ProcessGUID, to, from); err != nil {
		return nil, err
	}
	strategy, err := resolveStrategy(req, row.RolloutStrategy)
	if err != nil {
		return nil, err
	}
	if err := checkWeightCapacity(strategy, instances); err != nil {
		return nil, err
	}
	if err := requireResolvedWindow(ctx, tx, strategy); err != nil {
		return nil, err
	}
	var r rolloutRow
	if err := tx.GetContext(ctx, &r, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id,
    state, instances, workflow_id, strategy, group_id)
VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, NULLIF($9, ''))
RETURNING `+rolloutColumns, uuid.NewString(), req.ProcessGUID, req.Kind, from, to, instances, model.RolloutWorkflowID(req.ProcessGUID),
		strategy, req.GroupID); err != nil {
		return nil, err
	}
	ro := r.model()
	out.Rollout = &ro
	if out.Desired, err = s.desiredInTx(ctx, tx, req.ProcessGUID); err != nil {
		return nil, err
	}
	events = append(events, changed(model.EventDesiredLRPChanged, model.NewDesiredLRPEvent(before), model.NewDesiredLRPEvent(out.Desired)), event(model.EventRolloutChanged, ro))
	return &out, appendEvents(ctx, tx, events...)
}

// rolloutTarget stores or revives the definition a rollout walks to, and returns its id.
func (s *Store) rolloutTarget(ctx context.Context, tx *sqlx.Tx, row *desiredRow, req RolloutRequest) (string, error) {
	if req.Kind == model.RolloutKindUpdate {
		def, err := newDefinitionRow(row.ProcessGUID, req.Definition)
		if err != nil {
			return "", err
		}
		var taken bool
		if err := tx.GetContext(ctx, &taken, `SELECT EXISTS (SELECT 1 FROM lrp_definitions
WHERE process_guid = $1 AND definition_id = $2)`, row.ProcessGUID, def.DefinitionID); err != nil {
			return "", err
		}
		if taken {
			return "", model.Errorf(model.ErrResourceExists, "LRP %q already has a definition %q: a new definition needs a new id",
				row.ProcessGUID, def.DefinitionID)
		}
		if _, err := tx.NamedExecContext(ctx, insertDefinition, def); err != nil {
			return "", err
		}
		return def.DefinitionID, nil
	}
	var live bool
	err := tx.GetContext(ctx, &live, `SELECT live FROM lrp_definitions WHERE process_guid = $1 AND definition_id = $2 FOR UPDATE`,
		row.ProcessGUID, req.DefinitionID)
	if err == sql.ErrNoRows || (err == nil && !live && req.Kind == model.RolloutKindActivate) {
		return "", model.Errorf(model.ErrResourceNotFound, "LRP %q has no definition %q (a definition is pruned once it has been out of use beyond the retained history)",
			row.ProcessGUID, req.DefinitionID)
	}
	if err != nil {
		return "", err
	}
	if req.DefinitionID == row.ActiveDefinitionID {
		return "", model.Errorf(model.ErrInvalidRequest, "definition %q is already the active definition of %q", req.DefinitionID, row.ProcessGUID)
	}
	if !live {
		if _, err := tx.ExecContext(ctx, `UPDATE lrp_definitions SET live = true, retired_at = NULL
WHERE process_guid = $1 AND definition_id = $2`, row.ProcessGUID, req.DefinitionID); err != nil {
			return "", err
		}
	}
	return req.DefinitionID, nil
}

func rolloutInProgress(ctx context.Context, tx *sqlx.Tx, guid string) (*model.Rollout, error) {
	var r rolloutRow
	err := tx.GetContext(ctx, &r, `SELECT `+rolloutColumns+` FROM rollouts
WHERE process_guid = $1 AND state IN `+inProgressStates+` FOR UPDATE`, guid)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ro := r.model()
	return &ro, nil
}
