package main

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// crashingUpdate rolls out a definition whose app exits at once (DEMO_FAIL), with the default
// strategy: the rollout sees the crash loop at the max_crashes-th crash of the new instance
// at index 0 and reverts to `from` by itself, every old instance serving throughout. It logs
// when the third crash was recorded, when the revert began and when it ended.
func (d *demo) crashingUpdate(ctx context.Context, from, to string) error {
	d.begin(ctx, fmt.Sprintf("crash-looping update %s→%s, reverted automatically", from, to), true)
	def := d.definition(to)
	def.Env = append(def.Env, model.EnvironmentVariable{Name: "DEMO_FAIL", Value: "cannot open /etc/app/config.yml: no such file or directory"})
	start := time.Now()
	d.logf("POST /v1/desired_lrp/update: definition %s, whose app exits at start (default strategy: on_failure revert)", to)
	if err := d.api.UpdateDesiredLRP(ctx, d.guid, &model.DesiredLRPUpdate{Definition: def}); err != nil {
		return err
	}
	var crashed, reverting, reverted time.Time
	var failure *model.RolloutFailure
	err := d.waitFor(ctx, fmt.Sprintf("the rollout to %s to be reverted", to), func() (bool, error) {
		now := time.Now()
		if crashed.IsZero() {
			if a, err := d.instanceOf(ctx, to, 0); err == nil && a != nil && a.CrashCount >= 3 {
				crashed = now
			}
		}
		r, err := d.api.Rollout(ctx, d.guid)
		if err != nil || r.ToDefinitionID != to {
			return false, err
		}
		if reverting.IsZero() && (r.Phase == model.PhaseReverting || r.State == model.RolloutReverted) {
			reverting, failure = now, r.Failure
		}
		switch {
		case r.State == model.RolloutReverted:
			reverted = now
			return true, nil
		case !r.InProgress():
			return false, fatalf("the rollout to %s ended %s, not reverted (%s)", to, r.State, r.Reason)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if failure != nil {
		d.logf("  failure: %s (%s) at index %s: %s", failure.Reason, failure.Kind, index(failure.Index), failure.Detail)
	}
	if !crashed.IsZero() {
		d.logf("  3rd crash seen after %v; revert began %v after it; reverted %v after the update",
			crashed.Sub(start).Round(10*time.Millisecond), reverting.Sub(crashed).Round(10*time.Millisecond), reverted.Sub(start).Round(10*time.Millisecond))
	} else {
		d.logf("  revert began %v and ended %v after the update", reverting.Sub(start).Round(10*time.Millisecond), reverted.Sub(start).Round(10*time.Millisecond))
	}
	if err := d.waitServed(ctx, from); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// instanceOf is the instance of def at index, nil when there is none.
func (d *demo) instanceOf(ctx context.Context, def string, index int32) (*model.ActualLRP, error) {
	l, err := instances(ctx, d.api, d.guid)
	if err != nil {
		return nil, err
	}
	for i := range l {
		if l[i].DefinitionID == def && l[i].Index == index {
			return &l[i], nil
		}
	}
	return nil, nil
}

func index(i *int32) string {
	if i == nil {
		return "-"
	}
	return fmt.Sprint(*i)
}
