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
// leave the LRP half walked back). Repeated on a paused rollout it changes nothing.
func (s *Service) Pause(ctx context.Context, guid string) (*model.Rollout, error) {
	return s.record(ctx, guid, model.ControlPause, func(r *model.Rollout) error {
		if r.State == model.RolloutCanceling {
			return invalidPhase(r, "pause applies while it walks")
		}
		return nil
	})
}

// Resume releases a paused rollout — also a revert that paused because its own walk back
// failed. Repeated after a resume that took effect it changes nothing (200); on a rollout
// that is not paused and that no pause or resume was sent to, there is nothing to resume:
// InvalidPhase (resumable).
func (s *Service) Resume(ctx context.Context, guid string) (*model.Rollout, error) {
	return s.record(ctx, guid, model.ControlResume, resumable)
}

// resumable decides a resume on the rollout's row, locked (RecordRolloutControl). The row's
// state is what the workflow last recorded, so a resume applies when:
//   - the state is paused: an operator's pause, or the failure policy's (on_failure pause);
//   - the last control the API accepted is a pause or a resume: a pause the workflow has not
//     recorded yet, or a resume repeated after one that took effect — both answered 200, the
//     workflow changing nothing when there is nothing to release;
//   - the rollout reverts and its revert failed (revert_failure): the walk back holds for a
//     human (ROLLOUTS-NEXT.md section 4), shown as reverting, not paused.
//
// Otherwise — walking (or at a canary step) and never paused, or reverting without a revert
// failure — the rollout is not paused: InvalidPhase, naming its phase. A new rollout (a
// supersede, a rollback) starts with no last control, as its walk starts unpaused.
func resumable(r *model.Rollout) error {
	switch {
	case r.State == model.RolloutPaused:
	case r.LastControl == model.ControlPause, r.LastControl == model.ControlResume:
	case r.State == model.RolloutCanceling && r.RevertFailure != nil:
	default:
		return model.Errorf(model.ErrInvalidPhase, "the rollout of %q is in phase %s, not paused: nothing to resume", r.ProcessGUID, r.Phase)
	}
	return nil
}

// Abort stops the rollout and reverts it to the definition it started from (ROLLOUTS-NEXT.md
// section 4); it ends reverted, with an operator failure carrying reason. On a rollout that
// already walks back it changes nothing.
func (s *Service) Abort(ctx context.Context, guid, reason string) (*model.Rollout, error) {
	if len(reason) > MaxAbortReason {
		return nil, model.Errorf(model.ErrInvalidRequest, "reason is %d bytes, more than %d", len(reason), MaxAbortReason)
	}
	return s.control(ctx, guid, model.RolloutControl{Kind: model.ControlAbort, Reason: reason}, func(r *model.Rollout) error {
		s.withdrawWeight(ctx, r)
		return nil
	})
}

// withdrawWeight takes the new definition's traffic weight to 0 at once, in the store, when
// the rollout holds a weighted step: the routers follow within a second, without waiting for
// the workflow to hear of the abort or cancel (which then sets the same split and waits for
// the routers). Should the store not answer, the workflow still does it first.
func (s *Service) withdrawWeight(ctx context.Context, r *model.Rollout) {
	if _, err := s.store.WithdrawWeight(ctx, r.ID); err != nil {
		s.log.Warn("withdraw the new definition's weight", zap.String("process_guid", r.ProcessGUID), zap.Error(err))
	}
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

// control sends c to the rollout under way for guid, once before (if any) — a check, or the
// control's first effect — lets it.
func (s *Service) control(ctx context.Context, guid string, c model.RolloutControl, before func(*model.Rollout) error) (*model.Rollout, error) {
	r, err := s.inProgress(ctx, guid)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(r); err != nil {
			return nil, err
		}
	}
	if err := s.signal(ctx, r, c); err != nil {
		return nil, err
	}
	return r, nil
}

// record checks a pause or resume (kind) with allow and records it on the rollout under way
// for guid, in one store transaction, then signals the workflow. Should the signal fail
// (Unavailable), the record stays: a pause recorded but not delivered only lets a later
// resume answer 200 (and signal a resume the workflow ignores), a resume recorded but not
// delivered leaves the row paused, where a resume applies anyway.
func (s *Service) record(ctx context.Context, guid, kind string, allow func(*model.Rollout) error) (*model.Rollout, error) {
	if _, err := s.store.DesiredLRPByProcessGUID(ctx, guid); err != nil {
		return nil, err
	}
	if s.workflows == nil {
		return nil, ErrNoRollouts
	}
	r, err := s.store.RecordRolloutControl(ctx, guid, kind, allow)
	if err != nil {
		return nil, err
	}
	if err := s.signal(ctx, r, model.RolloutControl{Kind: kind}); err != nil {
		return nil, err
	}
	return r, nil
}

// signal sends c to the rollout r's workflow.
func (s *Service) signal(ctx context.Context, r *model.Rollout, c model.RolloutControl) error {
	if err := s.workflows.Control(ctx, r, c); err != nil {
		s.log.Warn("rollout control not delivered", zap.String("process_guid", r.ProcessGUID), zap.String("control", c.Kind), zap.Error(err))
		return model.Errorf(model.ErrUnavailable, "could not signal the rollout workflow: %v", err)
	}
	return nil
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
