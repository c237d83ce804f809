package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/chaos"
)

// TestSoak is a short `make soak` (package chaos): on `bbs cluster` with sim cells, a mixed
// workload — desires, scale changes, rollouts, cancels, rollbacks, removes — over 30 LRPs
// for 20 s while faults hit at random every few seconds; every write succeeds (or is refused
// as it should be), no owed index is ever without a RUNNING instance, and afterwards every
// LRP is at rest, no rollout is stuck and no cell holds a container nobody accounts for.
func TestSoak(t *testing.T) {
	ctx := context.Background()
	c := startChaosCluster(t, chaos.Config{CellExecutor: "sim", Cells: 4})
	var progress strings.Builder
	r := chaos.Soak(ctx, c, chaos.SoakConfig{Duration: 20 * time.Second, LRPs: 30, FaultEvery: 6 * time.Second, Progress: &progress})
	var report strings.Builder
	chaos.WriteSoak(&report, r)
	t.Logf("%s\n%s", progress.String(), report.String())
	if r.Violations() > 0 || len(r.Problems) > 0 {
		t.Errorf("the soak had %d violations: %v", r.Violations(), r.Problems)
	}
}
