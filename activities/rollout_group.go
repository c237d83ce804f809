package activities

import (
	"context"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// GroupStore is what a rollout group's activity needs of the database.
type GroupStore interface {
	AdvanceRolloutGroup(ctx context.Context, id string, defaults *model.RolloutStrategy) (*db.GroupAdvance, error)
}

// MemberRollouts starts the workflows of a group's member rollouts, as the API starts an
// update's (a start that hands the rollout to a run finishing the LRP's last one).
type MemberRollouts interface {
	StartRollout(ctx context.Context, r *model.Rollout, domain string) error
	// Defaults is the server's layer of every rollout's strategy.
	Defaults() *model.RolloutStrategy
}

// MemberAborter aborts a member's rollout as POST /v1/rollouts/abort does (its traffic to 0
// first, then the revert); repeating an abort changes nothing.
type MemberAborter interface {
	Abort(ctx context.Context, guid, reason string) (*model.Rollout, error)
}

// RolloutGroups carries out rollout groups' decisions: the store makes them
// (AdvanceRolloutGroup); this starts and aborts the member rollouts they name.
type RolloutGroups struct {
	Store    GroupStore
	Rollouts MemberRollouts
	Aborter  MemberAborter
	// Poll is how often a rolling group looks for members that ended; 0 means
	// DefaultGroupPoll.
	Poll time.Duration
	Log  *zap.Logger
}

// DefaultGroupPoll is how often a rolling group looks for members that ended: a member's
// slot is free from its rollout's last commit, and is given to the next member within this.
const DefaultGroupPoll = 100 * time.Millisecond

// RollGroupInput names the group.
type RollGroupInput struct {
	GroupID string `json:"group_id"`
}

// RollGroupOutput is where RollGroup left the group: what its workflow waits for next.
type RollGroupOutput struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Wave   int    `json:"wave"`
	// WaveOpensAt is when the current wave may start (the pause between waves).
	WaveOpensAt time.Time `json:"wave_opens_at,omitempty"`
	Done        bool      `json:"done,omitempty"`
	// Started counts the members this call started.
	Started int `json:"started"`
}

// RollGroup advances the group for as long as only members' ends are awaited: it starts
// members as slots free, aborts the members of an aborted group, and returns when the group
// waits for what only its workflow can wait for durably — the pause between waves (a timer),
// a paused group's resume (a signal) — or has ended. It keeps nothing but what it reports:
// killed, it is retried and takes up from the store's rows, which hold every decision.
func (g *RolloutGroups) RollGroup(ctx context.Context, in RollGroupInput) (RollGroupOutput, error) {
	poll := g.Poll
	if poll <= 0 {
		poll = DefaultGroupPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	aborted := map[string]bool{}
	started := 0
	for {
		adv, err := g.Store.AdvanceRolloutGroup(ctx, in.GroupID, g.Rollouts.Defaults())
		if model.IsType(err, model.ErrResourceNotFound) {
			return RollGroupOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), string(model.ErrResourceNotFound), err)
		}
		if err != nil {
			return RollGroupOutput{}, err
		}
		g.startMembers(ctx, in.GroupID, adv.Started)
		started += len(adv.Started)
		for _, m := range adv.Aborting {
			if aborted[m.Rollout.ID] {
				continue
			}
			aborted[m.Rollout.ID] = true
			if _, err := g.Aborter.Abort(ctx, m.Rollout.ProcessGUID, "rollout group "+in.GroupID+" aborted: "+adv.Reason); err != nil &&
				!model.IsType(err, model.ErrNoRolloutInProgress) {
				g.Log.Warn("abort member rollout", zap.String("group", in.GroupID), zap.String("process_guid", m.Rollout.ProcessGUID), zap.Error(err))
				delete(aborted, m.Rollout.ID) // tried again at the next poll
			}
		}
		out := RollGroupOutput{State: adv.State, Reason: adv.Reason, Wave: adv.Wave, WaveOpensAt: adv.WaveOpensAt, Done: adv.Done, Started: started}
		if adv.Done || !adv.WaveOpensAt.IsZero() || adv.State == model.GroupPaused || adv.State == model.GroupWaitingForWindow {
			return out, nil
		}
		activity.RecordHeartbeat(ctx, started)
		if len(adv.Started) == db.MaxMemberStarts {
			continue // more slots may be free: no wait before the next decision
		}
		select {
		case <-ctx.Done():
			return RollGroupOutput{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// memberStarts is how many member workflows RollGroup starts at once: each start is a round
// trip to Temporal, and one after another they, not the budget, bounded how many members
// rolled (44 of 100 in BenchmarkRolloutGroupFleet).
const memberStarts = 16

// startMembers starts the workflows of the members a decision started, memberStarts at once.
// A start that fails is logged: the member's rollout row is in progress, and convergence
// starts its workflow.
func (g *RolloutGroups) startMembers(ctx context.Context, group string, started []db.MemberRollout) {
	sem := make(chan struct{}, memberStarts)
	var wg sync.WaitGroup
	for i := range started {
		m := &started[i]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := g.Rollouts.StartRollout(ctx, &m.Rollout, m.Domain); err != nil {
				g.Log.Warn("member rollout workflow not started; convergence will start it",
					zap.String("group", group), zap.String("process_guid", m.Rollout.ProcessGUID), zap.Error(err))
			}
		}()
	}
	wg.Wait()
	activity.RecordHeartbeat(ctx, len(started))
}
