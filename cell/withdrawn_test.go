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

// One stop is pending per container: a second request is folded into it, and only one from
// the BBS (a second retirement) asks for another drain; a reconciliation's does not, or a
// cell reconciling more often than its drain would never stop anything.
func TestAStopRequestedTwiceDrainsOnce(t *testing.T) {
	a := New(Config{ID: "cell-1"}, &claimingBBS{}, nil, zap.NewNop())
	p, first := a.pendStop("g1", true)
	if !first {
		t.Fatal("the first request is not the one to carry out")
	}
	if _, first := a.pendStop("g1", false); first || p.again.Load() {
		t.Fatalf("a reconciliation's request: first %v, again %v", first, p.again.Load())
	}
	if _, first := a.pendStop("g1", true); first || !p.again.Load() {
		t.Fatalf("the BBS's second request: first %v, again %v", first, p.again.Load())
	}
	a.unpendStop("g1")
	if _, first := a.pendStop("g1", true); !first {
		t.Fatal("a request after the stop was done was folded into it")
	}
}
