package activities

import (
	"context"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// RolloutStarter starts a rollout's workflow; starting one that runs already is a no-op
// (never a signal: the row it read may be stale, superseded since, and the run must not be
// told of it).
type RolloutStarter interface {
	ResumeRollout(ctx context.Context, r *model.Rollout, domain string) error
}

// ResumeStore lists the rollouts under way.
type ResumeStore interface {
	RolloutsInProgress(ctx context.Context) ([]db.RolloutInProgress, error)
}

// GroupResumeStore lists the rollout groups whose workflow must run.
type GroupResumeStore interface {
	RolloutGroupsInProgress(ctx context.Context) ([]string, error)
}

// GroupStarter starts a rollout group's workflow; starting one that runs already is a no-op.
type GroupStarter interface {
	StartGroup(ctx context.Context, id string) error
}

// Resumer makes sure every rollout and rollout group under way has its workflow: the API
// commits a rollout (or a group) and then starts its workflow, and may die in between.
type Resumer struct {
	Store   ResumeStore
	Starter RolloutStarter
	// Groups and GroupStore, when set, resume rollout groups too.
	Groups     GroupStarter
	GroupStore GroupResumeStore
	Log        *zap.Logger
}

// ResumeRolloutsInput is empty; it exists so fields can be added without breaking histories.
type ResumeRolloutsInput struct{}

// ResumeRolloutsOutput counts the rollouts checked.
type ResumeRolloutsOutput struct {
	Checked int `json:"checked"`
	Failed  int `json:"failed"`
	// Groups counts the rollout groups checked.
	Groups int `json:"groups,omitempty"`
}

// ResumeRollouts (re)starts the workflow of every rollout under way. Starting is idempotent
// (an existing run is kept), so calling this every convergence pass is safe.
func (r *Resumer) ResumeRollouts(ctx context.Context, _ ResumeRolloutsInput) (ResumeRolloutsOutput, error) {
	if r.Starter == nil {
		return ResumeRolloutsOutput{}, nil // no rollout workflow wired (tests, tools)
	}
	defer heartbeatEvery(ctx, ConvergeHeartbeat)()
	rollouts, err := r.Store.RolloutsInProgress(ctx)
	if err != nil {
		return ResumeRolloutsOutput{}, err
	}
	var out ResumeRolloutsOutput
	for i := range rollouts {
		out.Checked++
		ro := &rollouts[i].Rollout
		if err := r.Starter.ResumeRollout(ctx, ro, rollouts[i].Domain); err != nil {
			out.Failed++
			r.Log.Warn("resume rollout", zap.String("process_guid", ro.ProcessGUID), zap.Error(err))
		}
	}
	return out, r.resumeGroups(ctx, &out)
}

// resumeGroups (re)starts the workflow of every rollout group under way.
func (r *Resumer) resumeGroups(ctx context.Context, out *ResumeRolloutsOutput) error {
	if r.Groups == nil || r.GroupStore == nil {
		return nil
	}
	ids, err := r.GroupStore.RolloutGroupsInProgress(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		out.Groups++
		if err := r.Groups.StartGroup(ctx, id); err != nil {
			out.Failed++
			r.Log.Warn("resume rollout group", zap.String("group", id), zap.Error(err))
		}
	}
	return nil
}
