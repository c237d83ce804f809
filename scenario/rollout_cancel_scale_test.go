package scenario

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// A rollout cancelled after a scale-up during it walks every index back, those the scale-up
// added on the (then healthy) target included: the LRP ends on its from definition
// throughout, not with the added indices left on the abandoned target (found by the soak).
func TestRolloutCancelAfterAScaleUpWalksTheNewIndicesBack(t *testing.T) {
	const guid = "scale-cancel"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, 3, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", 3) })

	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "300"), env("VERSION", "2")))
	c.waitLRP(guid, "index 0 on v2", 30*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 1 })
	// Held, so that the walk does not reach the index the scale-up adds.
	if err := c.Temporal.SignalWorkflow(ctx, model.RolloutWorkflowID(guid), "", workflows.SignalPause, nil); err != nil {
		t.Fatal(err)
	}
	c.waitLRP(guid, "the rollout paused", 30*time.Second, func() bool { return c.rollout(guid).State == model.RolloutPaused })
	c.scale(guid, 4)
	c.waitLRP(guid, "index 3 RUNNING on the healthy v2", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 3)
		return a != nil && a.State == model.StateRunning
	})
	s := c.sample(guid, 4)
	c.mustPost("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil)
	c.waitLRP(guid, "the cancel to walk every index back to v1", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCanceled && c.allOn(guid, "v1", 4)
	})
	s.finish(t)
}
