package lrps

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// MaxAbortReason bounds an abort's reason, which the rollout keeps in its failure.
const MaxAbortReason = 1024

// Pause holds the LRP's rollout at its next index: the steps in flight finish, no other
// starts. Refused while the rollout reverts (a revert restores service; pausing it would
// leave the LRP half walked back).
func (s *Service) Pause(ctx context.Context, guid string) (*model.Rollout, error) {
	return s.control(ctx, guid, model.RolloutControl{Kind: model.ControlPause}, func(r *model.Rollout) error {
		if r.State == model.RolloutCanceling {
			return invalidPhase(r, "pause applies while it walks")
		}
		return nil
	})
}

// Resume releases a paused rollout — also a revert that paused because its own walk back
// failed. On a rollout that walks it changes nothing.
func (s *Service) Resume(ctx context.Context, guid string) (*model.Rollout, error) {
	return s.control(ctx, guid, model.RolloutControl{Kind: model.ControlResume}, nil)
}

// Abort stops the rollout and reverts it to the definition it started from (ROLLOUTS-NEXT.md
// section 4); it ends reverted, with an operator failure carrying reason. On a rollout that
// already walks back it changes nothing.
func (s *Service) Abort(ctx context.Context, guid, reason string) (*model.Rollout, error) {
	if len(reason) > MaxAbortReason {
		return nil, model.Errorf(model.ErrInvalidRequest, "reason is %d bytes, more than %d", len(reason), MaxAbortReason)
	}
	return s.control(ctx, guid, model.RolloutControl{Kind: model.ControlAbort, Reason: reason}, nil)
}

// SetPace replaces maxInFlight indices at once from the rollout's next index on; the rollout
// reports it as its strategy's max_in_flight.
func (s *Service) SetPace(ctx context.Context, guid string, maxInFlight int32) (*model.Rollout, error) {
	if maxInFlight < 1 || maxInFlight > model.MaxInstances {
		return nil, model.Errorf(model.ErrInvalidRequest, "max_in_flight must be between 1 and %d", model.MaxInstances)
	}
	r, err := s.control(ctx, guid, model.RolloutControl{Kind: model.ControlSetPace, MaxInFlight: maxInFlight}, nil)
	if err != nil {
		return nil, err
	}
	// The workflow has the pace; the row says so for the API's readers.
	return s.store.SetRolloutPace(ctx, r.ID, maxInFlight)
}

// Promote leaves the canary step the rollout holds at or walks to — a manual one it awaits
// promotion at, or a timed one whose pause it skips; full skips every remaining step.
// InvalidPhase outside the canary steps (walking after them, or without any), while paused
// or reverting.
func (s *Service) Promote(ctx context.Context, guid string, full bool) (*model.Rollout, error) {
	return s.control(ctx, guid, model.RolloutControl{Kind: model.ControlPromote, Full: full}, func(r *model.Rollout) error {
		if r.Phase != model.PhaseCanary && r.Phase != model.PhaseAwaitingPromotion {
			return invalidPhase(r, "promote applies at a canary step")
		}
		return nil
	})
}

// control sends c to the rollout under way for guid, once check (if any) lets it.
func (s *Service) control(ctx context.Context, guid string, c model.RolloutControl, check func(*model.Rollout) error) (*model.Rollout, error) {
	r, err := s.inProgress(ctx, guid)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(r); err != nil {
			return nil, err
		}
	}
	if err := s.workflows.Control(ctx, r, c); err != nil {
		s.log.Warn("rollout control not delivered", zap.String("process_guid", guid), zap.String("control", c.Kind), zap.Error(err))
		return nil, model.Errorf(model.ErrUnavailable, "could not signal the rollout workflow: %v", err)
	}
	return r, nil
}

// inProgress is the rollout under way for guid: ResourceNotFound for an unknown LRP,
// NoRolloutInProgress when none is under way.
func (s *Service) inProgress(ctx context.Context, guid string) (*model.Rollout, error) {
	if _, err := s.store.DesiredLRPByProcessGUID(ctx, guid); err != nil {
		return nil, err
	}
	if s.workflows == nil {
		return nil, ErrNoRollouts
	}
	r, err := s.store.RolloutByProcessGUID(ctx, guid)
	if model.IsType(err, model.ErrResourceNotFound) || (err == nil && !r.InProgress()) {
		return nil, model.Errorf(model.ErrNoRolloutInProgress, "LRP %q has no rollout in progress", guid)
	}
	return r, err
}

func invalidPhase(r *model.Rollout, why string) error {
	return model.Errorf(model.ErrInvalidPhase, "the rollout of %q is in phase %s: %s", r.ProcessGUID, r.Phase, why)
}
