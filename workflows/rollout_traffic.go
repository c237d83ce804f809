package workflows

import (
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/workflow"
)

// Traffic steps (ROLLOUTS-NEXT.md sections 1 and 5). A canary step with a weight gives the
// new definition that share of the LRP's requests once the walk holds at it: the step's
// count of indices is first raised to what the weight needs (the capacity guard's surge),
// then the weight is set and the step's pause starts only when every live router has
// acknowledged it. A router that does not within the bound is a platform failure of the
// step, which waits again. Leaving the step for one without a weight, or the last, routes by
// instances again; a cancel, abort or revert first sets the new definition's weight to 0 and
// waits (a second at most) for the routers before any instance is touched. The rollout's end
// gives the LRP back to routing by instances in the store (db.finishRolloutRow).

const (
	// DefaultTrafficBound is how long a step's weight waits for every router's
	// acknowledgement before it counts as a platform failure and waits again.
	DefaultTrafficBound = 5 * time.Second
	// RevertTrafficBound is how long a revert waits for the routers to take the new
	// definition's weight to 0 before it walks back regardless (the contract's 1 s).
	RevertTrafficBound = time.Second
)

// stepTarget is the current step's count of indices, raised to the fewest instances of the
// new definition its weight needs within the headroom.
func (r *rollout) stepTarget() int32 {
	st := r.in.Canary[r.walked.Step]
	if st.Weight == nil {
		return st.Instances
	}
	newMin, _ := model.WeightInstances(*st.Weight, r.instances, model.DefaultWeightHeadroom)
	return max(st.Instances, newMin)
}

// weightAcked says the current step's weight is set and every router acknowledged it.
func (r *rollout) weightAcked() bool {
	t := r.walked.Traffic
	return t != nil && t.Step == r.walked.Step && t.Acked
}

// setStepWeight sets the current step's weight (once) and begins the wait for the routers'
// acknowledgements (StepHold "traffic"); a weight the capacity guard refuses pauses the
// rollout with the reason. It says whether the rollout's report changed.
func (r *rollout) setStepWeight(weight int32) bool {
	if t := r.walked.Traffic; t == nil || t.Step != r.walked.Step {
		var out activities.SetTrafficOutput
		in := activities.SetTrafficInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, ToDefinitionID: r.in.ToDefinitionID,
			Weight: weight, Guard: weight > 0}
		if err := r.local(r.ctx, in, acts.SetTraffic, &out); err != nil {
			r.abort(err)
			return false
		}
		if out.Refused != "" {
			workflow.GetLogger(r.ctx).Warn("capacity guard refused a step's weight: paused", "step", r.walked.Step, "weight", weight, "reason", out.Refused)
			if r.walked.Failure == nil {
				r.walked.Failure = &model.RolloutFailure{Reason: model.FailureCapacity, Kind: model.FailurePlatform, Detail: out.Refused}
			}
			r.phase = phaseOf(false, true)
			return true
		}
		r.walked.Traffic = &WalkTraffic{Step: r.walked.Step, Weight: weight, Generation: out.Split.Generation}
	}
	r.walked.StepHold = "traffic"
	return true
}

// shownTraffic is a weight as the rollout reports it: the new definition's share and the
// rest, which the other definitions share by instances, under the one it started from.
func (r *rollout) shownTraffic(weight int32) map[string]int32 {
	return map[string]int32{r.in.ToDefinitionID: weight, r.in.FromDefinitionID: 100 - weight}
}

func (r *rollout) awaitTraffic(t *WalkTraffic, bound time.Duration) workflow.Future {
	in := activities.AwaitTrafficInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, Generation: t.Generation,
		Shown: r.shownTraffic(t.Weight), Bound: bound}
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(r.ctx, localOptions), acts.AwaitTraffic, in)
}

// addTrafficWait makes sel take the routers' acknowledgement of the step's weight: the
// step's hold begins then; a wait that ran out is a platform failure, and waits again.
func (r *rollout) addTrafficWait(sel workflow.Selector, changed *bool) {
	t := r.walked.Traffic
	if r.walked.StepHold != "traffic" || t == nil || !r.canaryActive() {
		return
	}
	if r.trafficWait == nil {
		r.trafficWait = r.awaitTraffic(t, DefaultTrafficBound)
	}
	wait := r.trafficWait
	sel.AddFuture(wait, func(f workflow.Future) {
		if r.trafficWait != wait {
			return // the step was left meanwhile
		}
		r.trafficWait = nil
		var out activities.AwaitTrafficOutput
		if err := f.Get(r.ctx, &out); err != nil {
			r.abort(err)
			return
		}
		if !out.Acked {
			workflow.GetLogger(r.ctx).Warn("routers did not acknowledge a step's weight in time (a platform failure): waiting again",
				"step", t.Step, "generation", t.Generation, "waiting", out.Waiting)
			return
		}
		t.Acked = true
		r.walked.StepHold = ""
		*changed = true
	})
}

// steerTraffic keeps the LRP's split in step with the walk: a walk back takes the new
// definition's weight to 0 before it touches an instance; a forward walk that left its
// weighted step for one without a weight routes by instances again.
func (r *rollout) steerTraffic() {
	t := r.walked.Traffic
	switch {
	case t == nil:
		return
	case r.phase.back():
		if t.Weight == 0 {
			return
		}
		var out activities.SetTrafficOutput
		in := activities.SetTrafficInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, ToDefinitionID: r.in.ToDefinitionID}
		if err := r.local(r.ctx, in, acts.SetTraffic, &out); err != nil {
			r.abort(err)
			return
		}
		zero := &WalkTraffic{Step: t.Step, Generation: out.Split.Generation}
		r.walked.Traffic = zero
		var ack activities.AwaitTrafficOutput
		if err := r.awaitTraffic(zero, RevertTrafficBound).Get(r.ctx, &ack); err != nil {
			r.abort(err)
			return
		}
		zero.Acked = ack.Acked
		if !ack.Acked {
			workflow.GetLogger(r.ctx).Warn("routers did not take the new definition's weight to 0 within the bound: walking back regardless",
				"generation", zero.Generation, "waiting", ack.Waiting)
		}
	case t.Step != r.walked.Step && !(r.canaryActive() && r.in.Canary[r.walked.Step].Weight != nil):
		in := activities.SetTrafficInput{RolloutID: r.in.RolloutID, ProcessGUID: r.in.ProcessGUID, ToDefinitionID: r.in.ToDefinitionID, Clear: true}
		if err := r.local(r.ctx, in, acts.SetTraffic, nil); err != nil {
			r.abort(err)
			return
		}
		r.walked.Traffic = nil
	}
}
