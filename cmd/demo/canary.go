package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// The canary phases: a release walks through the same traffic-weighted canary with analysis
// twice — a good one is judged pass and promoted to every index, one that answers 5 % of its
// requests with 500 is judged fail and reverted, its weight to 0 before any instance is
// touched. The router splits the requests by definition weight and counts them per
// definition; the rollout compares canary with baseline over the same windows.

// Analysis windows of the demo: at 200 requests per second a 10 % canary gets about 80
// requests a window, enough for min_requests and for 5 % errors to stand out against a
// baseline without any (the judge wants ≥ 4 errors of 80 here, which a 5 % release gives in
// more than half the windows; the whole step's 240 requests, and the 50 % step's 400, almost
// surely).
const (
	canaryInterval    = 4 * time.Second
	canaryFirstPause  = 12 * time.Second // three windows, then the whole step
	canarySecondPause = 4 * time.Second
	canaryMinRequests = 50
	badErrorRate      = "0.05"
)

// canaryStrategy is both canary phases' strategy: 10 % of the requests with analysis, then
// 50 % with analysis, then every index. An inconclusive step fails rather than pausing for a
// human: the demo wants a decision.
func canaryStrategy() *model.RolloutStrategy {
	ms := func(d time.Duration) *int64 { v := d.Milliseconds(); return &v }
	weight := func(w int32) *int32 { return &w }
	minRequests, fail := int64(canaryMinRequests), model.InconclusiveFail
	return &model.RolloutStrategy{
		Canary: &model.CanaryStrategy{Steps: []model.CanaryStep{
			{Weight: weight(10), PauseMS: ms(canaryFirstPause), Analysis: true},
			{Weight: weight(50), PauseMS: ms(canarySecondPause), Analysis: true},
		}},
		Analysis: &model.RolloutAnalysis{IntervalMS: ms(canaryInterval), MinRequests: &minRequests, OnInconclusive: &fail},
	}
}

// goodCanary rolls a good release out by weight with analysis: every verdict passes and it
// is promoted to every index.
func (d *demo) goodCanary(ctx context.Context, from, to string) error {
	d.begin(ctx, fmt.Sprintf("canary %s→%s, 10 %%→50 %% by weight", from, to), true)
	r, err := d.canaryUpdate(ctx, d.definition(to), model.RolloutCompleted)
	if err != nil {
		return err
	}
	d.rec.setAnalysis(d.rec.current(), to, r.Analysis, "promoted to every index")
	if err := d.waitServed(ctx, to); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// badCanary rolls out a release that answers 5 % of GET / with 500 (DEMO_ERROR_RATE): the
// analysis fails it and the rollout reverts to `from`, the weight first. It logs when, after
// the failed verdict, the routers took its weight to 0, it last answered and the revert
// ended.
func (d *demo) badCanary(ctx context.Context, from, to string) error {
	d.begin(ctx, fmt.Sprintf("canary %s→%s answering 5 %% 500s, reverted", from, to), true)
	def := d.definition(to)
	def.Env = append(def.Env, model.EnvironmentVariable{Name: "DEMO_ERROR_RATE", Value: badErrorRate})
	r, err := d.canaryUpdate(ctx, def, model.RolloutReverted)
	if err != nil {
		return err
	}
	reverted := time.Now()
	if r.Failure == nil || r.Failure.Reason != model.FailureAnalysis {
		return fatalf("the rollout to %s was reverted for %v, not a failed analysis", to, r.Failure)
	}
	outcome := fmt.Sprintf("reverted to %s: %s failure %q", r.RevertedTo, r.Failure.Kind, r.Failure.Reason)
	if v := decisive(r.Analysis); v != nil {
		outcome += fmt.Sprintf(" at step %s", stepName(v.Step))
		failed := time.Unix(0, v.At)
		d.logf("  after the failed verdict (%s): %s answered its last request %s later, in flight then; the revert ended %s later",
			v.Window, to, sinceOrNever(failed, d.rec.lastAnswered(to)), reverted.Sub(failed).Round(10*time.Millisecond))
	}
	d.rec.setAnalysis(d.rec.current(), to, r.Analysis, outcome)
	if err := d.waitServed(ctx, from); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// canaryUpdate updates the definition with the canary strategy and follows the rollout until
// it ends, logging each change of phase, step and split and each verdict as it lands. It
// fails unless the rollout ends in state want.
func (d *demo) canaryUpdate(ctx context.Context, def *model.LRPDefinition, want string) (*model.Rollout, error) {
	to := def.DefinitionID
	d.logf("POST /v1/desired_lrp/update: definition %s, canary steps weight 10 %% (%s, analysis every %s), then 50 %% (%s, analysis)",
		to, canaryFirstPause, canaryInterval, canarySecondPause)
	if err := d.api.UpdateDesiredLRP(ctx, d.guid, &model.DesiredLRPUpdate{Definition: def, Strategy: canaryStrategy()}); err != nil {
		return nil, err
	}
	var last *model.Rollout
	shown, logged := "", 0
	err := d.waitFor(ctx, fmt.Sprintf("the rollout to %s to be %s", to, want), func() (bool, error) {
		r, err := d.api.Rollout(ctx, d.guid)
		if err != nil || r.ToDefinitionID != to {
			return false, err
		}
		last = r
		if now := describeRollout(r); now != shown {
			shown = now
			d.logf("  rollout %s", now)
		}
		for ; logged < len(r.Analysis); logged++ {
			d.logf("    %s", fmtVerdict(r.Analysis[logged]))
		}
		switch {
		case r.State == want:
			return true, nil
		case !r.InProgress():
			why := r.Reason
			if r.Failure != nil {
				why = fmt.Sprintf("%s: %s", r.Failure.Reason, r.Failure.Detail)
			}
			return false, fatalf("the rollout to %s ended %s, not %s (%s)", to, r.State, want, why)
		}
		return false, nil
	})
	return last, err
}

// fmtVerdict is one verdict as the demo logs it when it lands.
func fmtVerdict(v model.AnalysisVerdict) string {
	return fmt.Sprintf("%s %s: canary %d requests, %s 5xx, p99 %s; baseline %d, %s, p99 %s — %s", v.Window, v.Verdict,
		v.Canary.Requests, fmtRate(v.Canary.ErrorRate), fmtMS(v.Canary.P99MS),
		v.Baseline.Requests, fmtRate(v.Baseline.ErrorRate), fmtMS(v.Baseline.P99MS), v.Reason)
}

// describeRollout is what the demo logs of a rollout's progress: phase, step, split, and
// the failure once there is one.
func describeRollout(r *model.Rollout) string {
	var b strings.Builder
	b.WriteString(r.Phase)
	if r.Step != nil && r.Phase != model.PhaseReverting && r.InProgress() {
		fmt.Fprintf(&b, " at step %d (of %d, from 0)", *r.Step, r.StepsTotal)
	}
	fmt.Fprintf(&b, ", %d/%d on %s", r.UpdatedInstances, r.Instances, r.ToDefinitionID)
	if len(r.Traffic) > 0 {
		ids := slices.Sorted(maps.Keys(r.Traffic))
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%s=%d%%", id, r.Traffic[id])
		}
		fmt.Fprintf(&b, ", every router at %s (generation %d)", strings.Join(parts, " "), r.TrafficGeneration)
	}
	if r.Failure != nil {
		fmt.Fprintf(&b, "; failure %s (%s)", r.Failure.Reason, r.Failure.Kind)
	}
	return b.String()
}

// decisive is the verdict that decided the rollout: the first fail, else the last verdict.
func decisive(verdicts []model.AnalysisVerdict) *model.AnalysisVerdict {
	for i := range verdicts {
		if verdicts[i].Verdict == model.VerdictFail {
			return &verdicts[i]
		}
	}
	if len(verdicts) == 0 {
		return nil
	}
	return &verdicts[len(verdicts)-1]
}

func stepName(step *int32) string {
	if step == nil {
		return "background"
	}
	return fmt.Sprint(*step)
}

// sinceOrNever is how long after t a later time came, or "never" when it did not.
func sinceOrNever(t, later time.Time) string {
	if later.IsZero() {
		return "never"
	}
	if later.Before(t) {
		return fmt.Sprintf("%s before it", t.Sub(later).Round(time.Millisecond))
	}
	return later.Sub(t).Round(time.Millisecond).String()
}
