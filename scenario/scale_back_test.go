package scenario

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// An LRP scaled down and back up within its cells' stop drain keeps its instances: the
// cells, told to stop the retired ones, see after the drain that the retirement was
// withdrawn and keep them, so that no index is ever without a RUNNING instance (as the
// soak's sampler found when they stopped and the indices stood empty until convergence).
func TestScaleDownAndBackUpKeepsTheInstances(t *testing.T) {
	c := newCluster(t, 2, 1, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 3)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 RUNNING", 10*time.Second, func() bool { return runningIndices(c.instances("web")) == 3 })
	before := map[int32]string{}
	for _, a := range c.instances("web") {
		before[a.Index] = a.InstanceGUID
	}
	s := c.sample("web", 3)
	one, three := int32(1), int32(3)
	s.setFloor(1) // indices 1 and 2 are not wanted between the two updates
	for _, n := range []*int32{&one, &three} {
		if err := c.BBS.UpdateDesiredLRP(ctx, "web", &model.DesiredLRPUpdate{Instances: n}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // samples read before the scale-up have been recorded
	s.setFloor(3)
	time.Sleep(4 * time.Second) // the drain (2 s) and the stop it would have led to
	s.finish(t)
	for _, a := range c.instances("web") {
		if a.State != model.StateRunning || a.Retiring || a.InstanceGUID != before[a.Index] {
			t.Errorf("index %d: %s retiring=%v instance %s (was %s)", a.Index, a.State, a.Retiring, a.InstanceGUID, before[a.Index])
		}
	}
}
