package scenario

import (
	"testing"
	"time"
)

// A cell carries out a retirement whose stop request it never got (it was down when the BBS
// sent it, say, and came back adopting the instance): an instance the BBS has marked retiring
// is stopped by its cell, after the drain a stop request waits, and removed — at its cell's
// next reconciliation rather than at convergence's next pass, so that no index keeps two
// instances for long after a rollout.
func TestACellStopsARetiringInstanceWhoseStopItMissed(t *testing.T) {
	c := newCluster(t, 1, 1, roomy)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 1)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("web RUNNING", 10*time.Second, func() bool { return runningIndices(c.instances("web")) == 1 })
	guid := c.instances("web")[0].InstanceGUID
	// Retired in the store without a stop request, as when the request was lost.
	if _, err := c.Store.DB().ExecContext(ctx, `UPDATE actual_lrps SET retiring = true WHERE process_guid = 'web'`); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the retiring instance stopped and removed by its cell", 15*time.Second, func() bool {
		for _, a := range c.instances("web") {
			if a.InstanceGUID == guid {
				return false
			}
		}
		return true
	})
	c.waitFor("its container gone", 5*time.Second, func() bool { return c.containersOf("web") == 0 })
}
