package cell

import (
	"context"
	"testing"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// unreadableBBS cannot answer the first reads, as a BBS whose database restarts; then it
// has the instance, no longer retiring.
type unreadableBBS struct {
	BBS
	failures, reads int
	lrp             model.ActualLRP
}

func (u *unreadableBBS) ActualLRPs(context.Context, model.ActualLRPFilter) ([]model.ActualLRP, error) {
	u.reads++
	if u.reads <= u.failures {
		return nil, &model.Error{Type: model.ErrUnavailable, Message: "database unavailable"}
	}
	return []model.ActualLRP{u.lrp}, nil
}

// A cell that cannot read whether a retirement was withdrawn asks again rather than stopping
// the instance on the failed read: a scale-up may have withdrawn it.
func TestARetirementWithdrawnIsSeenThroughAnUnavailableBBS(t *testing.T) {
	key := model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v1", Index: 1}
	bbs := &unreadableBBS{failures: 3, lrp: model.ActualLRP{ActualLRPKey: key, Presence: model.PresenceOrdinary,
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "g1", CellID: "cell-1"}, State: model.StateRunning}}
	a := New(Config{ID: "cell-1"}, bbs, nil, zap.NewNop())
	withdrawn, unanswered := a.retirementWithdrawn(executor.Container{Guid: "g1", Key: key})
	if !withdrawn {
		t.Fatal("the withdrawn retirement was not seen")
	}
	if !unanswered {
		t.Error("the unanswered reads were not reported: the routers would get no drain after the outage")
	}
	if bbs.reads != 4 {
		t.Errorf("%d reads, want 4 (3 unanswered)", bbs.reads)
	}
	// Answered at once, no second drain.
	bbs.reads, bbs.failures = 0, 0
	if _, unanswered := a.retirementWithdrawn(executor.Container{Guid: "g1", Key: key}); unanswered {
		t.Error("a read answered at once was reported unanswered")
	}
}
