package cell

import (
	"context"
	"testing"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// claimingBBS cannot answer the first claims, as a BBS whose database restarts; then it
// answers stop. Without claims (a BBS of the version before) it has the instance, retiring
// or not, for a read.
type claimingBBS struct {
	BBS
	failures, claims, reads int
	stop, noClaims          bool
	lrp                     model.ActualLRP
}

func (u *claimingBBS) ClaimStop(context.Context, model.ActualLRPKey, model.ActualLRPInstanceKey) (bool, error) {
	u.claims++
	if u.noClaims {
		return false, &model.Error{Type: model.ErrResourceNotFound, Message: "no route POST /v1/actual_lrps/claim_stop"}
	}
	if u.claims <= u.failures {
		return false, &model.Error{Type: model.ErrUnavailable, Message: "database unavailable"}
	}
	return u.stop, nil
}

func (u *claimingBBS) ActualLRPs(context.Context, model.ActualLRPFilter) ([]model.ActualLRP, error) {
	u.reads++
	return []model.ActualLRP{u.lrp}, nil
}

// A cell that cannot claim a stop asks again rather than stopping the instance unclaimed: a
// scale-up or a walk back may have withdrawn its retirement.
func TestAStopIsClaimedThroughAnUnavailableBBS(t *testing.T) {
	key := model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v1", Index: 1}
	bbs := &claimingBBS{failures: 3}
	a := New(Config{ID: "cell-1"}, bbs, nil, zap.NewNop())
	stop, unanswered := a.claimStop(executor.Container{Guid: "g1", Key: key})
	if stop {
		t.Fatal("a withdrawn retirement was stopped")
	}
	if !unanswered {
		t.Error("the unanswered claims were not reported: the routers would get no drain after the outage")
	}
	if bbs.claims != 4 {
		t.Errorf("%d claims, want 4 (3 unanswered)", bbs.claims)
	}
	// Answered at once, no second drain.
	bbs.claims, bbs.failures, bbs.stop = 0, 0, true
	if stop, unanswered := a.claimStop(executor.Container{Guid: "g1", Key: key}); !stop || unanswered {
		t.Errorf("a claim answered at once: stop %v, unanswered %v", stop, unanswered)
	}
}

// A BBS of the version before has no claims: the cell reads whether the retirement holds.
func TestAStopWithoutClaimsReadsTheRetirement(t *testing.T) {
	key := model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v1", Index: 1}
	lrp := model.ActualLRP{ActualLRPKey: key, Presence: model.PresenceOrdinary,
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "g1", CellID: "cell-1"}, State: model.StateRunning}
	bbs := &claimingBBS{noClaims: true, lrp: lrp}
	a := New(Config{ID: "cell-1"}, bbs, nil, zap.NewNop())
	if stop, _ := a.claimStop(executor.Container{Guid: "g1", Key: key}); stop || bbs.reads != 1 {
		t.Fatalf("withdrawn: stop %v after %d reads", stop, bbs.reads)
	}
	bbs.lrp.Retiring = true
	if stop, _ := a.claimStop(executor.Container{Guid: "g1", Key: key}); !stop {
		t.Fatal("a retiring instance was kept")
	}
}
