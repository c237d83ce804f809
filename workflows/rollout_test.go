package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

var rollouts *activities.Rollouts // names the activities, as the workflow does

// world is an in-memory LRP behind the mocked activities: it records every call, in order,
// with the workflow clock's time.
type world struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu        sync.Mutex
	calls     []string
	at        map[string]time.Duration
	start     time.Time
	instances int32
	exists    bool
	healthy   string
	progress  []activities.RecordProgressInput
	finished  []activities.FinishRolloutInput
	awaits    []activities.AwaitRunningInput
	// onRetireOthers runs after a RetireOthers call (to scale, remove the LRP, ...).
	onRetireOthers func(in activities.RetireOthersInput)
	// rollout, when set, is the row LoadRollout returns; beginErr fails BeginCancel.
	rollout  *model.Rollout
	beginErr error
	// off is what IndicesOff answers: indices off the from definition the walk did not
	// replace (a scale-up's).
	off []int32
	// await decides AwaitRunning's answer; nil means RUNNING at once.
	await func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error)
	// legacy runs the workflow as the type recorded before workflows.RolloutWorkflowType.
	legacy bool
	// generation counts SetTraffic calls; refuseWeight makes the capacity guard refuse.
	generation   int64
	refuseWeight bool
	// verdicts are JudgeAnalysis's answers by window (default: pass).
	verdicts map[string]string
	// gate is the rollout's gate at an instant of the workflow clock, as LoadRollout and
	// RolloutGate answer it (nil: none, as before the gate).
	gate func(at time.Time) *model.RolloutGate
}

// execute runs the rollout workflow with in, as workflows.RolloutWorkflowType unless legacy.
func (w *world) execute(in workflows.RolloutInput) {
	if w.legacy {
		w.env.ExecuteWorkflow(workflows.LegacyRolloutWorkflowType, in)
		return
	}
	w.env.ExecuteWorkflow(workflows.RolloutWorkflowType, in)
}

func newWorld(t *testing.T, instances int32) *world {
	var suite testsuite.WorkflowTestSuite
	w := &world{t: t, env: suite.NewTestWorkflowEnvironment(), instances: instances, exists: true,
		healthy: "def1", at: map[string]time.Duration{}}
	w.start = w.env.Now()
	w.env.RegisterActivity(rollouts)
	bbsworker.RegisterWorkflows(w.env)
	env := w.env
	// A wait is recorded when it starts: a mocked one that is interrupted never returns.
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != "AwaitRunning" {
			return
		}
		var in activities.AwaitRunningInput
		if err := args.Get(&in); err != nil {
			t.Error(err)
		}
		w.mu.Lock()
		w.awaits = append(w.awaits, in)
		w.mu.Unlock()
		w.record(fmt.Sprintf("await %s %d", in.DefinitionID, in.Index))
	})
	env.OnActivity(rollouts.LoadRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.LoadRolloutInput) (activities.LoadRolloutOutput, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.exists {
				return activities.LoadRolloutOutput{}, nil
			}
			row := model.Rollout{ID: in.RolloutID, State: model.RolloutActive}
			if w.rollout != nil {
				row = *w.rollout
			}
			out := activities.LoadRolloutOutput{Exists: true, Instances: w.instances, HealthyDefinitionID: w.healthy, Rollout: row}
			if w.gate != nil {
				out.Gate = w.gate(w.env.Now())
			}
			return out, nil
		})
	env.OnActivity(rollouts.RolloutGate, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RolloutGateInput) (model.RolloutGate, error) {
			w.record("gate")
			if !in.At.Equal(w.env.Now()) {
				t.Errorf("RolloutGate asked at %s, the workflow's time is %s", in.At, w.env.Now())
			}
			return *w.gate(in.At), nil
		})
	env.OnActivity(rollouts.DesireInstance, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.InstanceInput) (activities.DesireInstanceOutput, error) {
			w.record(fmt.Sprintf("desire %s %d", in.DefinitionID, in.Index))
			return activities.DesireInstanceOutput{State: model.StateUnclaimed}, w.gone()
		})
	env.OnActivity(rollouts.RetireOthers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RetireOthersInput) (activities.RetireOutput, error) {
			w.record(fmt.Sprintf("others %s %d", in.Keep, in.Index))
			if w.onRetireOthers != nil {
				w.onRetireOthers(in)
			}
			return activities.RetireOutput{}, nil
		})
	env.OnActivity(rollouts.RetireInstance, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.InstanceInput) (activities.RetireOutput, error) {
			w.record(fmt.Sprintf("retire %s %d", in.DefinitionID, in.Index))
			return activities.RetireOutput{}, nil
		})
	env.OnActivity(rollouts.RecordProgress, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecordProgressInput) (activities.Empty, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.progress = append(w.progress, in)
			return activities.Empty{}, nil
		})
	env.OnActivity(rollouts.BeginCancel, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RolloutIDInput) (activities.Empty, error) {
			w.record("begin-cancel " + in.RolloutID)
			return activities.Empty{}, w.beginErr
		})
	env.OnActivity(rollouts.IndicesOff, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.IndicesOffInput) (activities.IndicesOutput, error) {
			w.record("indices-off " + in.DefinitionID)
			w.mu.Lock()
			defer w.mu.Unlock()
			return activities.IndicesOutput{Indices: w.off}, nil
		})
	env.OnActivity(rollouts.FinishRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FinishRolloutInput) (activities.Empty, error) {
			w.record("finish " + in.RolloutID + " " + in.State)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.finished = append(w.finished, in)
			return activities.Empty{}, nil
		})
	// A run of workflows.RolloutWorkflowType ends in one activity: recorded as the three a
	// legacy run calls (the final progress, the prunes, the finish).
	env.OnActivity(rollouts.CompleteRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CompleteRolloutInput) (activities.Empty, error) {
			for _, d := range in.Prune {
				w.record("prune " + d)
			}
			w.record("finish " + in.RolloutID + " " + in.State)
			w.record("complete " + in.RolloutID)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.progress = append(w.progress, activities.RecordProgressInput{RolloutID: in.RolloutID, Progress: in.Progress})
			w.finished = append(w.finished, activities.FinishRolloutInput{RolloutID: in.RolloutID, State: in.State})
			return activities.Empty{}, nil
		})
	env.OnActivity(rollouts.StartRollback, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.StartRollbackInput) (activities.StartRollbackOutput, error) {
			w.record("rollback " + in.DefinitionID)
			if in.DefinitionID == "pruned" {
				return activities.StartRollbackOutput{}, temporal.NewNonRetryableApplicationError("no such definition", string(model.ErrResourceNotFound), nil)
			}
			return activities.StartRollbackOutput{RolloutID: "rb", FromDefinitionID: "def1", ToDefinitionID: in.DefinitionID, Kind: model.RolloutKindRollback}, nil
		})
	env.OnActivity(rollouts.SetTraffic, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SetTrafficInput) (activities.SetTrafficOutput, error) {
			w.mu.Lock()
			w.generation++
			gen := w.generation
			refuse := w.refuseWeight
			w.mu.Unlock()
			switch {
			case in.Clear:
				w.record("traffic clear")
			case in.Guard && refuse:
				w.record(fmt.Sprintf("traffic refused %d", in.Weight))
				return activities.SetTrafficOutput{Refused: "not enough instances"}, nil
			default:
				w.record(fmt.Sprintf("traffic %s %d", in.ToDefinitionID, in.Weight))
			}
			return activities.SetTrafficOutput{Split: model.TrafficSplit{Generation: gen}}, nil
		})
	env.OnActivity(rollouts.AwaitTraffic, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AwaitTrafficInput) (activities.AwaitTrafficOutput, error) {
			w.record(fmt.Sprintf("acked %d", in.Generation))
			return activities.AwaitTrafficOutput{Acked: true}, nil
		})
	env.OnActivity(rollouts.MarkAnalysis, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.MarkAnalysisInput) (activities.MarkAnalysisOutput, error) {
			w.record("mark " + in.Name)
			return activities.MarkAnalysisOutput{}, nil
		})
	env.OnActivity(rollouts.JudgeAnalysis, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.JudgeAnalysisInput) (model.AnalysisVerdict, error) {
			w.mu.Lock()
			verdict := w.verdicts[in.Window]
			w.mu.Unlock()
			if verdict == "" {
				verdict = model.VerdictPass
			}
			w.record("judge " + in.Window + " " + verdict)
			return model.AnalysisVerdict{Window: in.Window, Verdict: verdict, Reason: "as the test says"}, nil
		})
	env.OnActivity(rollouts.PruneDefinition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PruneDefinitionInput) (activities.PruneDefinitionOutput, error) {
			w.record("prune " + in.DefinitionID)
			return activities.PruneDefinitionOutput{}, nil
		})
	return w
}

// onAwait mocks AwaitRunning for the instances match accepts, answering after delay on the
// workflow clock (a wait nothing interrupts takes that long).
func (w *world) onAwait(match func(activities.AwaitRunningInput) bool, delay time.Duration) {
	c := w.env.OnActivity(rollouts.AwaitRunning, mock.Anything, mock.MatchedBy(match)).Return(
		func(_ context.Context, in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
			w.mu.Lock()
			answer := w.await
			w.mu.Unlock()
			if answer != nil {
				return answer(in)
			}
			w.mu.Lock()
			w.healthy = in.DefinitionID // the store's rule: the first RUNNING instance proves it
			w.mu.Unlock()
			return activities.AwaitRunningOutput{Running: true}, nil
		})
	if delay > 0 {
		c.After(delay)
	}
}

func (w *world) record(call string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, call)
	if _, ok := w.at[call]; !ok {
		w.at[call] = w.env.Now().Sub(w.start)
	}
}

func (w *world) gone() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.exists {
		return nil
	}
	return temporal.NewNonRetryableApplicationError("no LRP", string(model.ErrResourceNotFound), nil)
}

// walk returns the calls that change instances (desire, await, others, retire), in order.
func (w *world) walk() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.calls {
		if strings.HasPrefix(c, "desire") || strings.HasPrefix(c, "await") || strings.HasPrefix(c, "others") || strings.HasPrefix(c, "retire") {
			out = append(out, c)
		}
	}
	return out
}

func (w *world) has(call string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.calls, call)
}

func (w *world) signal(after time.Duration, name string, arg any) {
	w.env.RegisterDelayedCallback(func() { w.env.SignalWorkflow(name, arg) }, after)
}

func (w *world) query() workflows.RolloutProgress {
	w.t.Helper()
	v, err := w.env.QueryWorkflow(workflows.QueryProgress)
	if err != nil {
		w.t.Fatalf("query: %v", err)
	}
	var p workflows.RolloutProgress
	if err := v.Get(&p); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) run(in workflows.RolloutInput) workflows.RolloutOutput {
	w.t.Helper()
	w.execute(in)
	if !w.env.IsWorkflowCompleted() {
		w.t.Fatal("the workflow did not complete")
	}
	var out workflows.RolloutOutput
	if err := w.env.GetWorkflowResult(&out); err != nil {
		w.t.Fatalf("workflow error: %v", err)
	}
	return out
}

func input() workflows.RolloutInput {
	return workflows.RolloutInput{RolloutID: "r1", ProcessGUID: "app", Domain: "cf-apps",
		FromDefinitionID: "def1", ToDefinitionID: "def2", Kind: model.RolloutKindUpdate}
}

func forward(def string, indices ...int32) []string {
	var out []string
	for _, i := range indices {
		out = append(out, fmt.Sprintf("desire %s %d", def, i), fmt.Sprintf("await %s %d", def, i), fmt.Sprintf("others %s %d", def, i))
	}
	return out
}

func assertWalk(t *testing.T, w *world, want ...[]string) {
	t.Helper()
	if got, all := w.walk(), slices.Concat(want...); !slices.Equal(got, all) {
		t.Fatalf("walk:\n got  %q\n want %q", got, all)
	}
}

func anyAwait(activities.AwaitRunningInput) bool { return true }

func awaitOf(def string, index int32) func(activities.AwaitRunningInput) bool {
	return func(in activities.AwaitRunningInput) bool { return in.DefinitionID == def && in.Index == index }
}

func notAwaitOf(def string, index int32) func(activities.AwaitRunningInput) bool {
	return func(in activities.AwaitRunningInput) bool { return !(in.DefinitionID == def && in.Index == index) }
}

// Seed 000, fully functional definition: index by index, the new instance at j runs before
// the old one at j retires.
func TestRolloutWalksEveryIndexInOrder(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 0)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1, 2))
	if out.State != model.RolloutCompleted || !slices.Equal(out.Updated, []int32{0, 1, 2}) || len(out.GivenUp) != 0 {
		t.Fatalf("output = %+v", out)
	}
	if !w.has("prune def1") || w.has("prune def2") || !w.has("finish r1 completed") {
		t.Fatalf("calls = %q", w.calls)
	}
	last := w.progress[len(w.progress)-1].Progress
	if last.UpdatedInstances != 3 || last.Instances != 3 || last.State != model.RolloutActive {
		t.Fatalf("last progress = %+v", last)
	}
	if w.awaits[0].Deadline != 0 || w.awaits[1].Deadline != workflows.DefaultIndexDeadline {
		t.Fatalf("deadlines = %v, %v: none until the definition is healthy", w.awaits[0].Deadline, w.awaits[1].Deadline)
	}
}

// A rollout ends in one local activity (its final progress, the end, the prunes in one
// transaction); a run of the legacy type, recorded before, keeps its three and its
// "final-progress" version, and walks and ends the same.
func TestRolloutEndsInOneActivityUnlessLegacy(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			w := newWorld(t, 3)
			w.legacy = legacy
			w.onAwait(anyAwait, 0)
			out := w.run(input())
			assertWalk(t, w, forward("def2", 0, 1, 2))
			if out.State != model.RolloutCompleted || !w.has("prune def1") || !w.has("finish r1 completed") {
				t.Fatalf("output %+v, calls %q", out, w.calls)
			}
			if w.has("complete r1") == legacy {
				t.Fatalf("legacy %v: calls %q", legacy, w.calls)
			}
			if last := w.progress[len(w.progress)-1].Progress; last.UpdatedInstances != 3 || last.CurrentIndex != 3 {
				t.Fatalf("last progress = %+v", last)
			}
		})
	}
}

// Seed 000, failing definition: the walk stays at index 0 forever and no old instance
// retires; a cancel then retires the new instance and walks nothing back.
func TestRolloutFailingDefinitionWaitsAtIndexZero(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 1000*time.Hour)
	w.env.RegisterDelayedCallback(func() {
		p := w.query()
		if p.State != model.RolloutActive || p.CurrentIndex != 0 || !slices.Equal(p.InFlight, []int32{0}) || len(p.Updated) != 0 {
			t.Errorf("progress after 10 days = %+v", p)
		}
		w.env.SignalWorkflow(workflows.SignalCancel, nil)
	}, 240*time.Hour)
	out := w.run(input())
	assertWalk(t, w, []string{"desire def2 0", "await def2 0", "retire def2 0"})
	if out.State != model.RolloutCanceled || !w.has("begin-cancel r1") || !w.has("finish r1 canceled") || !w.has("prune def2") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	if w.awaits[0].Deadline != 0 {
		t.Fatalf("deadline %v for a definition never healthy", w.awaits[0].Deadline)
	}
}

// Seed 000, flaky definition: once healthy, an index that does not run within the deadline
// is given up (its old instance kept) and the walk goes on.
func TestRolloutGivesUpAFlakyIndex(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 0)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		if in.Index == 1 {
			if in.Deadline != 2*time.Minute {
				t.Errorf("index 1 deadline = %v", in.Deadline)
			}
			return activities.AwaitRunningOutput{GivenUp: true, Reason: "crashing"}, nil
		}
		w.mu.Lock()
		w.healthy = in.DefinitionID
		w.mu.Unlock()
		return activities.AwaitRunningOutput{Running: true}, nil
	}
	in := input()
	in.IndexDeadline = 2 * time.Minute
	out := w.run(in)
	assertWalk(t, w, forward("def2", 0), []string{"desire def2 1", "await def2 1", "retire def2 1"}, forward("def2", 2))
	if out.State != model.RolloutCompleted || !slices.Equal(out.GivenUp, []int32{1}) || !slices.Equal(out.Updated, []int32{0, 2}) {
		t.Fatalf("output = %+v", out)
	}
	if last := w.progress[len(w.progress)-1].Progress; !slices.Equal(last.GivenUpIndices, []int32{1}) {
		t.Fatalf("last progress = %+v", last)
	}
}

// Seed 001, CancelUpdateDesiredLRP: after two indices, the one in flight retires its new
// instance and the updated ones walk back, last first, to the from definition.
func TestRolloutCancelWalksBack(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(notAwaitOf("def2", 2), 0)
	w.signal(30*time.Minute, workflows.SignalCancel, nil)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def1", 1, 0))
	if out.State != model.RolloutCanceled || !w.has("finish r1 canceled") || !w.has("prune def2") || w.has("prune def1") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	if w.at["begin-cancel r1"] > w.at["desire def1 1"] {
		t.Fatal("the walk back started before BeginCancel")
	}
	for _, a := range w.awaits[3:] {
		if a.Deadline != 0 {
			t.Fatalf("walk-back wait %+v has a deadline", a)
		}
	}
}

// A Temporal cancellation (`temporal workflow cancel`) rolls back like the cancel signal.
func TestRolloutTemporalCancellationRollsBack(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(awaitOf("def2", 1), time.Hour)
	w.onAwait(notAwaitOf("def2", 1), 0)
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, 30*time.Minute)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0), []string{"desire def2 1", "await def2 1", "retire def2 1"}, forward("def1", 0))
	if out.State != model.RolloutCanceled {
		t.Fatalf("output %+v", out)
	}
}

func TestRolloutPauseAndResume(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(5*time.Minute, workflows.SignalPause, nil)
	w.env.RegisterDelayedCallback(func() {
		if p := w.query(); p.State != model.RolloutPaused || !slices.Equal(p.Updated, []int32{0}) || len(p.InFlight) != 0 {
			t.Errorf("progress while paused = %+v", p)
		}
		w.env.SignalWorkflow(workflows.SignalResume, nil)
	}, 3*time.Hour)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1, 2))
	if out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	if at := w.at["desire def2 1"]; at < 3*time.Hour {
		t.Fatalf("index 1 started at %v, during the pause", at)
	}
	if !slices.ContainsFunc(w.progress, func(p activities.RecordProgressInput) bool { return p.Progress.State == model.RolloutPaused }) {
		t.Fatal("the pause was never recorded")
	}
}

// Seed 000, a new definition during a rollout: the def2 instance at index 2, not yet
// running, retires; the walk restarts at 0 toward def3; def2 is pruned at the end.
func TestRolloutSupersedeRestartsAtZero(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(notAwaitOf("def2", 2), 0)
	w.signal(30*time.Minute, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3"})
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def3", 0, 1, 2, 3))
	if out.State != model.RolloutCompleted || out.RolloutID != "r2" || !slices.Equal(out.Updated, []int32{0, 1, 2, 3}) {
		t.Fatalf("output %+v", out)
	}
	if !w.has("prune def1") || !w.has("prune def2") || w.has("prune def3") || !w.has("finish r2 completed") || w.has("finish r1 completed") {
		t.Fatalf("calls %q", w.calls)
	}
	if last := w.progress[len(w.progress)-1]; last.RolloutID != "r2" {
		t.Fatalf("progress recorded on %q", last.RolloutID)
	}
}

// An operator's rollback signal during a walk records a rollback rollout and walks to its
// definition from index 0; one to a definition that is gone is refused and the walk goes on.
func TestRolloutRollbackSignal(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(awaitOf("def2", 1), time.Hour)
	w.onAwait(notAwaitOf("def2", 1), 0)
	w.signal(10*time.Minute, workflows.SignalRollback, workflows.RollbackSignal{DefinitionID: "pruned"})
	w.signal(30*time.Minute, workflows.SignalRollback, workflows.RollbackSignal{DefinitionID: "def0"})
	out := w.run(input())
	if out.State != model.RolloutCompleted || out.RolloutID != "rb" || !w.has("rollback pruned") || !w.has("rollback def0") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
	if !w.has("desire def0 0") || !w.has("desire def0 2") || !w.has("finish rb completed") || !w.has("prune def2") {
		t.Fatalf("the walk did not switch to the rollback: %q", w.calls)
	}
}

// A rollback signal without a definition (`--name rollback`, no input) undoes the rollout
// as a cancel does.
func TestRolloutRollbackWithoutDefinitionCancels(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(notAwaitOf("def2", 2), 0)
	w.signal(30*time.Minute, workflows.SignalRollback, nil)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def1", 1, 0))
	if out.State != model.RolloutCanceled || !w.has("begin-cancel r1") || !w.has("finish r1 canceled") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
}

// A cancel after a supersede walks back every index that does not run the from definition,
// including one only the superseded target reached.
func TestRolloutCancelAfterSupersedeWalksBackBothTargets(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(awaitOf("def3", 1), time.Hour)
	w.onAwait(func(in activities.AwaitRunningInput) bool {
		return !awaitOf("def2", 2)(in) && !awaitOf("def3", 1)(in)
	}, 0)
	w.signal(30*time.Minute, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3"})
	w.signal(60*time.Minute, workflows.SignalCancel, nil)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"},
		forward("def3", 0), []string{"desire def3 1", "await def3 1", "retire def3 1"}, forward("def1", 1, 0))
	if out.State != model.RolloutCanceled || !w.has("begin-cancel r2") || !w.has("prune def2") || !w.has("prune def3") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
}

// MaxInFlight 2: once the definition is healthy, two indices are replaced at once.
func TestRolloutMaxInFlight(t *testing.T) {
	w := newWorld(t, 5)
	w.onAwait(anyAwait, 10*time.Minute)
	in := input()
	in.MaxInFlight = 2
	out := w.run(in)
	if out.State != model.RolloutCompleted || !slices.Equal(out.Updated, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("output %+v", out)
	}
	want := map[string]time.Duration{"desire def2 0": 0, "desire def2 1": 10 * time.Minute, "desire def2 2": 10 * time.Minute,
		"desire def2 3": 20 * time.Minute, "desire def2 4": 20 * time.Minute}
	for call, at := range want {
		if w.at[call] != at {
			t.Errorf("%s at %v, want %v (all: %v)", call, w.at[call], at, w.at)
		}
	}
	// Zero downtime still holds per index: nothing old at j retires before j's new instance ran.
	for j := range 5 {
		if w.at[fmt.Sprintf("others def2 %d", j)] < w.at[fmt.Sprintf("desire def2 %d", j)]+10*time.Minute {
			t.Errorf("index %d retired its old instance early", j)
		}
	}
}

// Scaling down mid-walk: indices past the new count are not walked.
func TestRolloutFollowsAScaleDown(t *testing.T) {
	w := newWorld(t, 5)
	w.onAwait(anyAwait, 0)
	w.onRetireOthers = func(in activities.RetireOthersInput) {
		if in.Index == 1 {
			w.mu.Lock()
			w.instances = 3
			w.mu.Unlock()
		}
	}
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1, 2))
	if out.State != model.RolloutCompleted || w.progress[len(w.progress)-1].Progress.Instances != 3 {
		t.Fatalf("output %+v, progress %+v", out, w.progress[len(w.progress)-1])
	}
}

// Scaling up mid-walk: the new indices are walked too.
func TestRolloutFollowsAScaleUp(t *testing.T) {
	w := newWorld(t, 2)
	w.onAwait(anyAwait, 0)
	w.onRetireOthers = func(in activities.RetireOthersInput) {
		if in.Index == 1 {
			w.mu.Lock()
			w.instances = 3
			w.mu.Unlock()
		}
	}
	w.run(input())
	assertWalk(t, w, forward("def2", 0, 1, 2))
}

func TestRolloutFailsWhenTheLRPIsRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(w *world)
	}{
		{"seen by LoadRollout", func(w *world) {
			w.onAwait(anyAwait, 0)
			w.onRetireOthers = func(in activities.RetireOthersInput) {
				w.mu.Lock()
				w.exists = false
				w.mu.Unlock()
			}
		}},
		{"seen by AwaitRunning", func(w *world) {
			w.onAwait(anyAwait, 0)
			w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
				w.mu.Lock()
				w.exists = false
				w.mu.Unlock()
				return activities.AwaitRunningOutput{}, temporal.NewNonRetryableApplicationError("LRP removed", string(model.ErrResourceNotFound), nil)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 3)
			tc.gone(w)
			out := w.run(input())
			if out.State != model.RolloutFailed || out.Reason != "the LRP was removed" || !w.has("finish r1 failed") || w.has("desire def2 1") {
				t.Fatalf("output %+v, calls %q", out, w.calls)
			}
		})
	}
}

func TestRolloutFailsOnAnUnexpectedError(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 0)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		return activities.AwaitRunningOutput{}, temporal.NewNonRetryableApplicationError("bad index", string(model.ErrInvalidRequest), nil)
	}
	w.execute(input())
	var appErr *temporal.ApplicationError
	if err := w.env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != string(model.ErrInvalidRequest) {
		t.Fatalf("workflow error = %v", err)
	}
	if !w.has("finish r1 failed") {
		t.Fatalf("calls %q", w.calls)
	}
}

// A stale start (the converger restarting a rollout that already ended) does nothing.
func TestRolloutStaleStartDoesNothing(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(rollouts)
	bbsworker.RegisterWorkflows(env)
	env.OnActivity(rollouts.LoadRollout, mock.Anything, mock.Anything).Return(activities.LoadRolloutOutput{
		Exists: true, Instances: 3, Rollout: model.Rollout{ID: "r1", State: model.RolloutSuperseded}}, nil)
	env.ExecuteWorkflow(workflows.RolloutWorkflowType, input())
	var out workflows.RolloutOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.State != model.RolloutSuperseded {
		t.Fatalf("output %+v, %v", out, err)
	}
}

func continuedInput(t *testing.T, err error) workflows.RolloutInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want a continue-as-new", err)
	}
	var next workflows.RolloutInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

// Continue-as-new carries the walk, and a signal that arrives with the last step of a run
// is carried too.
func TestRolloutContinuesAsNewWithItsState(t *testing.T) {
	w := newWorld(t, 5)
	w.onAwait(anyAwait, 10*time.Minute)
	in := input()
	in.ContinueAsNewEvery = 2
	w.execute(in)
	next := continuedInput(t, w.env.GetWorkflowError())
	if next.NextIndex != 2 || !slices.Equal(next.Updated, []int32{0, 1}) || !next.Healthy || next.RolloutID != "r1" || next.ContinueAsNewEvery != 2 {
		t.Fatalf("carried %+v", next)
	}

	w2 := newWorld(t, 5)
	w2.healthy = "def2"
	w2.onAwait(anyAwait, 10*time.Minute)
	w2.signal(20*time.Minute, workflows.SignalCancel, nil)
	w2.execute(next)
	next2 := continuedInput(t, w2.env.GetWorkflowError())
	// The cancel came with index 3's end: whichever the workflow saw first, it must be carried.
	if !next2.Canceling || !slices.Equal(next2.Replaced[:3], []int32{0, 1, 2}) {
		t.Fatalf("carried %+v: the cancel was lost", next2)
	}

	w3 := newWorld(t, 5)
	w3.onAwait(anyAwait, 0)
	next2.ContinueAsNewEvery = 100
	out := w3.run(next2)
	back := slices.Clone(next2.Replaced)
	slices.Reverse(back)
	assertWalk(t, w3, forward("def1", back...))
	if out.State != model.RolloutCanceled || !w3.has("begin-cancel r1") {
		t.Fatalf("output %+v, calls %q", out, w3.calls)
	}
}

// A definition pruned under the walk is not a removed LRP: the rollout fails with the cause.
func TestRolloutFailsWhenADefinitionIsMissing(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, 0)
	w.await = func(in activities.AwaitRunningInput) (activities.AwaitRunningOutput, error) {
		return activities.AwaitRunningOutput{}, temporal.NewNonRetryableApplicationError("no live definition", string(model.ErrResourceNotFound), nil)
	}
	w.execute(input())
	if err := w.env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "no live definition") {
		t.Fatalf("workflow error = %v", err)
	}
	if len(w.finished) != 1 || w.finished[0].State != model.RolloutFailed || !strings.Contains(w.finished[0].Reason, "no live definition") {
		t.Fatalf("finished %+v", w.finished)
	}
}

// A workflow started again for a rollout an earlier run walked (its state lost) walks every
// index back on cancel, since it cannot know which were replaced.
func TestRolloutRestartedRunWalksEveryIndexBack(t *testing.T) {
	w := newWorld(t, 3)
	w.healthy = "def2"
	w.rollout = &model.Rollout{ID: "r1", State: model.RolloutCanceling, RunID: "an-earlier-run", CurrentIndex: 2}
	w.onAwait(anyAwait, 0)
	out := w.run(input())
	assertWalk(t, w, forward("def1", 2, 1, 0))
	if out.State != model.RolloutCanceled || !w.has("begin-cancel r1") {
		t.Fatalf("output %+v, calls %q", out, w.calls)
	}
}

// BeginCancel on a row that ended meanwhile (superseded, its signal on the way) does not
// stop the workflow.
func TestRolloutCancelOfAnEndedRowStillWalksBack(t *testing.T) {
	w := newWorld(t, 3)
	w.beginErr = temporal.NewNonRetryableApplicationError("rollout r1 is superseded", string(model.ErrNoUpdateInProgress), nil)
	w.onAwait(awaitOf("def2", 1), time.Hour)
	w.onAwait(notAwaitOf("def2", 1), 0)
	w.signal(30*time.Minute, workflows.SignalCancel, nil)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0), []string{"desire def2 1", "await def2 1", "retire def2 1"}, forward("def1", 0))
	if out.State != model.RolloutCanceled {
		t.Fatalf("output %+v", out)
	}
}

// The client satisfies what the LRP service and the converger's resumer need.
var (
	_ lrps.Rollouts             = (*workflows.RolloutClient)(nil)
	_ activities.RolloutStarter = (*workflows.RolloutClient)(nil)
)

// A supersede carries the new rollout's pace (its resolved strategy): the walk to def3 replaces
// two indices at once where the walk to def2 replaced one.
func TestRolloutSupersedeTakesTheNewPace(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 1), time.Hour)
	w.onAwait(func(in activities.AwaitRunningInput) bool { return !awaitOf("def2", 1)(in) }, 10*time.Minute)
	w.signal(30*time.Minute, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3", MaxInFlight: 2})
	out := w.run(input())
	if out.State != model.RolloutCompleted || out.RolloutID != "r2" {
		t.Fatalf("output %+v", out)
	}
	// def3 is healthy once index 0 ran (10 min after the supersede): then 1 and 2 start together.
	if a, b := w.at["desire def3 1"], w.at["desire def3 2"]; a != b {
		t.Fatalf("indices 1 and 2 of def3 started at %v and %v, not together", a, b)
	}
}

// set_pace mid-walk: from the next index on, three are replaced at once; the progress query
// shows the new pace. A pace of 0 is ignored.
func TestRolloutSetPace(t *testing.T) {
	w := newWorld(t, 7)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(15*time.Minute, workflows.SignalSetPace, workflows.SetPaceSignal{MaxInFlight: 0})
	w.signal(15*time.Minute, workflows.SignalSetPace, workflows.SetPaceSignal{MaxInFlight: 3})
	var pace int
	w.env.RegisterDelayedCallback(func() { pace = w.query().MaxInFlight }, 16*time.Minute)
	out := w.run(input())
	if out.State != model.RolloutCompleted || !slices.Equal(out.Updated, []int32{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("output %+v", out)
	}
	if pace != 3 {
		t.Fatalf("progress shows max_in_flight %d", pace)
	}
	// Index 1 started at 10 min at the pace of one; the signal (15 min) starts 2 and 3 beside
	// it at once, and each index that ends makes room for the next.
	want := map[string]time.Duration{"desire def2 1": 10 * time.Minute, "desire def2 2": 15 * time.Minute,
		"desire def2 3": 15 * time.Minute, "desire def2 4": 20 * time.Minute, "desire def2 5": 25 * time.Minute,
		"desire def2 6": 25 * time.Minute}
	for call, at := range want {
		if w.at[call] != at {
			t.Errorf("%s at %v, want %v (all: %v)", call, w.at[call], at, w.at)
		}
	}
}
