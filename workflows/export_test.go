package workflows

import "go.temporal.io/sdk/temporal"

// StartAttributes are the search attributes StartRollout starts a rollout's workflow with;
// phase says whether RolloutPhase is one of them (false: as a start before it existed, or on
// a server without it).
func StartAttributes(in RolloutInput, phase bool) temporal.SearchAttributes {
	return startAttributes(in, phase)
}
