package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Matrix is the chaos test on a cluster of process cells: four apps of three instances
// under steady traffic through the router, and for each trial an update of the first (with a
// canary step at one index that takes a third of the requests by weight and is judged by
// analysis), an
// update of the second cancelled halfway, a rollback of the third, and an update of the
// fourth to a definition that crash-loops from index 1 on — which the default strategy
// reverts by itself, walking index 0 back — and a rollout group over three more apps in two
// waves under budgets (group.go), all in flight when the trial's faults hit.
type Matrix struct {
	c    *Cluster
	demo string
	logf func(format string, args ...any)

	sampler   *Sampler
	callbacks *Callbacks
	trial     int
	// back alternates between two definitions, each trial rolling back to the other.
	backDefs [2]string
	backOn   int
}

// The apps of a matrix, and their instances.
const (
	appRoll   = "roll"
	appCancel = "cancel"
	appBack   = "back"
	appRevert = "revert"
	appSize   = 3
)

var matrixApps = []string{appRoll, appCancel, appBack, appRevert}

// MatrixShort are the trials of the short form (inside `make test`): a cell, PostgreSQL,
// and an API replica with the placement leader at once — every kind of process but the
// Temporal server's, in about a minute.
var MatrixShort = [][]string{{"cell"}, {"postgres"}, {"api", "leader"}}

// MatrixFull is every fault alone, then every pair at once.
func MatrixFull() [][]string {
	var out [][]string
	for _, f := range Faults {
		out = append(out, []string{f.Name})
	}
	for i := range Faults {
		for j := i + 1; j < len(Faults); j++ {
			out = append(out, []string{Faults[i].Name, Faults[j].Name})
		}
	}
	return out
}

// NewMatrix desires the apps (demo is cmd/demoapp's binary) and waits until they run and
// are routed.
func NewMatrix(ctx context.Context, c *Cluster, demo string) (*Matrix, error) {
	m := &Matrix{c: c, demo: demo, logf: c.logf, backDefs: [2]string{"back-a", "back-b"}}
	var err error
	if m.callbacks, err = StartCallbacks(); err != nil {
		return nil, err
	}
	m.sampler = StartSampler(c.BBS, 100*time.Millisecond)
	for _, app := range matrixApps {
		def := webDefinition(demo, app+"-v0", "v0")
		if app == appBack {
			def = webDefinition(demo, m.backDefs[0], "a")
		}
		if err := write(ctx, func(ctx context.Context) error { return c.BBS.DesireLRP(ctx, webLRP(app, appSize, def)) }, model.ErrResourceExists); err != nil {
			m.Close()
			return nil, fmt.Errorf("desire %s: %w", app, err)
		}
		m.sampler.Watch(app, appSize)
	}
	// The app to roll back needs a definition to roll back to.
	if err := m.update(ctx, appBack, webDefinition(demo, m.backDefs[1], "b")); err != nil {
		m.Close()
		return nil, err
	}
	m.backOn = 1
	want, err := m.desireFleet(ctx)
	if err != nil {
		m.Close()
		return nil, err
	}
	for app, def := range map[string]string{appRoll: appRoll + "-v0", appCancel: appCancel + "-v0", appBack: m.backDefs[1], appRevert: appRevert + "-v0"} {
		want[app] = def
	}
	if err := m.waitSettled(ctx, want, 2*time.Minute); err != nil {
		m.Close()
		return nil, err
	}
	if err := m.waitRouted(ctx, time.Minute); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close stops the matrix's helpers (the apps stay).
func (m *Matrix) Close() {
	m.sampler.Stop()
	m.callbacks.Close()
}

func (m *Matrix) update(ctx context.Context, guid string, def model.LRPDefinition) error {
	return m.updateWith(ctx, guid, def, nil)
}

// rollCanary is the strategy of the first app's update: a canary step at one index taking a
// third of the requests by weight, judged by analysis for a short pause — so that the
// canary, the weight's acknowledgement by the router and the analysis all walk under the
// trial's faults too. An analysis the faults leave inconclusive goes on: a trial's verdict
// is the rollout's end, and a request the faults fail fails the trial anyway.
func rollCanary() *model.RolloutStrategy {
	one, weight, pause := int32(1), int32(34), int64(1000)
	interval, minRequests, p99 := int64(500), int64(20), int64(2000)
	goOn := model.InconclusiveContinue
	return &model.RolloutStrategy{
		Canary:   &model.CanaryStrategy{Steps: []model.CanaryStep{{Instances: &one, Weight: &weight, PauseMS: &pause, Analysis: true}}},
		Analysis: &model.RolloutAnalysis{IntervalMS: &interval, MinRequests: &minRequests, MaxP99DeltaMS: &p99, OnInconclusive: &goOn},
	}
}

// updateWith updates guid to def with the rollout's own strategy (nil: the defaults).
func (m *Matrix) updateWith(ctx context.Context, guid string, def model.LRPDefinition, strategy *model.RolloutStrategy) error {
	err := write(ctx, func(ctx context.Context) error {
		return m.c.BBS.UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: &def, Strategy: strategy})
	}, model.ErrUpdateInProgress)
	if err != nil {
		return fmt.Errorf("update %s to %s: %w", guid, def.DefinitionID, err)
	}
	return nil
}

// waitSettled waits until every app of want is at rest on its definition (settled).
func (m *Matrix) waitSettled(ctx context.Context, want map[string]string, within time.Duration) error {
	return until(ctx, within, 200*time.Millisecond, func(ctx context.Context) (string, error) {
		all, err := m.c.allInstances(ctx)
		if err != nil {
			return "", err
		}
		var why []string
		for guid, def := range want {
			if ok, reason := settled(all, guid, appSize, def); !ok {
				why = append(why, guid+": "+reason)
			}
		}
		sort.Strings(why)
		return strings.Join(why, "; "), nil
	})
}

// waitRouted waits until the router answers for every app.
func (m *Matrix) waitRouted(ctx context.Context, within time.Duration) error {
	hosts := allHosts()
	return until(ctx, within, 200*time.Millisecond, func(context.Context) (string, error) {
		t := StartTraffic(m.c.RouterURL, hosts, 1)
		time.Sleep(300 * time.Millisecond)
		return describeFailures(t.Stop()), nil
	})
}

// expected is where a trial's signals put an app's rollout: the rollout to definition to
// ends in state, and every instance on def.
type expected struct {
	state, to, def string
}

// allHosts are the hosts of the matrix's apps and the fleet's, which the traffic reaches.
func allHosts() []string {
	var hosts []string
	for _, app := range append(append([]string(nil), matrixApps...), fleetApps...) {
		hosts = append(hosts, host(app))
	}
	return hosts
}

// Run runs one trial with the named faults hitting at once, and says what came of it.
func (m *Matrix) Run(ctx context.Context, faultNames []string) Outcome {
	m.trial++
	o := Outcome{Faults: strings.Join(faultNames, "+")}
	var faults []Fault
	for _, name := range faultNames {
		f, err := FaultByName(name)
		if err != nil {
			o.problem("%v", err)
			return o
		}
		faults = append(faults, f)
	}
	k := m.trial
	m.sampler.Reset()
	traffic := StartTraffic(m.c.RouterURL, allHosts(), 2)
	events := WatchEvents(m.c)
	want, err := m.startRollouts(ctx, k)
	var group string
	if err == nil {
		group, err = m.startGroup(ctx, k, want)
	}
	groupWatch := m.watchGroup(group)
	if err == nil {
		err = m.callbacks.DesireTask(ctx, m.c, fmt.Sprintf("task-%d", k), 3*time.Second)
	}
	if err != nil {
		o.problem("%v", err)
	}

	var hits []*Hit
	for _, f := range faults {
		h, err := m.c.Inject(ctx, f, matrixApps)
		if err != nil {
			o.problem("inject: %v", err)
			continue
		}
		hits = append(hits, h)
		o.Victims = append(o.Victims, h.Process)
	}
	for _, h := range hits {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		after, err := m.c.WaitRestarted(wctx, h)
		cancel()
		if err != nil {
			o.problem("%v", err)
		}
		o.Restarted = max(o.Restarted, after)
	}
	began := time.Now()
	if len(hits) > 0 {
		began = hits[0].At
	}
	if err := m.waitRollouts(ctx, want, 3*time.Minute); err != nil {
		o.problem("%v", err)
	} else {
		o.RolloutsOK = len(want)
	}
	o.Rollouts = len(want)
	// A stop the rollout sent to a cell that was down is sent again by convergence (every
	// 30 s): the instance it retired may wait that long to go.
	if err := m.waitSettled(ctx, defsOf(want), time.Minute); err != nil {
		o.problem("%v", err)
	} else {
		o.Settled = time.Since(began)
	}
	groupWatch.finish(ctx, m, group, &o, time.Minute)
	o.Traffic = traffic.Stop()
	o.Sampled = m.sampler.Result()
	m.checkCallback(ctx, &o, fmt.Sprintf("task-%d", k))
	if o.Orphans, o.Lost, err = m.c.WaitNoOrphans(ctx, 30*time.Second); err != nil {
		o.problem("orphans: %v", err)
	}
	if o.Events, err = events.Stop(ctx, m.c); err != nil {
		o.problem("%v", err)
	}
	o.judge()
	return o
}

func defsOf(want map[string]expected) map[string]string {
	out := map[string]string{}
	for guid, e := range want {
		out[guid] = e.def
	}
	return out
}

// startRollouts updates the first app, updates the second and cancels that update once an
// index has moved, and rolls the third back; it returns where each should end.
func (m *Matrix) startRollouts(ctx context.Context, k int) (map[string]expected, error) {
	roll := webDefinition(m.demo, fmt.Sprintf("%s-v%d", appRoll, k), fmt.Sprintf("v%d", k))
	canceled := webDefinition(m.demo, fmt.Sprintf("%s-v%d", appCancel, k), fmt.Sprintf("v%d", k))
	cancelFrom, err := m.c.activeDefinition(ctx, appCancel)
	if err != nil {
		return nil, err
	}
	back := m.backDefs[1-m.backOn]
	bad := crashingDefinition(m.demo, fmt.Sprintf("%s-bad-v%d", appRevert, k), fmt.Sprintf("v%d", k))
	want := map[string]expected{
		appRoll:   {model.RolloutCompleted, roll.DefinitionID, roll.DefinitionID},
		appCancel: {model.RolloutCanceled, canceled.DefinitionID, cancelFrom},
		appBack:   {model.RolloutCompleted, back, back},
		appRevert: {model.RolloutReverted, bad.DefinitionID, appRevert + "-v0"},
	}
	if err := m.updateWith(ctx, appRoll, roll, rollCanary()); err != nil {
		return want, err
	}
	if err := m.update(ctx, appRevert, bad); err != nil {
		return want, err
	}
	if err := m.update(ctx, appCancel, canceled); err != nil {
		return want, err
	}
	if err := write(ctx, func(ctx context.Context) error { return m.c.BBS.Rollback(ctx, appBack, back) }, model.ErrUpdateInProgress); err != nil {
		return want, fmt.Errorf("roll %s back to %s: %w", appBack, back, err)
	}
	m.backOn = 1 - m.backOn
	if err := m.waitUpdated(ctx, appCancel, time.Minute); err != nil {
		return want, err
	}
	err = write(ctx, func(ctx context.Context) error { return m.c.BBS.CancelUpdate(ctx, appCancel) }, model.ErrNoUpdateInProgress)
	if model.IsType(err, model.ErrNoUpdateInProgress) {
		// The update finished before the cancel arrived: nothing to walk back.
		want[appCancel] = expected{model.RolloutCompleted, canceled.DefinitionID, canceled.DefinitionID}
		m.logf("the update of %s completed before its cancel", appCancel)
		err = nil
	}
	return want, err
}

func (c *Cluster) activeDefinition(ctx context.Context, guid string) (string, error) {
	var d *model.DesiredLRP
	err := retry(ctx, func(ctx context.Context) (err error) {
		d, err = c.BBS.DesiredLRPByProcessGUID(ctx, guid)
		return err
	})
	if err != nil {
		return "", err
	}
	return d.DefinitionID, nil
}

func (c *Cluster) rollout(ctx context.Context, guid string) (*model.Rollout, error) {
	var r *model.Rollout
	err := retry(ctx, func(ctx context.Context) (err error) {
		r, err = c.BBS.Rollout(ctx, guid)
		return err
	})
	return r, err
}

// waitUpdated waits until a rollout of guid has moved an index.
func (m *Matrix) waitUpdated(ctx context.Context, guid string, within time.Duration) error {
	return until(ctx, within, 100*time.Millisecond, func(ctx context.Context) (string, error) {
		r, err := m.c.rollout(ctx, guid)
		if err != nil || r.UpdatedInstances >= 1 || !r.InProgress() {
			return "", err
		}
		return fmt.Sprintf("the rollout of %s has moved no index", guid), nil
	})
}

// waitRollouts waits until every rollout has ended where want says.
func (m *Matrix) waitRollouts(ctx context.Context, want map[string]expected, within time.Duration) error {
	return until(ctx, within, 200*time.Millisecond, func(ctx context.Context) (string, error) {
		var why []string
		for guid, e := range want {
			r, err := m.c.rollout(ctx, guid)
			member := slices.Contains(fleetApps, guid)
			if member && (model.IsType(err, model.ErrResourceNotFound) || (err == nil && r.ToDefinitionID != e.to)) {
				// The group starts its members wave by wave: this one's rollout is to come.
				why = append(why, fmt.Sprintf("%s's rollout to %s has not started", guid, e.to))
				continue
			}
			if err != nil {
				return "", err
			}
			if r.ToDefinitionID != e.to {
				return "", fmt.Errorf("%s's latest rollout goes to %s, not %s", guid, r.ToDefinitionID, e.to)
			}
			if guid == appRoll && r.State == model.RolloutCompleted && (r.TrafficGeneration == 0 || len(r.Analysis) == 0) {
				return "", fmt.Errorf("%s's rollout completed without its weighted step acknowledged (generation %d) or judged (%d verdicts)",
					guid, r.TrafficGeneration, len(r.Analysis))
			}
			if r.State != e.state {
				w := fmt.Sprintf("%s's rollout to %s is %s (want %s) at index %d, %d updated", guid, r.ToDefinitionID, r.State, e.state, r.CurrentIndex, r.UpdatedInstances)
				if !r.InProgress() {
					return "", errors.New(w)
				}
				why = append(why, w)
			}
		}
		sort.Strings(why)
		return strings.Join(why, "; "), nil
	})
}

// checkCallback waits for the trial's task callback, then a little longer for a duplicate.
func (m *Matrix) checkCallback(ctx context.Context, o *Outcome, guid string) {
	deadline := time.Now().Add(time.Minute)
	for m.callbacks.Count(guid) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	o.Callbacks = m.callbacks.Count(guid)
}
