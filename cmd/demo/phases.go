package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/router"
)

// demo walks one LRP through the phases while load runs, and keeps the figures per phase.
type demo struct {
	api       *bbsclient.Client
	statsURL  string
	stats     *http.Client
	guid      string
	domain    string
	host      string
	instances int
	appBin    string // absolute path of cmd/demoapp's binary
	steady    time.Duration
	settle    time.Duration
	timeout   time.Duration // per wait
	rec       *recorder
	out       io.Writer
	began     time.Time
	lastStats *router.Stats // at the start of the current phase
}

const appPort = 8080

// definition is the demo app at a version: only DEMO_VERSION (and so the definition id)
// changes from one to the next, which is what an app update looks like to the BBS.
func (d *demo) definition(id string) *model.LRPDefinition {
	return &model.LRPDefinition{
		DefinitionID: id,
		RootFS:       "preloaded:cflinuxfs4",
		MemoryMB:     64,
		DiskMB:       64,
		Ports:        []uint32{appPort},
		Env:          []model.EnvironmentVariable{{Name: "DEMO_VERSION", Value: id}},
		Action:       &model.Action{Run: &model.RunAction{Path: d.appBin}},
		CheckDefinition: &model.CheckDefinition{Checks: []model.Check{
			{HTTPCheck: &model.HTTPCheck{Port: appPort, Path: "/health"}},
		}},
	}
}

func (d *demo) desiredLRP(definitionID string) *model.DesiredLRP {
	route, _ := json.Marshal([]map[string]any{{"hostnames": []string{d.host}, "port": appPort}})
	return &model.DesiredLRP{
		ProcessGUID:   d.guid,
		Domain:        d.domain,
		Instances:     int32(d.instances),
		Routes:        model.Routes{"cf-router": route},
		Annotation:    "bbs demo (cmd/demo)",
		LRPDefinition: *d.definition(definitionID),
	}
}

func (d *demo) logf(format string, args ...any) {
	fmt.Fprintf(d.out, "[%6.1fs] %s\n", time.Since(d.began).Seconds(), fmt.Sprintf(format, args...))
}

// removeLeftover removes the demo LRP if an earlier run left it, and waits for its instances
// to be gone, so that every run starts from nothing.
func (d *demo) removeLeftover(ctx context.Context) error {
	return d.removeIfExists(ctx, "left by an earlier run")
}

// removeIfExists removes the demo LRP if it exists, and waits for its instances to be gone.
func (d *demo) removeIfExists(ctx context.Context, why string) error {
	found, err := exists(ctx, d.api, d.guid)
	if err != nil {
		return err
	}
	if found {
		d.logf("removing %s %s", d.guid, why)
		if err := d.api.RemoveDesiredLRP(ctx, d.guid); err != nil && !model.IsType(err, model.ErrResourceNotFound) {
			return err
		}
	}
	return d.waitGone(ctx)
}

func (d *demo) waitGone(ctx context.Context) error {
	return d.waitFor(ctx, "the demo LRP's instances to be gone", func() (bool, error) {
		l, err := instances(ctx, d.api, d.guid)
		return len(l) == 0, err
	})
}

// deploy desires the LRP at v1 and waits until every instance runs and the router serves it.
// The load starts only then: the baseline phase is the steady state.
func (d *demo) deploy(ctx context.Context) error {
	if err := d.api.UpsertDomain(ctx, d.domain, 0); err != nil {
		return err
	}
	d.logf("desiring %s: %d × %s (definition v1), route %s", d.guid, d.instances, d.appBin, d.host)
	if err := d.api.DesireLRP(ctx, d.desiredLRP("v1")); err != nil {
		return err
	}
	return d.waitServed(ctx, "v1")
}

// steadyPhase measures the deployed app doing nothing but serving.
func (d *demo) steadyPhase(ctx context.Context) error {
	d.begin(ctx, "deploy (steady)", true)
	return sleep(ctx, d.steady)
}

// rollingUpdate updates the definition and waits for the rollout to complete.
func (d *demo) rollingUpdate(ctx context.Context, from, to string) error {
	d.begin(ctx, fmt.Sprintf("rolling update %s→%s", from, to), true)
	d.logf("POST /v1/desired_lrp/update: definition %s", to)
	if err := d.api.UpdateDesiredLRP(ctx, d.guid, &model.DesiredLRPUpdate{Definition: d.definition(to)}); err != nil {
		return err
	}
	if err := d.waitRollout(ctx, model.RolloutKindUpdate, to, model.RolloutCompleted); err != nil {
		return err
	}
	if err := d.waitServed(ctx, to); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// canceledUpdate starts an update to `to` and cancels it once half the instances run it;
// the walk back returns every index to `from`.
func (d *demo) canceledUpdate(ctx context.Context, from, to string) error {
	half := int32((d.instances + 1) / 2)
	d.begin(ctx, fmt.Sprintf("update %s→%s, canceled halfway", from, to), true)
	d.logf("POST /v1/desired_lrp/update: definition %s (to be canceled at %d/%d)", to, half, d.instances)
	if err := d.api.UpdateDesiredLRP(ctx, d.guid, &model.DesiredLRPUpdate{Definition: d.definition(to)}); err != nil {
		return err
	}
	var at int32
	err := d.waitFor(ctx, fmt.Sprintf("%d instances on %s", half, to), func() (bool, error) {
		r, err := d.api.Rollout(ctx, d.guid)
		if err != nil {
			return false, err
		}
		if r.ToDefinitionID != to {
			return false, nil
		}
		if !r.InProgress() {
			return false, fatalf("the rollout to %s ended (%s) before it could be canceled", to, r.State)
		}
		at = r.UpdatedInstances
		return at >= half, nil
	})
	if err != nil {
		return err
	}
	d.logf("POST /v1/desired_lrp/cancel_update with %d/%d instances on %s", at, d.instances, to)
	if err := d.api.CancelUpdate(ctx, d.guid); err != nil {
		return err
	}
	d.rec.rename(fmt.Sprintf("update %s→%s, canceled at %d/%d", from, to, at, d.instances))
	if err := d.waitRollout(ctx, model.RolloutKindUpdate, to, model.RolloutCanceled); err != nil {
		return err
	}
	if err := d.waitServed(ctx, from); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// rollback rolls back to a stored earlier definition.
func (d *demo) rollback(ctx context.Context, to string) error {
	d.begin(ctx, "rollback to "+to, true)
	d.logf("POST /v1/desired_lrp/rollback: definition %s", to)
	if err := d.api.Rollback(ctx, d.guid, to); err != nil {
		return err
	}
	if err := d.waitRollout(ctx, model.RolloutKindRollback, to, model.RolloutCompleted); err != nil {
		return err
	}
	if err := d.waitServed(ctx, to); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// deleteAndDesire is what stock BBS makes a user do to change an LRP's definition: remove
// it and desire it again, same process guid and route, with the new definition.
func (d *demo) deleteAndDesire(ctx context.Context, to string) error {
	d.begin(ctx, fmt.Sprintf("delete + desire %s (stock BBS)", to), false)
	d.logf("POST /v1/desired_lrp/remove, then /v1/desired_lrp/desire with definition %s", to)
	if err := d.api.RemoveDesiredLRP(ctx, d.guid); err != nil {
		return err
	}
	if err := d.api.DesireLRP(ctx, d.desiredLRP(to)); err != nil {
		return err
	}
	if l, err := instances(ctx, d.api, d.guid); err == nil {
		created := 0
		for _, a := range l {
			if a.DefinitionID == to {
				created++
			}
		}
		d.logf("  right after the desire: %d/%d instances of %s exist, %d of the removed LRP are stopping", created, d.instances, to, len(l)-created)
	}
	if err := d.waitServed(ctx, to); err != nil {
		return err
	}
	return sleep(ctx, d.settle)
}

// begin starts a phase (ending the current one).
func (d *demo) begin(ctx context.Context, name string, rolling bool) {
	d.countRetries(ctx)
	d.rec.begin(name, rolling, time.Now())
}

// finish ends the last phase.
func (d *demo) finish(ctx context.Context) {
	d.countRetries(ctx)
	d.rec.end(time.Now())
}

// countRetries gives the current phase, if any, the router's retries since it began, and
// remembers the count for the next phase.
func (d *demo) countRetries(ctx context.Context) {
	s, err := readRouterStats(ctx, d.stats, d.statsURL)
	if err != nil {
		s = nil
	}
	if cur := d.rec.current(); cur != nil && s != nil && d.lastStats != nil {
		d.rec.setRetries(cur, s.Retries-d.lastStats.Retries)
	}
	d.lastStats = s
}

// waitRollout waits until the LRP's rollout of kind toward `to` reaches state.
func (d *demo) waitRollout(ctx context.Context, kind, to, state string) error {
	last := int32(-1)
	return d.waitFor(ctx, fmt.Sprintf("the %s rollout to %s to be %s", kind, to, state), func() (bool, error) {
		r, err := d.api.Rollout(ctx, d.guid)
		if err != nil {
			return false, err
		}
		if r.Kind != kind || r.ToDefinitionID != to {
			return false, nil
		}
		if r.UpdatedInstances != last && r.InProgress() {
			last = r.UpdatedInstances
			d.logf("  rollout %s: %d/%d on %s", r.State, r.UpdatedInstances, r.Instances, to)
		}
		if r.State == state {
			return true, nil
		}
		if !r.InProgress() {
			return false, fatalf("the %s rollout to %s ended %s, not %s (%s)", kind, to, r.State, state, r.Reason)
		}
		return false, nil
	})
}

// waitServed waits until exactly the desired instances exist, all RUNNING the definition,
// and the router routes the host to that many endpoints.
func (d *demo) waitServed(ctx context.Context, def string) error {
	err := d.waitFor(ctx, fmt.Sprintf("%d instances RUNNING %s and routed", d.instances, def), func() (bool, error) {
		l, err := instances(ctx, d.api, d.guid)
		if err != nil {
			return false, err
		}
		if len(l) != d.instances {
			return false, nil
		}
		for _, a := range l {
			if a.State != model.StateRunning || a.DefinitionID != def || a.Retiring {
				return false, nil
			}
		}
		s, err := readRouterStats(ctx, d.stats, d.statsURL)
		if err != nil {
			return false, err
		}
		return s.Hosts[d.host] == d.instances, nil
	})
	if err == nil {
		d.logf("  %d/%d RUNNING %s and routed", d.instances, d.instances, def)
	}
	return err
}

// waitFor polls cond until it holds, fails, or d.timeout passes. An error from cond that is
// a transport hiccup is retried; only the last one is reported on timeout.
func (d *demo) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(d.timeout)
	var lastErr error
	for {
		ok, err := cond()
		switch {
		case ok:
			return nil
		case err != nil && isFatal(err):
			return err
		case err != nil:
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", d.timeout, what, lastErr)
			}
			return fmt.Errorf("timed out after %s waiting for %s", d.timeout, what)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// isFatal tells errors a wait should stop on (the API's own answers, and conditions that
// can no longer hold) from transport hiccups it should retry.
func isFatal(err error) bool {
	if _, ok := err.(*model.Error); ok {
		return !model.IsType(err, model.ErrUnavailable)
	}
	_, ended := err.(fatalError)
	return ended
}

// fatalError is a condition a wait can no longer reach.
type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

func fatalf(format string, args ...any) error { return fatalError{fmt.Sprintf(format, args...)} }

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
