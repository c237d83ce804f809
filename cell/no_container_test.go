package cell

import (
	"context"
	"testing"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// unclaimRecorder is a BBS that records unclaims and removals.
type unclaimRecorder struct {
	BBS
	unclaimed, removed []string
}

func (u *unclaimRecorder) UnclaimActualLRP(_ context.Context, _ model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error) {
	u.unclaimed = append(u.unclaimed, ik.InstanceGUID)
	return &model.ActualLRP{}, nil
}

func (u *unclaimRecorder) RemoveActualLRP(_ context.Context, _ model.ActualLRPKey, ik *model.ActualLRPInstanceKey) error {
	u.removed = append(u.removed, ik.InstanceGUID)
	return nil
}

// A full reconciliation lists its containers, then reads the BBS: an instance whose container
// was created (and reported RUNNING) in between is in the BBS's answer and not in the list.
// It must not be taken for an instance without a container and unclaimed: a RUNNING instance
// that a rollout had just made the only one serving its index went out of service. One the
// cell really has no container for still is.
func TestAContainerCreatedDuringReconciliationIsNotUnclaimed(t *testing.T) {
	exec := executor.New(sim.New(1), executor.Config{}, zaptest.NewLogger(t))
	defer exec.Close()
	key := model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v2", Index: 3}
	if _, err := exec.Reserve(executor.RunSpec{Guid: "g-new", Key: key}); err != nil {
		t.Fatal(err)
	}
	bbs := &unclaimRecorder{}
	a := New(Config{ID: "cell-1"}, bbs, exec, zap.NewNop())
	running := func(guid string, index int32) model.ActualLRP {
		k := key
		k.Index = index
		return model.ActualLRP{ActualLRPKey: k, Presence: model.PresenceOrdinary, State: model.StateRunning,
			ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: guid, CellID: "cell-1"}}
	}
	mine := []model.ActualLRP{running("g-new", 3), running("g-gone", 2)}
	// The container list was taken before g-new's container existed.
	if err := a.reconcilePairs(context.Background(), nil, mine, true); err != nil {
		t.Fatal(err)
	}
	if len(bbs.unclaimed) != 1 || bbs.unclaimed[0] != "g-gone" {
		t.Fatalf("unclaimed %v, want only g-gone (no container); g-new's container exists", bbs.unclaimed)
	}
}
