package lrps

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// GroupStore is what rollout groups' changes need of the database.
type GroupStore interface {
	CreateRolloutGroup(ctx context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error)
	ControlRolloutGroup(ctx context.Context, id, kind, reason string) (*model.RolloutGroup, error)
}

// GroupWorkflows starts and wakes rollout groups' workflows; both are idempotent.
type GroupWorkflows interface {
	StartGroup(ctx context.Context, id string) error
	WakeGroup(ctx context.Context, id string) error
}

// WithGroups lets the Service create and steer rollout groups (ROLLOUTS-NEXT.md section 6).
func (s *Service) WithGroups(store GroupStore, workflows GroupWorkflows) *Service {
	s.groupStore, s.groupWorkflows = store, workflows
	return s
}

// CreateGroup records the group with its members in one transaction, then starts its
// workflow; should the start fail, the group waits as pending and convergence starts it.
func (s *Service) CreateGroup(ctx context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error) {
	if s.groupStore == nil || s.groupWorkflows == nil {
		return nil, ErrNoRollouts
	}
	g, err := s.groupStore.CreateRolloutGroup(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := s.groupWorkflows.StartGroup(ctx, g.GroupID); err != nil {
		s.log.Warn("rollout group workflow not started; convergence will start it", zap.String("group", g.GroupID), zap.Error(err))
	}
	return g, nil
}

// ControlGroup pauses, resumes or aborts a group (model.GroupControl*) in the store, then
// wakes its workflow, which acts on the row: an abort's members under way revert.
func (s *Service) ControlGroup(ctx context.Context, id, kind, reason string) (*model.RolloutGroup, error) {
	if s.groupStore == nil || s.groupWorkflows == nil {
		return nil, ErrNoRollouts
	}
	if len(reason) > MaxAbortReason {
		return nil, model.Errorf(model.ErrInvalidRequest, "reason is %d bytes, more than %d", len(reason), MaxAbortReason)
	}
	g, err := s.groupStore.ControlRolloutGroup(ctx, id, kind, reason)
	if err != nil {
		return nil, err
	}
	if err := s.groupWorkflows.WakeGroup(ctx, id); err != nil {
		s.log.Warn("rollout group workflow not woken; it asks the store within a minute", zap.String("group", id), zap.Error(err))
	}
	return g, nil
}
