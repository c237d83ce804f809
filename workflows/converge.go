package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

const (
	// ConvergenceScheduleID is the Temporal Schedule that runs ConvergeWorkflow. One
	// schedule, and overlap SKIP, give the single converger BBS gets from a Locket lock.
	ConvergenceScheduleID = "bbs-convergence"
	// ConvergeWorkflowID is the id of the scheduled runs (Temporal appends the scheduled time).
	ConvergeWorkflowID = "converge"
	// DefaultConvergenceInterval is BBS's convergence interval (ARCHITECTURE.md).
	DefaultConvergenceInterval = 30 * time.Second
	// defaultTaskQueue is the production task queue (worker.TaskQueue), whose schedule keeps
	// the plain ids above.
	defaultTaskQueue = "bbs"
)

// ConvergenceScheduleIDFor is the id of the convergence Schedule whose runs go to taskQueue:
// ConvergenceScheduleID for the production queue, one of its own for any other (test
// clusters sharing a Temporal server each converge their own store).
func ConvergenceScheduleIDFor(taskQueue string) string {
	if taskQueue == defaultTaskQueue || taskQueue == "" {
		return ConvergenceScheduleID
	}
	return ConvergenceScheduleID + "-" + taskQueue
}

// convergeWorkflowIDFor is the id of the runs of taskQueue's schedule.
func convergeWorkflowIDFor(taskQueue string) string {
	if taskQueue == defaultTaskQueue || taskQueue == "" {
		return ConvergeWorkflowID
	}
	return ConvergeWorkflowID + "-" + taskQueue
}

// ConvergeWorkflowInput tunes the pass; zero values mean the store's defaults.
type ConvergeWorkflowInput struct {
	StaleUnclaimed time.Duration `json:"stale_unclaimed,omitempty"`
	RetiredHistory int           `json:"retired_history,omitempty"`
}

// ConvergeWorkflowOutput is what the pass did, as the Converge activity reported it.
type ConvergeWorkflowOutput struct {
	activities.ConvergeOutput
	Resumed activities.ResumeRolloutsOutput `json:"resumed"`
}

// ConvergeWorkflow runs one convergence pass. It is short-lived on purpose: the Schedule
// starts a fresh run every interval, so histories stay tiny and no continue-as-new is needed.
func ConvergeWorkflow(ctx workflow.Context, in ConvergeWorkflowInput) (ConvergeWorkflowOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// One pass over 250,000 instances takes about a second; two minutes leaves room for
		// a loaded database without letting a stuck pass hold the schedule (overlap SKIP)
		// for long.
		StartToCloseTimeout: 2 * time.Minute,
		// A pass whose worker died (killed, or stopped with the cluster) is retried on
		// another within this, instead of holding the schedule (overlap SKIP) until its
		// start-to-close timeout: a cluster restarted after a pass had made its stopping
		// cells' instances SUSPECT waited those two minutes with every index served twice.
		// The activities heartbeat every activities.ConvergeHeartbeat while they run.
		HeartbeatTimeout: 5 * activities.ConvergeHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{string(model.ErrInvalidRequest)},
		},
	})
	var c *activities.Converger
	var out ConvergeWorkflowOutput
	err := workflow.ExecuteActivity(ctx, c.Converge, activities.ConvergeInput{
		StaleUnclaimed: in.StaleUnclaimed,
		RetiredHistory: in.RetiredHistory,
	}).Get(ctx, &out.ConvergeOutput)
	if err != nil {
		return out, err
	}
	// Version 1 added: every rollout under way gets its workflow (the API may have died
	// between committing a rollout and starting it).
	if workflow.GetVersion(ctx, "resume-rollouts", workflow.DefaultVersion, 1) == 1 {
		var r *activities.Resumer
		err = workflow.ExecuteActivity(ctx, r.ResumeRollouts, activities.ResumeRolloutsInput{}).Get(ctx, &out.Resumed)
	}
	return out, err
}

// EnsureConvergenceSchedule creates taskQueue's convergence Schedule
// (ConvergenceScheduleIDFor), or brings an existing one to this interval. Every worker calls
// it at start, so it must be idempotent.
func EnsureConvergenceSchedule(ctx context.Context, c client.Client, every time.Duration, taskQueue string) error {
	if every <= 0 {
		return fmt.Errorf("convergence interval must be positive, got %v", every)
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
	action := &client.ScheduleWorkflowAction{
		ID:        convergeWorkflowIDFor(taskQueue),
		Workflow:  ConvergeWorkflow,
		Args:      []any{ConvergeWorkflowInput{}},
		TaskQueue: taskQueue,
		// A run that outlives a few intervals is stuck; ending it lets the schedule go on.
		WorkflowExecutionTimeout: 10 * time.Minute,
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      ConvergenceScheduleIDFor(taskQueue),
		Spec:    spec,
		Action:  action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		// Passes missed while Temporal was down are not worth catching up: the next one
		// converges everything anyway.
		CatchupWindow: time.Minute,
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create convergence schedule: %w", err)
	}
	h := c.ScheduleClient().GetHandle(ctx, ConvergenceScheduleIDFor(taskQueue))
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := u.Description.Schedule
		current, _ := s.Action.(*client.ScheduleWorkflowAction)
		if current != nil && current.TaskQueue == taskQueue && sameIntervals(s.Spec, spec) {
			return nil, temporal.ErrSkipScheduleUpdate
		}
		if current != nil {
			// Keep the stored action (its arguments are already encoded) and change only
			// where it runs.
			current.TaskQueue = taskQueue
		} else {
			s.Action = action
		}
		s.Spec = &spec
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if err != nil {
		return fmt.Errorf("update convergence schedule: %w", err)
	}
	return nil
}

func sameIntervals(got *client.ScheduleSpec, want client.ScheduleSpec) bool {
	if got == nil || len(got.Calendars) > 0 || len(got.CronExpressions) > 0 {
		return false
	}
	return slices.Equal(got.Intervals, want.Intervals)
}

// TriggerConvergence asks for a pass now, for instance when a cell disappears (ARCHITECTURE.md:
// "convergence runs every 30 s and at once when a cell disappears"). A pass already running
// may have read the store before the cell went, so the trigger is buffered behind it rather
// than skipped.
func TriggerConvergence(ctx context.Context, c client.Client, taskQueue string) error {
	err := c.ScheduleClient().GetHandle(ctx, ConvergenceScheduleIDFor(taskQueue)).Trigger(ctx, client.ScheduleTriggerOptions{
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	})
	if err != nil {
		return fmt.Errorf("trigger convergence: %w", err)
	}
	return nil
}
