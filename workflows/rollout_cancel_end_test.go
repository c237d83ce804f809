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
