package workflows_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	bbsworker "github.com/updatable-lrps/bbs/worker"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap/zaptest"
)

// rolloutHistoryDir holds the recorded histories of RolloutWorkflow, one directory per set:
// a set is recorded from one version of the workflow, and every set must keep replaying
// with the current one (TestRolloutWorkflowReplay).
const rolloutHistoryDir = "testdata/rollout"

// recordingScenario drives one rollout on the dev server, from its start to its end.
type recordingScenario struct {
	name string
	// instances is the LRP's count; every one starts on def1.
	instances int32
	startIn   time.Duration
	hang      []string // slots whose instance never starts
	crash     []string // slots whose instance crash-loops (three crashes, then CRASHED)
	// failWindow is the analysis window whose canary answers 10 % 500s ("": none).
	failWindow string
	in         func(in *workflows.RolloutInput)
	// setup prepares the store before the rollout starts (a freeze, windows, strategies).
	setup func(m *memStore)
	// steer signals the running workflow; it returns once it has sent its last signal.
	steer func(ctx context.Context, t *testing.T, r *recording)
	// check looks at the end state.
	check func(t *testing.T, r *recording, out workflows.RolloutOutput)
}

// recording is a scenario under way: its LRP (guid) in its own store, on its own task queue.
type recording struct {
	c     client.Client
	guid  string
	store *memStore
}

func (r *recording) signal(ctx context.Context, t *testing.T, name string, arg any) {
	t.Helper()
	if err := r.c.SignalWorkflow(ctx, model.RolloutWorkflowID(r.guid), "", name, arg); err != nil {
		t.Fatalf("signal %s: %v", name, err)
	}
}

// waitProgress waits until the rollout rollout's recorded progress satisfies cond.
func (r *recording) waitProgress(ctx context.Context, t *testing.T, rollout string, cond func(model.RolloutProgress) bool) {
	t.Helper()
	for !cond(r.store.progressOf(rollout)) {
		if ctx.Err() != nil {
			t.Fatalf("progress of %s stays %+v", rollout, r.store.progressOf(rollout))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *recording) query(ctx context.Context, t *testing.T) workflows.RolloutProgress {
	t.Helper()
	v, err := r.c.QueryWorkflow(ctx, model.RolloutWorkflowID(r.guid), "", workflows.QueryProgress)
	if err != nil {
		t.Fatal(err)
	}
	var p workflows.RolloutProgress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func updated(n int32) func(model.RolloutProgress) bool {
	return func(p model.RolloutProgress) bool { return p.UpdatedInstances >= n }
}

func on(def string, n int32) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s/%d RUNNING", def, i))
	}
	return out
}

func expectOutput(t *testing.T, out workflows.RolloutOutput, rollout, state string, upd []int32) {
	t.Helper()
	if out.RolloutID != rollout || out.State != state || !slices.Equal(out.Updated, upd) {
		t.Fatalf("output %+v, want rollout %s %s with %v updated", out, rollout, state, upd)
	}
}

func expectInstances(t *testing.T, r *recording, want ...[]string) {
	t.Helper()
	if got, all := r.store.defs(), slices.Concat(want...); !slices.Equal(got, all) {
		t.Fatalf("instances %q, want %q", got, all)
	}
}

// The paths of a rollout that TestRolloutOnDevServer's history does not take.
var recordingScenarios = []recordingScenario{
	{
		name: "cancel", instances: 3, startIn: 200 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.signal(ctx, t, workflows.SignalCancel, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 3))
		},
	},
	{
		// `temporal workflow cancel`: handled as the cancel signal.
		name: "temporal_cancel", instances: 3, startIn: 200 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			if err := r.c.CancelWorkflow(ctx, model.RolloutWorkflowID(r.guid), ""); err != nil {
				t.Fatal(err)
			}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 3))
		},
	},
	{
		// A pause during the walk back holds it; the resume finishes it.
		name: "cancel_paused", instances: 4, startIn: 200 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(2))
			r.signal(ctx, t, workflows.SignalCancel, nil)
			r.waitProgress(ctx, t, "r1", func(p model.RolloutProgress) bool { return p.State == model.RolloutCanceling })
			r.signal(ctx, t, workflows.SignalPause, nil)
			time.Sleep(600 * time.Millisecond)
			if p := r.query(ctx, t); p.State != model.RolloutCanceling || len(p.InFlight) != 0 {
				t.Fatalf("progress of a paused walk back = %+v", p)
			}
			r.signal(ctx, t, workflows.SignalResume, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 4))
		},
	},
	{
		// A rollback signal without a definition undoes the rollout, as a cancel.
		name: "rollback_without_definition", instances: 3, startIn: 200 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.signal(ctx, t, workflows.SignalRollback, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 3))
		},
	},
	{
		// A rollback to a pruned definition is refused and the walk goes on; one to def0
		// then switches the walk to def0.
		name: "rollback", instances: 3, startIn: 200 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.signal(ctx, t, workflows.SignalRollback, workflows.RollbackSignal{DefinitionID: "pruned"})
			r.waitProgress(ctx, t, "r1", updated(2))
			r.signal(ctx, t, workflows.SignalRollback, workflows.RollbackSignal{DefinitionID: "def0"})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			if out.RolloutID == "r1" {
				t.Fatalf("output %+v: the walk did not switch to the rollback", out)
			}
			expectOutput(t, out, out.RolloutID, model.RolloutCompleted, []int32{0, 1, 2})
			expectInstances(t, r, on("def0", 3))
		},
	},
	{
		name: "supersede", instances: 4, startIn: 100 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(2))
			r.signal(ctx, t, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3",
				Kind: model.RolloutKindUpdate, FromDefinitionID: "def1"})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r2", model.RolloutCompleted, []int32{0, 1, 2, 3})
			expectInstances(t, r, on("def3", 4))
		},
	},
	{
		// A cancel after a supersede walks back both targets.
		name: "supersede_cancel", instances: 3, startIn: 150 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(2))
			r.signal(ctx, t, workflows.SignalSupersede, workflows.SupersedeSignal{RolloutID: "r2", ToDefinitionID: "def3",
				Kind: model.RolloutKindUpdate, FromDefinitionID: "def1"})
			r.waitProgress(ctx, t, "r2", updated(1))
			r.signal(ctx, t, workflows.SignalCancel, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r2", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 3))
		},
	},
	{
		// Seed 000's flaky definition: index 1 never runs and is given up after the deadline.
		name: "given_up", instances: 3, startIn: 50 * time.Millisecond, hang: []string{"def2/1"},
		in: func(in *workflows.RolloutInput) { in.IndexDeadline = 500 * time.Millisecond },
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 2})
			if !slices.Equal(out.GivenUp, []int32{1}) {
				t.Fatalf("given up %v", out.GivenUp)
			}
			expectInstances(t, r, []string{"def1/1 RUNNING", "def2/0 RUNNING", "def2/2 RUNNING"})
		},
	},
	{
		name: "pause_resume", instances: 3, startIn: 100 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.signal(ctx, t, workflows.SignalPause, nil)
			time.Sleep(400 * time.Millisecond)
			if p := r.query(ctx, t); p.State != model.RolloutPaused || len(p.InFlight) != 0 {
				t.Fatalf("progress while paused = %+v", p)
			}
			r.signal(ctx, t, workflows.SignalResume, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2})
			expectInstances(t, r, on("def2", 3))
		},
	},
	{
		// set_pace mid-walk: from one index at a time (an index run, in runs mode, which the
		// signal stops) to three at once.
		name: "set_pace", instances: 6, startIn: 150 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.signal(ctx, t, workflows.SignalSetPace, workflows.SetPaceSignal{MaxInFlight: 3})
			for p := r.query(ctx, t); p.MaxInFlight != 3; p = r.query(ctx, t) {
				if ctx.Err() != nil {
					t.Fatalf("progress = %+v", p)
				}
				time.Sleep(5 * time.Millisecond)
			}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2, 3, 4, 5})
			expectInstances(t, r, on("def2", 6))
		},
	},
	{
		// A crash loop at index 2 with on_failure revert: indices 0 and 1 walk back to def1.
		name: "crash_loop_revert", instances: 4, startIn: 50 * time.Millisecond, crash: []string{"def2/2"},
		in: func(in *workflows.RolloutInput) {
			in.IndexDeadline = time.Minute
			in.Failure = &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutReverted, nil)
			expectInstances(t, r, on("def1", 4))
		},
	},
	{
		// The progress deadline passes during the walk: the index in flight (an index run's,
		// in runs mode) is interrupted and the updated ones walk back.
		name: "progress_deadline", instances: 4, startIn: 300 * time.Millisecond,
		in: func(in *workflows.RolloutInput) {
			in.IndexDeadline, in.ProgressDeadline = time.Minute, 800*time.Millisecond
			in.Failure = &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutReverted, nil)
			expectInstances(t, r, on("def1", 4))
		},
	},
	{
		// Canary steps: a timed one at 1 index, a manual one at 3 that a promote leaves; in
		// runs mode each run stops at its step's count.
		name: "canary", instances: 5, startIn: 100 * time.Millisecond,
		in: func(in *workflows.RolloutInput) {
			in.IndexDeadline = time.Minute
			in.Failure = &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}
			in.Canary = []workflows.CanaryStep{{Instances: 1, Pause: 400 * time.Millisecond}, {Instances: 3, Manual: true}}
		},
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", func(p model.RolloutProgress) bool { return p.Phase == model.PhaseAwaitingPromotion })
			if p := r.store.progressOf("r1"); p.UpdatedInstances != 3 {
				t.Fatalf("awaiting promotion with %d updated, want 3", p.UpdatedInstances)
			}
			r.signal(ctx, t, workflows.SignalPromote, workflows.PromoteSignal{})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2, 3, 4})
			expectInstances(t, r, on("def2", 5))
		},
	},
	{
		// An operator's abort mid-walk: the walk back to def1, ending reverted.
		name: "abort", instances: 4, startIn: 150 * time.Millisecond,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.signal(ctx, t, workflows.SignalAbort, workflows.AbortSignal{Reason: "error rate"})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutReverted, nil)
			expectInstances(t, r, on("def1", 4))
		},
	},
	{
		// Weighted steps with analysis: 20 % judged for its pause, then 50 % held for a
		// promote; the routers acknowledge at once; every window passes.
		name: "weighted_canary", instances: 5, startIn: 100 * time.Millisecond,
		in: func(in *workflows.RolloutInput) {
			withTrafficSteps(in, workflows.CanaryStep{Instances: 1, Weight: ptr(int32(20)), Pause: 300 * time.Millisecond, Analysis: true},
				workflows.CanaryStep{Instances: 3, Weight: ptr(int32(50)), Manual: true})
		},
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", func(p model.RolloutProgress) bool { return p.Phase == model.PhaseAwaitingPromotion })
			r.signal(ctx, t, workflows.SignalPromote, workflows.PromoteSignal{})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2, 3, 4})
			expectInstances(t, r, on("def2", 5))
			expectWeights(t, r, 20, 50, -1)
		},
	},
	{
		// An abort at a weighted step: the weight to 0, then the walk back.
		name: "weighted_abort", instances: 4, startIn: 100 * time.Millisecond,
		in: func(in *workflows.RolloutInput) {
			withTrafficSteps(in, workflows.CanaryStep{Instances: 2, Weight: ptr(int32(25)), Manual: true})
		},
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", func(p model.RolloutProgress) bool { return p.Phase == model.PhaseAwaitingPromotion })
			r.signal(ctx, t, workflows.SignalAbort, workflows.AbortSignal{Reason: "canary errors"})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutReverted, nil)
			expectInstances(t, r, on("def1", 4))
			expectWeights(t, r, 25, 0)
		},
	},
	{
		// A background analysis whose second window fails: the revert.
		name: "background_analysis_fail", instances: 6, startIn: 600 * time.Millisecond, failWindow: "background/2",
		in: func(in *workflows.RolloutInput) {
			withTrafficSteps(in)
			in.Analysis.Background = true
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutReverted, nil)
			expectInstances(t, r, on("def1", 6))
		},
	},
	{
		// Two index steps a run: three runs, each continued with the walk so far.
		name: "continue_as_new", instances: 5, startIn: 50 * time.Millisecond,
		in: func(in *workflows.RolloutInput) { in.ContinueAsNewEvery = 2 },
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2, 3, 4})
			expectInstances(t, r, on("def2", 5))
		},
	},
	{
		// A cancel in the second run: a run continues as new in the middle of the walk back.
		name: "continue_as_new_cancel", instances: 4, startIn: 200 * time.Millisecond,
		in: func(in *workflows.RolloutInput) { in.ContinueAsNewEvery = 2 },
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(2))
			r.signal(ctx, t, workflows.SignalCancel, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCanceled, nil)
			expectInstances(t, r, on("def1", 4))
		},
	},
	{
		// A freeze mid-walk holds it at the next index boundary; the unfreeze lets it go on.
		// An instance takes a second to start: the freeze reaches the run while indices are
		// left (in memory, a run reads a new limit at its next tick, so one more may start).
		name: "freeze", instances: 5, startIn: time.Second,
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", updated(1))
			r.freeze(ctx, t, model.RolloutFreeze{Frozen: true, Reason: "incident", Generation: 1})
			r.waitProgress(ctx, t, "r1", phase(model.PhaseFrozen))
			// The indices in flight finish; then the walk holds short of its end.
			p := r.query(ctx, t)
			for ; len(p.InFlight) > 0 && ctx.Err() == nil; p = r.query(ctx, t) {
				time.Sleep(10 * time.Millisecond)
			}
			if p.Phase != model.PhaseFrozen || len(p.Updated) >= 5 {
				t.Errorf("progress while frozen %+v", p)
			}
			r.freeze(ctx, t, model.RolloutFreeze{Generation: 2})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1, 2, 3, 4})
			expectInstances(t, r, on("def2", 5))
		},
	},
	{
		// Frozen before the workflow started (the freeze's signals missed it): held before
		// its first index, from the gate its first load read.
		name: "frozen_at_start", instances: 2, startIn: 100 * time.Millisecond,
		setup: func(m *memStore) { m.freeze = model.RolloutFreeze{Frozen: true, Reason: "holidays", Generation: 5} },
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", phase(model.PhaseFrozen))
			if p := r.query(ctx, t); len(p.Updated) != 0 || len(p.InFlight) != 0 {
				t.Errorf("progress while frozen %+v", p)
			}
			r.freeze(ctx, t, model.RolloutFreeze{Generation: 6})
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1})
		},
	},
	{
		// A rollout that broke the glass walks through a freeze.
		name: "break_glass", instances: 2, startIn: 100 * time.Millisecond,
		setup: func(m *memStore) {
			m.freeze = model.RolloutFreeze{Frozen: true, Reason: "holidays", Generation: 5}
			reason := "hotfix"
			m.strategies = map[string]*model.RolloutStrategy{"r1": {BreakGlass: &reason}}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1})
		},
	},
	{
		// Its window is closed: it waits (a timer on the next opening) until the window is
		// upserted open, which the API tells it (SignalWindowChanged).
		name: "window", instances: 2, startIn: 100 * time.Millisecond,
		setup: func(m *memStore) {
			name := "w"
			m.strategies = map[string]*model.RolloutStrategy{"r1": {Window: &name}}
			m.windows = map[string]*model.RolloutWindow{"w": closedWindow(time.Now())}
		},
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", phase(model.PhaseWaitingForWindow))
			r.store.mu.Lock()
			r.store.windows["w"] = alwaysOpen()
			r.store.mu.Unlock()
			r.signal(ctx, t, workflows.SignalWindowChanged, nil)
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r1", model.RolloutCompleted, []int32{0, 1})
		},
	},
}

// freeze sets the store's freeze, then tells the workflow, as the API does.
func (r *recording) freeze(ctx context.Context, t *testing.T, f model.RolloutFreeze) {
	t.Helper()
	r.store.mu.Lock()
	r.store.freeze = f
	r.store.mu.Unlock()
	r.signal(ctx, t, workflows.SignalFreeze, workflows.FreezeSignal{Frozen: f.Frozen, Reason: f.Reason, Generation: f.Generation})
}

func phase(want string) func(model.RolloutProgress) bool {
	return func(p model.RolloutProgress) bool { return p.Phase == want }
}

// closedWindow is a window closed for days around now: an hour, three days later.
func closedWindow(now time.Time) *model.RolloutWindow {
	day := [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}[now.UTC().AddDate(0, 0, 3).Weekday()]
	return &model.RolloutWindow{Name: "w", Schedule: []model.WindowSpan{{Days: []string{day}, Start: "10:00", End: "11:00", TimeZone: "UTC"}}}
}

// alwaysOpen is a window open at every instant.
func alwaysOpen() *model.RolloutWindow {
	all := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	return &model.RolloutWindow{Name: "w", Schedule: []model.WindowSpan{
		{Days: all, Start: "00:00", End: "23:59", TimeZone: "UTC"}, {Days: all, Start: "23:59", End: "00:00", TimeZone: "UTC"}}}
}

// TestRecordRolloutHistories records a history of every scenario on a real dev server, from
// the workflow code of the checkout, into testdata/rollout/$RECORD_HISTORIES/ (a new set:
// an existing one is never overwritten). Run it whenever RolloutWorkflow changes:
//
//	RECORD_HISTORIES=<set> TEMPORAL_BIN=... go test ./workflows/ -run RecordRolloutHistories
//
// RECORD_SCENARIOS=<regexp> records only the scenarios it matches (a set for new ones).
func TestRecordRolloutHistories(t *testing.T) {
	set := os.Getenv("RECORD_HISTORIES")
	if set == "" {
		t.Skip("set RECORD_HISTORIES to the name of the set to record")
	}
	dir := filepath.Join(rolloutHistoryDir, set)
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s exists: recorded histories are kept, not rewritten", dir)
	}
	c := temporaltest.New(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	only, err := regexp.Compile(os.Getenv("RECORD_SCENARIOS")) // empty: every one
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range recordingScenarios {
		if !only.MatchString(sc.name) {
			continue
		}
		for _, m := range []walkMode{bySteps, byRuns, byOneEngine} {
			t.Run(sc.name+m.suffix(), func(t *testing.T) { recordScenario(t, c, dir, sc, m) })
		}
	}
}

// walkMode is how a recording scenario's rollout walks.
type walkMode int

const (
	bySteps     walkMode = iota // an activity and a workflow task per index
	byRuns                      // index runs for the forward walk at a pace of one (RolloutInput.Runs)
	byOneEngine                 // index runs for every walk (RolloutInput.WalkByRuns)
)

// suffix names a scenario's histories in mode m.
func (m walkMode) suffix() string {
	return [...]string{"", "_runs", "_walk"}[m]
}

// TestRolloutRunScenarios plays every recording scenario with index runs (RolloutInput.Runs,
// and WalkByRuns: the one walk engine) on a real dev server, with the real activities over an in-memory store: cancels, pauses,
// rollbacks, supersedes, a given-up index and continues-as-new, each stopping a run in
// flight or following one.
func TestRolloutRunScenarios(t *testing.T) {
	c := temporaltest.New(t)
	for _, sc := range recordingScenarios {
		for _, m := range []walkMode{byRuns, byOneEngine} {
			t.Run(sc.name+m.suffix(), func(t *testing.T) { recordScenario(t, c, "", sc, m) })
		}
	}
}

// recordScenario plays sc, walking as m says, and records its histories into dir (unless
// empty) as <name><m.suffix()>.json.
func recordScenario(t *testing.T, c client.Client, dir string, sc recordingScenario, m walkMode) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := sc.name + m.suffix()
	runs := m != bySteps
	guid := "app-" + name
	waiter := &memWaiter{subs: map[chan struct{}]struct{}{}}
	store := &memStore{instances: sc.instances, healthy: "def1", lrps: map[string]model.ActualLRP{}, states: map[string]string{},
		progress: map[string]model.RolloutProgress{}, startIn: sc.startIn, waiter: waiter, hang: map[string]bool{}}
	for i := range sc.instances {
		store.lrps[slot("def1", i)] = model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: guid, DefinitionID: "def1", Index: i}, State: model.StateRunning}
	}
	for _, s := range sc.hang {
		store.hang[s] = true
	}
	store.failWindow = sc.failWindow
	if sc.setup != nil {
		sc.setup(store)
	}
	store.crash = map[string]bool{}
	for _, s := range sc.crash {
		store.crash[s] = true
	}
	queue := "record-" + name
	w := bbsworker.New(c, queue, bbsworker.Deps{RolloutStore: store, Waiter: waiter, Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	in := workflows.RolloutInput{RolloutID: "r1", ProcessGUID: guid, Domain: "cf-apps", FromDefinitionID: "def1",
		ToDefinitionID: "def2", Kind: model.RolloutKindUpdate}
	if sc.in != nil {
		sc.in(&in)
	}
	in.Runs, in.WalkByRuns = runs, m == byOneEngine
	runID, err := workflows.StartRollout(ctx, c, queue, in)
	if err != nil {
		t.Fatal(err)
	}
	r := &recording{c: c, guid: guid, store: store}
	if sc.steer != nil {
		sc.steer(ctx, t, r)
	}
	var out workflows.RolloutOutput
	if err := c.GetWorkflow(ctx, model.RolloutWorkflowID(guid), runID).Get(ctx, &out); err != nil {
		t.Fatalf("rollout: %v", err)
	}
	sc.check(t, r, out)
	if opened, stopped := store.runCounts(); runs && opened == 0 {
		t.Fatal("the walk opened no index run")
	} else if runs {
		t.Logf("%d index runs opened, %d stopped", opened, stopped)
	}
	if dir == "" {
		return
	}
	chain := runChain(ctx, t, c, model.RolloutWorkflowID(guid), runID)
	for i, run := range chain {
		file := filepath.Join(dir, name+".json")
		if len(chain) > 1 {
			file = filepath.Join(dir, fmt.Sprintf("%s_run%d.json", name, i+1))
		}
		recordHistory(ctx, t, c, model.RolloutWorkflowID(guid), run, file)
	}
}

// runChain lists the runs of a workflow from runID on, following its continues-as-new.
func runChain(ctx context.Context, t *testing.T, c client.Client, id, runID string) []string {
	t.Helper()
	runs := []string{runID}
	for {
		iter := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		if !iter.HasNext() {
			t.Fatalf("run %s has no close event", runID)
		}
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		can := ev.GetWorkflowExecutionContinuedAsNewEventAttributes()
		if can == nil {
			return runs
		}
		runID = can.GetNewExecutionRunId()
		runs = append(runs, runID)
	}
}

// withTrafficSteps gives a recording's rollout a failure policy, canary steps and an
// analysis of 100 ms windows.
func withTrafficSteps(in *workflows.RolloutInput, steps ...workflows.CanaryStep) {
	in.IndexDeadline = time.Minute
	in.Failure = &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}
	in.Canary = steps
	p := (&model.RolloutAnalysis{}).Policy()
	p.Interval = 100
	in.Analysis = &p
}

// expectWeights checks the weights the rollout set, in order (-1: routing by instances again).
func expectWeights(t *testing.T, r *recording, want ...int32) {
	t.Helper()
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	var got []int32
	for _, s := range r.store.splits {
		w := int32(-1)
		if s.Weighted() {
			w = s.Weights["def2"]
		}
		got = append(got, w)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("weights set %v, want %v", got, want)
	}
}
