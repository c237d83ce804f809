package workflows_test

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// A rollout's workflow walks at the pace of the row's resolved strategy; a row from before
// strategies at the client's (the server's flags).
func TestRolloutClientInputTakesTheRowsStrategy(t *testing.T) {
	rc := &workflows.RolloutClient{MaxInFlight: 4, IndexDeadline: time.Minute}
	old := rc.Input(&model.Rollout{ID: "r1"}, "d")
	if old.MaxInFlight != 4 || old.IndexDeadline != time.Minute || !old.Runs {
		t.Fatalf("without a strategy: %+v", old)
	}
	s := model.ResolveStrategy(&model.RolloutStrategy{MaxInFlight: ptr(int32(7))}, rc.Defaults())
	in := rc.Input(&model.Rollout{ID: "r1", Strategy: &s}, "d")
	if in.MaxInFlight != 7 || in.IndexDeadline != time.Minute || *in.Failure != (workflows.FailurePolicy{
		OnFailure: model.OnFailureRevert, MaxCrashes: 3, MaxFailedIndices: 1}) {
		t.Fatalf("with a strategy: %+v", in)
	}
	if old.Failure != nil {
		t.Fatalf("a row without a strategy walks as the seeds do: %+v", old.Failure)
	}
	if d := (&workflows.RolloutClient{}).Defaults(); *d.MaxInFlight != 1 || *d.IndexDeadlineMS != 300000 || *d.OnFailure != model.OnFailureRevert {
		t.Fatalf("defaults of a client without flags: %+v", d)
	}
}

func ptr[T any](v T) *T { return &v }
