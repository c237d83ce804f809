package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RolloutGroupWorkflowType is the registered name of RolloutGroupWorkflow.
const RolloutGroupWorkflowType = "RolloutGroup"

// SignalGroupChanged tells a group's workflow that its row changed (a pause, resume or
// abort committed): it asks the store for its next decision at once.
const SignalGroupChanged = "group_changed"

// groupIterations bounds a run's history: after this many decisions' waits it continues as
// new (the store holds every decision, so the new run needs only the group's id).
const groupIterations = 200

// groupIdle is how long a paused group's workflow waits for a signal before it asks the
// store again: a signal lost to a dead API process delays a resume by at most this.
const groupIdle = time.Minute

// RolloutGroupInput names the group a run rolls.
type RolloutGroupInput struct {
	GroupID string `json:"group_id"`
}

// RolloutGroupOutput is how the group ended.
type RolloutGroupOutput struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// groupOptions let RollGroup run as long as a wave's members take: the heartbeat, not the
// start-to-close timeout, notices a dead worker, and the retry takes up from the store.
var groupOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 24 * time.Hour,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        30 * time.Second,
		NonRetryableErrorTypes: []string{string(model.ErrResourceNotFound)},
	},
}

// RolloutGroupWorkflow is a rollout group's durable clock (ROLLOUTS-NEXT.md section 6). The
// store decides — which members start, when a wave ends, when the group aborts — in
// transactions that hold the budgets (db.AdvanceRolloutGroup); the RollGroup activity carries
// the decisions out while members roll. The workflow waits for what must survive any
// process: the pause between waves (a timer) and a paused group's resume (a signal). Each
// member is an ordinary rollout with its own workflow.
func RolloutGroupWorkflow(ctx workflow.Context, in RolloutGroupInput) (RolloutGroupOutput, error) {
	changed := workflow.GetSignalChannel(ctx, SignalGroupChanged)
	actx := workflow.WithActivityOptions(ctx, groupOptions)
	var acts *activities.RolloutGroups
	for i := 0; ; i++ {
		if i >= groupIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			for changed.ReceiveAsync(nil) {
			}
			return RolloutGroupOutput{}, workflow.NewContinueAsNewError(ctx, RolloutGroupWorkflowType, in)
		}
		var out activities.RollGroupOutput
		if err := workflow.ExecuteActivity(actx, acts.RollGroup, activities.RollGroupInput{GroupID: in.GroupID}).Get(ctx, &out); err != nil {
			if isNotFound(err) {
				return RolloutGroupOutput{State: "gone", Reason: "the group's row is gone"}, nil
			}
			return RolloutGroupOutput{}, err
		}
		if out.Done {
			return RolloutGroupOutput{State: out.State, Reason: out.Reason}, nil
		}
		wait := groupIdle
		if !out.WaveOpensAt.IsZero() {
			wait = max(out.WaveOpensAt.Sub(workflow.Now(ctx)), time.Millisecond)
		}
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) {
			for c.ReceiveAsync(nil) {
			}
		})
		sel.AddFuture(workflow.NewTimer(tctx, wait), func(workflow.Future) {})
		sel.Select(ctx)
		cancel()
	}
}

// GroupClient starts and wakes rollout groups' workflows.
type GroupClient struct {
	Client    client.Client
	TaskQueue string
}

func (gc *GroupClient) options(id string, attrs bool) client.StartWorkflowOptions {
	o := client.StartWorkflowOptions{
		ID:                       model.RolloutGroupWorkflowID(id),
		TaskQueue:                gc.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            fmt.Sprintf("rollout group %s", id),
	}
	if attrs {
		o.TypedSearchAttributes = temporal.NewSearchAttributes(SearchAttrRolloutGroup.ValueSet(id))
	}
	return o
}

// StartGroup starts the group's workflow, or finds the one running (an idempotent start):
// what the API does after creating a group, and convergence for a group without a run.
func (gc *GroupClient) StartGroup(ctx context.Context, id string) error {
	start := func(attrs bool) error {
		_, err := gc.Client.ExecuteWorkflow(ctx, gc.options(id, attrs), RolloutGroupWorkflowType, RolloutGroupInput{GroupID: id})
		return err
	}
	err := start(true)
	if undefinedAttribute(err, SearchAttrRolloutGroup.GetName()) {
		err = start(false)
	}
	if err != nil {
		return fmt.Errorf("start the workflow of rollout group %s: %w", id, err)
	}
	return nil
}

// WakeGroup tells the group's workflow that its row changed, starting one if none runs.
func (gc *GroupClient) WakeGroup(ctx context.Context, id string) error {
	wake := func(attrs bool) error {
		_, err := gc.Client.SignalWithStartWorkflow(ctx, model.RolloutGroupWorkflowID(id), SignalGroupChanged, nil,
			gc.options(id, attrs), RolloutGroupWorkflowType, RolloutGroupInput{GroupID: id})
		return err
	}
	err := wake(true)
	if undefinedAttribute(err, SearchAttrRolloutGroup.GetName()) {
		err = wake(false)
	}
	if err != nil {
		return fmt.Errorf("signal the workflow of rollout group %s: %w", id, err)
	}
	return nil
}
