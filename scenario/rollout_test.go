package scenario

// Rollout scenarios (seeds 000 and 001) on the in-process cluster: the real API on a real
// PostgreSQL, the auctioneer, sim cells, and rollout workflows on a real Temporal dev server.
// Every scenario samples the served indices continuously (like e2e's sampler) and checks that
// they never drop below N while the new definition is healthy.
//
// The scenarios are grouped by theme: the three definitions of seed 000
// (rollout_definitions_test.go), steering a rollout (rollout_steer_test.go), the LRP changing
// under one (rollout_lrp_test.go), failures and automatic revert (rollout_failure_test.go); their harness is rollout_helpers_test.go, the zero-downtime
// checks rollout_sampler_test.go, the scripted cells rollout_chaos_test.go.

import (
	"testing"
)

// TestRollout runs the rollout scenarios as parallel subtests on the shared Temporal dev server.
func TestRollout(t *testing.T) {
	for _, sc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"FullyFunctional", testRolloutFullyFunctional},
		{"WaitsForReadiness", testRolloutWaitsForReadiness},
		{"FailingDefinition", testRolloutFailingDefinition},
		{"FlakyDefinition", testRolloutFlakyDefinition},
		{"NewDefinitionDuringRollout", testRolloutSupersede},
		{"CancelAndRollback", testRolloutCancelAndRollback},
		{"ActivateDuringFailingRollout", testRolloutActivate},
		{"ScaleDuringRollout", testRolloutScale},
		{"DeleteDuringRollout", testRolloutDelete},
		{"GroupsDuringRollout", testRolloutGroups},
		{"PauseResume", testRolloutPauseResume},
		{"PauseResumeThroughTheAPI", testRolloutPauseResumeThroughTheAPI},
		{"CrashLoopReverts", testRolloutCrashLoopReverts},
		{"FailureAtIndexThreeReverts", testRolloutFailureAtIndexThreeReverts},
		{"NeverReadyReverts", testRolloutNeverReadyReverts},
		{"AbortReverts", testRolloutAbortReverts},
		{"RevertThatCannotStartPauses", testRolloutRevertThatCannotStartPauses},
		{"PaceFromStrategy", testRolloutPaceFromStrategy},
		{"CellLostIsNotAFailure", testRolloutCellLostIsNotAFailure},
		{"MinReadyCatchesAFlappingRelease", testRolloutMinReadyCatchesAFlappingRelease},
		{"CanarySteps", testRolloutCanarySteps},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.fn(t)
		})
	}
}
