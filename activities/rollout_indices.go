package activities

import "context"

// IndicesOffInput names an LRP and the definition a walk back returns it to.
type IndicesOffInput struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
}

// IndicesOutput lists instance indices.
type IndicesOutput struct {
	Indices []int32 `json:"indices,omitempty"`
}

// IndicesOff lists the indices the LRP wants that hold an instance of another definition
// than in.DefinitionID: those a cancelled rollout walks back, the ones a scale-up created on
// the target during the walk included.
func (r *Rollouts) IndicesOff(ctx context.Context, in IndicesOffInput) (IndicesOutput, error) {
	indices, err := r.Store.IndicesOff(ctx, in.ProcessGUID, in.DefinitionID)
	return IndicesOutput{Indices: indices}, nonRetryable(err)
}
