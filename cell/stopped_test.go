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

// removeOnlyBBS answers removals as the store would for its instances (the instance key must
// match the slot's) and fails the test on any read.
type removeOnlyBBS struct {
	BBS
	t       *testing.T
	slots   map[model.ActualLRPKey]model.ActualLRPInstanceKey
	removed []string
}

func (b *removeOnlyBBS) ActualLRPs(context.Context, model.ActualLRPFilter) ([]model.ActualLRP, error) {
	b.t.Error("a stopped container's slot was read before its removal")
	return nil, nil
}

func (b *removeOnlyBBS) RemoveActualLRP(_ context.Context, key model.ActualLRPKey, ik *model.ActualLRPInstanceKey) error {
	held, ok := b.slots[key]
	switch {
	case !ok:
		return &model.Error{Type: model.ErrResourceNotFound, Message: "no such instance"}
	case held != *ik:
		return &model.Error{Type: model.ErrCannotBeRemoved, Message: "another instance holds the slot"}
	}
	delete(b.slots, key)
	b.removed = append(b.removed, ik.InstanceGUID)
	return nil
}

// A container that completed because the cell stopped it has its record removed without a
// read of its slot, exactly when the slot holds its instance (Decide's shutdown row); the
// container goes in every case.
func TestAStoppedContainerIsRemovedWithoutAReadBack(t *testing.T) {
	exec := executor.New(sim.New(1), executor.Config{}, zaptest.NewLogger(t))
	defer exec.Close()
	key := func(i int32) model.ActualLRPKey {
		return model.ActualLRPKey{ProcessGUID: "web", DefinitionID: "v1", Index: i}
	}
	bbs := &removeOnlyBBS{t: t, slots: map[model.ActualLRPKey]model.ActualLRPInstanceKey{
		key(0): {InstanceGUID: "g0", CellID: "cell-1"},     // this container's instance: removed
		key(1): {InstanceGUID: "other", CellID: "cell-2"}}} // another cell runs the slot now
	guids := []string{"g0", "g1", "g2"} // g2's slot has no record any more
	for i, g := range guids {
		if _, err := exec.Reserve(executor.RunSpec{Guid: g, Key: key(int32(i))}); err != nil {
			t.Fatal(err)
		}
		if err := exec.Stop(g); err != nil {
			t.Fatal(err)
		}
	}
	a := New(Config{ID: "cell-1"}, bbs, exec, zap.NewNop())
	if err := a.reconcileContainers(context.Background(), guids); err != nil {
		t.Fatal(err)
	}
	if len(bbs.removed) != 1 || bbs.removed[0] != "g0" {
		t.Fatalf("removed %v, want g0's record alone", bbs.removed)
	}
	if _, ok := bbs.slots[key(1)]; !ok {
		t.Fatal("the record another cell holds was removed")
	}
	for _, g := range guids {
		if _, ok := exec.Get(g); ok {
			t.Fatalf("container %s was kept", g)
		}
	}
}
