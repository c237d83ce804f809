package workflows_test

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/temporal"
)

// A cancel that finds the row already finished (completed by this very run in a workflow
// task whose completion the cancel made the server refuse: the retried task sees the signal
// first) ends the rollout as the row says, walking nothing back: a walk back there left the
// instances on the from definition of a rollout recorded as completed.
func TestRolloutCancelOfAFinishedRowEndsAsTheRowSays(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(notAwaitOf("def2", 2), 0)
	w.beginErr = temporal.NewNonRetryableApplicationError("no update in progress", string(model.ErrNoUpdateInProgress), nil)
	w.env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		w.rollout = &model.Rollout{ID: "r1", State: model.RolloutCompleted}
		w.mu.Unlock()
		w.env.SignalWorkflow(workflows.SignalCancel, nil)
	}, 30*time.Minute)
	out := w.run(input())
	if out.State != model.RolloutCompleted {
		t.Errorf("ended %s, want completed as the row says", out.State)
	}
	for _, c := range w.walk() {
		if c == "desire def1 1" || c == "desire def1 0" {
			t.Fatalf("walked back: %q", w.walk())
		}
	}
}

// A cancel walks back, besides the indices the walk replaced, those the store says hold
// another definition than the from one — created on the target by a scale-up during the
// walk, which the walk had not reached.
func TestRolloutCancelWalksBackTheIndicesAScaleUpAdded(t *testing.T) {
	w := newWorld(t, 4)
	w.onAwait(awaitOf("def2", 2), time.Hour)
	w.onAwait(notAwaitOf("def2", 2), 0)
	w.off = []int32{0, 1, 3} // 0 and 1 replaced, 3 created on def2 by a scale-up
	w.signal(30*time.Minute, workflows.SignalCancel, nil)
	out := w.run(input())
	assertWalk(t, w, forward("def2", 0, 1), []string{"desire def2 2", "await def2 2", "retire def2 2"}, forward("def1", 3, 1, 0))
	if out.State != model.RolloutCanceled {
		t.Fatalf("output %+v", out)
	}
}
