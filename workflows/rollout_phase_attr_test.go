package workflows_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// upserts records the search attributes every upsert of w's workflow sets, as
// "RolloutState/RolloutPhase" ("-" for an attribute the upsert leaves out), after starting
// it with the attributes StartRollout gives (with RolloutPhase if phased).
func upserts(w *world, in workflows.RolloutInput, phased bool) *[]string {
	w.t.Helper()
	if err := w.env.SetTypedSearchAttributesOnStart(workflows.StartAttributes(in, phased)); err != nil {
		w.t.Fatal(err)
	}
	var got []string
	w.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		state, ok := sa.GetKeyword(workflows.SearchAttrRolloutState)
		if !ok {
			state = "-"
		}
		phase, ok := sa.GetKeyword(workflows.SearchAttrRolloutPhase)
		if !ok {
			phase = "-"
		}
		w.mu.Lock()
		got = append(got, state+"/"+phase)
		w.mu.Unlock()
	}).Return(nil)
	return &got
}

// canaryPauseAbort is a rollout of 4 indices with a timed canary step at 1 and a manual one
// at 2, paused and resumed during the first step's hold, and aborted at the manual step.
func canaryPauseAbort(t *testing.T) (*world, workflows.RolloutInput) {
	w := newWorld(t, 4)
	w.onAwait(anyAwait, 10*time.Minute)
	w.signal(30*time.Minute, workflows.SignalPause, nil)
	w.signal(40*time.Minute, workflows.SignalResume, nil)
	w.signal(3*time.Hour, workflows.SignalAbort, workflows.AbortSignal{Reason: "canary looks bad"})
	return w, withSteps(workflows.CanaryStep{Instances: 1, Pause: time.Hour}, workflows.CanaryStep{Instances: 2, Manual: true})
}

// A run started with RolloutPhase upserts it at every change of phase — paused, canary again,
// awaiting_promotion, reverting — and at the end, and never when the phase stays (the walk
// to the second step is canary as the first step was: no upsert). The start showed canary.
func TestRolloutPhaseSearchAttribute(t *testing.T) {
	w, in := canaryPauseAbort(t)
	got := upserts(w, in, true)
	if out := w.run(in); out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	want := []string{
		model.RolloutPaused + "/" + model.PhasePaused,
		model.RolloutActive + "/" + model.PhaseCanary,
		model.RolloutActive + "/" + model.PhaseAwaitingPromotion,
		model.RolloutCanceling + "/" + model.PhaseReverting,
		model.RolloutReverted + "/" + model.PhaseReverted,
	}
	if !slices.Equal(*got, want) {
		t.Fatalf("upserts %q, want %q", *got, want)
	}
}

// A run started without RolloutPhase — before it existed, or on a server that lacks it —
// never upserts it (a server without it would fail the workflow task), and upserts only when
// its state changes, as before: the manual step's hold is no upsert.
func TestRolloutPhaseSearchAttributeOnlyWhenStartedWithIt(t *testing.T) {
	w, in := canaryPauseAbort(t)
	got := upserts(w, in, false)
	w.env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 1).Never()
	if out := w.run(in); out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	want := []string{model.RolloutPaused + "/-", model.RolloutActive + "/-", model.RolloutCanceling + "/-", model.RolloutReverted + "/-"}
	if !slices.Equal(*got, want) {
		t.Fatalf("upserts %q, want %q", *got, want)
	}
}

// A run started with RolloutPhase part of whose history a worker from before it recorded (an
// upgrade: the API first): that worker upserted no change of the phase alone, so the run,
// replaying that history, finds no "phase-only-upserts" marker, and shows its phase with its
// state only — as it did there.
func TestRolloutPhaseSearchAttributeAfterAnOlderWorker(t *testing.T) {
	w, in := canaryPauseAbort(t)
	got := upserts(w, in, true)
	w.env.OnGetVersion("phase-only-upserts", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	if out := w.run(in); out.State != model.RolloutReverted {
		t.Fatalf("output %+v", out)
	}
	want := []string{
		model.RolloutPaused + "/" + model.PhasePaused,
		model.RolloutActive + "/" + model.PhaseCanary,
		model.RolloutCanceling + "/" + model.PhaseReverting,
		model.RolloutReverted + "/" + model.PhaseReverted,
	}
	if !slices.Equal(*got, want) {
		t.Fatalf("upserts %q, want %q", *got, want)
	}
}

// A rollout without canary steps starts walking and shows nothing new until it completes:
// one upsert, its end, and no version marker.
func TestRolloutPhaseSearchAttributeWalking(t *testing.T) {
	w := newWorld(t, 3)
	w.onAwait(anyAwait, time.Minute)
	in := input()
	got := upserts(w, in, true)
	w.env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 1).Never()
	if out := w.run(in); out.State != model.RolloutCompleted {
		t.Fatalf("output %+v", out)
	}
	if want := []string{model.RolloutCompleted + "/" + model.PhaseCompleted}; !slices.Equal(*got, want) {
		t.Fatalf("upserts %q, want %q", *got, want)
	}
}

// A BBS upgraded before its Temporal server registered RolloutPhase, on a real dev server
// without it: the server refuses a start (and a signal-with-start) that sets it, so the
// rollout starts without it and walks as before, never upserting it — each such upsert would
// fail its workflow task. A canary rollout, whose holds change only its phase, is superseded
// at its manual step (SupersedeRollout: a signal-with-start) and completes.
func TestRolloutOnAServerWithoutRolloutPhase(t *testing.T) {
	attrs := maps.Clone(temporaldev.SearchAttributes)
	delete(attrs, workflows.SearchAttrRolloutPhase.GetName())
	c := temporaltest.NewWithSearchAttributes(t, attrs)
	const name = "without_phase"
	sc := recordingScenario{
		name: name, instances: 3, startIn: 50 * time.Millisecond,
		in: func(in *workflows.RolloutInput) {
			in.IndexDeadline = time.Minute
			in.Failure = &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}
			in.Canary = []workflows.CanaryStep{{Instances: 1, Pause: 200 * time.Millisecond}, {Instances: 2, Manual: true}}
		},
		steer: func(ctx context.Context, t *testing.T, r *recording) {
			r.waitProgress(ctx, t, "r1", func(p model.RolloutProgress) bool { return p.Phase == model.PhaseAwaitingPromotion })
			in := workflows.RolloutInput{RolloutID: "r2", ProcessGUID: r.guid, Domain: "cf-apps", FromDefinitionID: "def1",
				ToDefinitionID: "def3", Kind: model.RolloutKindUpdate, IndexDeadline: time.Minute,
				Failure: &workflows.FailurePolicy{OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}} // no canary steps
			if err := workflows.SupersedeRollout(ctx, r.c, "record-"+name, in); err != nil {
				t.Fatal(err)
			}
		},
		check: func(t *testing.T, r *recording, out workflows.RolloutOutput) {
			expectOutput(t, out, "r2", model.RolloutCompleted, []int32{0, 1, 2})
			expectInstances(t, r, on("def3", 3))
			d, err := r.c.DescribeWorkflowExecution(context.Background(), model.RolloutWorkflowID(r.guid), "")
			if err != nil {
				t.Fatal(err)
			}
			fields := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
			if _, ok := fields[workflows.SearchAttrRolloutPhase.GetName()]; ok {
				t.Errorf("the run shows RolloutPhase: %v", fields)
			}
			var state string
			if err := converter.GetDefaultDataConverter().FromPayload(fields[workflows.SearchAttrRolloutState.GetName()], &state); err != nil || state != model.RolloutCompleted {
				t.Errorf("RolloutState %q (%v), want completed", state, err)
			}
		},
	}
	recordScenario(t, c, "", sc, bySteps)
}
