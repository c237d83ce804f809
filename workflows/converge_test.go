package workflows_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/model"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap/zaptest"
)

// TestMain gives the package's tests a real PostgreSQL and stops it afterwards.
func TestMain(m *testing.M) { dbtest.Main(m) }

// historyFile is a ConvergeWorkflow history recorded on a real dev server; rerecord it with
// BBS_RECORD_HISTORY=1 go test ./workflows/ -run DevServer, and keep the old one as a second
// replay case whenever the workflow changes.
const historyFile = "testdata/converge_history.json"

var (
	converger *activities.Converger // names the activity, as workflows do
	resumer   *activities.Resumer
)

// expectResume registers the ResumeRollouts activity and lets it succeed.
func expectResume(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivity(resumer)
	env.OnActivity(resumer.ResumeRollouts, mock.Anything, mock.Anything).Return(activities.ResumeRolloutsOutput{Checked: 1}, nil).Maybe()
}

// noStarter is a RolloutStarter for tests with no rollouts to resume.
type noStarter struct{}

func (noStarter) ResumeRollout(context.Context, *model.Rollout, string) error { return nil }

func TestConvergeWorkflowRunsTheActivity(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(converger)
	expectResume(env)
	want := activities.ConvergeOutput{MissingIndices: 2, Suspected: 1}
	env.OnActivity(converger.Converge, mock.Anything, activities.ConvergeInput{RetiredHistory: 3}).Return(want, nil).Once()

	env.ExecuteWorkflow(workflows.ConvergeWorkflow, workflows.ConvergeWorkflowInput{RetiredHistory: 3})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var out workflows.ConvergeWorkflowOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.ConvergeOutput != want {
		t.Fatalf("result = %+v, %v", out, err)
	}
	env.AssertExpectations(t)
}

func TestConvergeWorkflowRetriesAFailedPass(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(converger)
	expectResume(env)
	env.OnActivity(converger.Converge, mock.Anything, mock.Anything).Return(activities.ConvergeOutput{}, errors.New("database unreachable")).Twice()
	env.OnActivity(converger.Converge, mock.Anything, mock.Anything).Return(activities.ConvergeOutput{MissingIndices: 1}, nil).Once()

	env.ExecuteWorkflow(workflows.ConvergeWorkflow, workflows.ConvergeWorkflowInput{})
	var out workflows.ConvergeWorkflowOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.MissingIndices != 1 {
		t.Fatalf("result = %+v, %v", out, err)
	}
	env.AssertNumberOfCalls(t, "Converge", 3)
}

func TestConvergeWorkflowDoesNotRetryInvalidInput(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(converger)
	expectResume(env)
	env.OnActivity(converger.Converge, mock.Anything, mock.Anything).Return(activities.ConvergeOutput{},
		temporal.NewNonRetryableApplicationError("negative history", string(model.ErrInvalidRequest), nil))

	env.ExecuteWorkflow(workflows.ConvergeWorkflow, workflows.ConvergeWorkflowInput{RetiredHistory: -1})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != string(model.ErrInvalidRequest) {
		t.Fatalf("workflow error = %v, want InvalidRequest", err)
	}
	env.AssertNumberOfCalls(t, "Converge", 1)
}

// Replaying a recorded history proves the workflow code still makes the same decisions.
func TestConvergeWorkflowReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	bbsworker.RegisterWorkflows(r)
	if err := r.ReplayWorkflowHistoryFromJSONFile(temporalzap.New(zaptest.NewLogger(t)), historyFile); err != nil {
		t.Fatal(err)
	}
}

func scheduleInterval(t *testing.T, c client.Client) time.Duration {
	t.Helper()
	d, err := c.ScheduleClient().GetHandle(context.Background(), workflows.ConvergenceScheduleIDFor("test-queue")).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Schedule.Spec.Intervals) != 1 {
		t.Fatalf("intervals = %+v", d.Schedule.Spec.Intervals)
	}
	return d.Schedule.Spec.Intervals[0].Every
}

func TestConvergenceScheduleOnDevServer(t *testing.T) {
	c := temporaltest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := dbtest.NewStore(t)
	if _, err := store.DesireLRP(ctx, &model.DesiredLRP{
		ProcessGUID: "app", Domain: "cf-apps", Instances: 2,
		LRPDefinition: model.LRPDefinition{RootFS: "docker:///busybox", Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.DB().ExecContext(ctx, `DELETE FROM actual_lrps WHERE instance_index = 1`); err != nil {
		t.Fatal(err)
	}

	w := bbsworker.New(c, "test-queue", bbsworker.Deps{ConvergeStore: store, ResumeStore: store, Rollouts: noStarter{},
		Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Intervals align to the Unix epoch: a long one keeps scheduled runs out of the test.
	const every = 1000 * time.Hour
	for range 2 {
		if err := workflows.EnsureConvergenceSchedule(ctx, c, every, "test-queue"); err != nil {
			t.Fatalf("EnsureConvergenceSchedule: %v", err)
		}
	}
	if got := scheduleInterval(t, c); got != every {
		t.Fatalf("interval = %v, want %v", got, every)
	}
	if err := workflows.EnsureConvergenceSchedule(ctx, c, every+time.Hour, "test-queue"); err != nil {
		t.Fatalf("EnsureConvergenceSchedule with a new interval: %v", err)
	}
	if got := scheduleInterval(t, c); got != every+time.Hour {
		t.Fatalf("interval after the update = %v, want %v", got, every+time.Hour)
	}

	if err := workflows.TriggerConvergence(ctx, c, "test-queue"); err != nil {
		t.Fatal(err)
	}
	run := triggeredRun(ctx, t, c)
	var out workflows.ConvergeWorkflowOutput
	if err := c.GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, &out); err != nil {
		t.Fatalf("converge workflow: %v", err)
	}
	if out.MissingIndices != 1 {
		t.Fatalf("output = %+v, want the missing index created", out)
	}
	lrps, err := store.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app"})
	if err != nil || len(lrps) != 2 {
		t.Fatalf("instances after the pass = %d, %v", len(lrps), err)
	}
	if os.Getenv("BBS_RECORD_HISTORY") != "" {
		recordHistory(ctx, t, c, run.WorkflowID, run.FirstExecutionRunID, historyFile)
	}
}

// stuckPasses is a ConvergeStore whose passes never return and ignore their context, as a
// worker killed mid-pass leaves its attempt: no result, and (its heartbeats stopped with it)
// no sign of life.
type stuckPasses struct {
	entered chan struct{}
	release chan struct{}
}

func (s stuckPasses) Converge(context.Context, db.ConvergeOptions) (*db.ConvergeResult, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return nil, errors.New("a pass of a worker that had gone")
}

// A pass whose worker dies is retried on another worker once its heartbeats stop, not after
// the pass's start-to-close timeout: overlap SKIP holds every scheduled pass behind it until
// then. A cluster stopped while a pass ran (its cells had just withdrawn) came back with each
// index served by a SUSPECT and its replacement for the two minutes of that timeout.
func TestConvergencePassOfADeadWorkerIsRetriedAfterItsHeartbeats(t *testing.T) {
	c := temporaltest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	store := dbtest.NewStore(t)
	stuck := stuckPasses{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(stuck.release)
	dying := bbsworker.New(c, "test-queue", bbsworker.Deps{ConvergeStore: stuck, ResumeStore: store, Rollouts: noStarter{},
		Log: zaptest.NewLogger(t)})
	if err := dying.Start(); err != nil {
		t.Fatal(err)
	}
	if err := workflows.EnsureConvergenceSchedule(ctx, c, 1000*time.Hour, "test-queue"); err != nil {
		t.Fatal(err)
	}
	if err := workflows.TriggerConvergence(ctx, c, "test-queue"); err != nil {
		t.Fatal(err)
	}
	run := triggeredRun(ctx, t, c)
	select {
	case <-stuck.entered:
	case <-ctx.Done():
		t.Fatal("the pass never reached the first worker")
	}
	dying.Stop()

	w := bbsworker.New(c, "test-queue", bbsworker.Deps{ConvergeStore: store, ResumeStore: store, Rollouts: noStarter{},
		Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := c.GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, nil); err != nil {
		t.Fatalf("the pass after its first worker died: %v", err)
	}
	iter := c.GetWorkflowHistory(ctx, run.WorkflowID, run.FirstExecutionRunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.Attempt > 1 {
			if tt := a.GetLastFailure().GetTimeoutFailureInfo().GetTimeoutType(); tt != enumspb.TIMEOUT_TYPE_HEARTBEAT {
				t.Fatalf("the pass was retried after a %v timeout (failure %v), want its heartbeat's", tt, a.GetLastFailure())
			}
			return
		}
	}
	t.Fatal("the pass completed without a retry: the first worker's attempt did not die with it")
}

// triggeredRun waits for the schedule to start the triggered workflow.
func triggeredRun(ctx context.Context, t *testing.T, c client.Client) *client.ScheduleWorkflowExecution {
	t.Helper()
	h := c.ScheduleClient().GetHandle(ctx, workflows.ConvergenceScheduleIDFor("test-queue"))
	for ctx.Err() == nil {
		d, err := h.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(d.Info.RecentActions); n > 0 && d.Info.RecentActions[n-1].StartWorkflowResult != nil {
			return d.Info.RecentActions[n-1].StartWorkflowResult
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the triggered run never started")
	return nil
}

// recordHistory saves a workflow run's history as JSON into file, for the replay tests.
func recordHistory(ctx context.Context, t *testing.T, c client.Client, id, runID, file string) {
	t.Helper()
	iter := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events into %s", len(h.Events), file)
}

// The activity's store is the real one: the interface must stay satisfied by *db.Store.
var _ activities.ConvergeStore = (*db.Store)(nil)
