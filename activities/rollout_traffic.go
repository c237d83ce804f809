package activities

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
)

// TrafficStore is what the traffic activities need of the database (db/traffic.go).
type TrafficStore interface {
	SetTraffic(ctx context.Context, rolloutID string, weights map[string]int32) (model.TrafficSplit, error)
	TrafficWaiting(ctx context.Context, guid string, gen int64, live time.Duration) ([]string, error)
	RecordTrafficAcked(ctx context.Context, rolloutID string, split model.TrafficSplit) error
	RoutableCounts(ctx context.Context, guid string) (map[string]int32, error)
}

// SetTrafficInput asks for the new definition's share of the LRP's requests: Weight percent
// (the other definitions share the rest by instances), or, with Clear, routing by instances
// again. Guard checks the capacity first, within model.DefaultWeightHeadroom (a forward
// step; a revert's weight of 0 is never refused).
type SetTrafficInput struct {
	RolloutID      string `json:"rollout_id"`
	ProcessGUID    string `json:"process_guid"`
	ToDefinitionID string `json:"to_definition_id"`
	Weight         int32  `json:"weight"`
	Clear          bool   `json:"clear,omitempty"`
	Guard          bool   `json:"guard,omitempty"`
}

// SetTrafficOutput is the split as stored, or why the guard refused it (nothing stored).
type SetTrafficOutput struct {
	Split   model.TrafficSplit `json:"split"`
	Refused string             `json:"refused,omitempty"`
}

// SetTraffic stores the LRP's split under a new generation (the same split again keeps
// its generation): routers apply it from its event.
func (a *Rollouts) SetTraffic(ctx context.Context, in SetTrafficInput) (SetTrafficOutput, error) {
	store := a.Store
	var weights map[string]int32
	if !in.Clear {
		weights = map[string]int32{in.ToDefinitionID: in.Weight}
	}
	if in.Guard && !in.Clear {
		counts, err := store.RoutableCounts(ctx, in.ProcessGUID)
		if err != nil {
			return SetTrafficOutput{}, err
		}
		var old int32
		for def, n := range counts {
			if def != in.ToDefinitionID {
				old += n
			}
		}
		if err := model.CheckWeightCapacity(in.Weight, counts[in.ToDefinitionID], old, model.DefaultWeightHeadroom); err != nil {
			return SetTrafficOutput{Refused: err.Error()}, nil
		}
	}
	split, err := store.SetTraffic(ctx, in.RolloutID, weights)
	return SetTrafficOutput{Split: split}, nonRetryable(err)
}

// AwaitTrafficInput waits for every live router to route the LRP by Generation or later,
// for at most Bound. Shown is the split as the rollout reports it once acknowledged.
type AwaitTrafficInput struct {
	RolloutID   string           `json:"rollout_id"`
	ProcessGUID string           `json:"process_guid"`
	Generation  int64            `json:"generation"`
	Shown       map[string]int32 `json:"shown,omitempty"`
	Bound       time.Duration    `json:"bound"`
}

// AwaitTrafficOutput says whether every live router acknowledged in time, and which did not.
type AwaitTrafficOutput struct {
	Acked   bool     `json:"acked"`
	Waiting []string `json:"waiting,omitempty"`
}

// trafficPoll is how often AwaitTraffic reads the routers' acknowledgements: an abort's
// weight of 0 is due on every router within a second.
const trafficPoll = 10 * time.Millisecond

// AwaitTraffic waits for the routers' acknowledgements (a weighted step's barrier, ROLLOUTS-
// NEXT.md section 5) and records the split on the rollout once they are all in. A router
// that does not answer within the bound is the caller's to judge: a platform failure of a
// step, which waits again; a revert goes on regardless.
func (a *Rollouts) AwaitTraffic(ctx context.Context, in AwaitTrafficInput) (AwaitTrafficOutput, error) {
	store := a.Store
	deadline := time.Now().Add(in.Bound)
	for {
		waiting, err := store.TrafficWaiting(ctx, in.ProcessGUID, in.Generation, model.RouterLiveness)
		if err != nil {
			return AwaitTrafficOutput{}, err
		}
		if len(waiting) == 0 {
			split := model.TrafficSplit{ProcessGUID: in.ProcessGUID, Generation: in.Generation, Weights: in.Shown}
			return AwaitTrafficOutput{Acked: true}, store.RecordTrafficAcked(ctx, in.RolloutID, split)
		}
		if !time.Now().Before(deadline) {
			return AwaitTrafficOutput{Waiting: waiting}, nil
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, waiting)
		}
		select {
		case <-ctx.Done():
			return AwaitTrafficOutput{}, ctx.Err()
		case <-time.After(trafficPoll):
		}
	}
}
