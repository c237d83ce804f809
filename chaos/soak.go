package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// SoakConfig shapes a soak.
type SoakConfig struct {
	// Duration is how long the workload runs (faults included); the soak then waits for
	// everything to come to rest and checks it.
	Duration time.Duration
	// LRPs is how many LRPs it keeps desired (default 200), each of 1 to 4 instances.
	LRPs int
	// FaultEvery is the mean time between faults (default 30 s). Faults are drawn from
	// Faults (default: every one of Faults).
	FaultEvery time.Duration
	Faults     []string
	// Seed makes a run's choices repeatable (0: a random seed, printed).
	Seed uint64
	// Progress receives a line of figures every ProgressEvery (default 30 s).
	Progress      io.Writer
	ProgressEvery time.Duration
}

// SoakResult is what a soak did and saw.
type SoakResult struct {
	Seed     uint64
	Duration time.Duration
	// Requests are the API writes of the workload: desires, scale changes, updates,
	// cancels, rollbacks and removes. Retried are those that met no answer or Unavailable
	// at first (sent again, as a client does); Failed those that never succeeded, or were
	// refused for a reason the driver did not expect.
	Requests, Retried, Failed int
	// Refused are writes the BBS refused as it should (an update while a rollout is under
	// way, a cancel with nothing to cancel): expected, not failures.
	Refused int
	// Ops counts the writes by kind.
	Ops map[string]int
	// Rollouts counts the rollouts by their final state once everything came to rest.
	Rollouts map[string]int
	// Faults are the faults injected, in order.
	Faults []string
	// Sampled is the sampler's view over the whole run.
	Sampled SamplerResult
	// Unsettled are the LRPs not at rest (exactly one instance per index, RUNNING, on the
	// active definition) after the run; Stuck the rollouts still under way then, or failed
	// for another reason than their LRP's removal; Orphans
	// the containers the cells hold that the BBS does not place there.
	Unsettled, Stuck, Orphans []string
	// Problems says what went wrong; none is the bar.
	Problems []string
}

// Violations counts everything that should have been zero.
func (r SoakResult) Violations() int {
	return r.Failed + r.Sampled.Violations + len(r.Unsettled) + len(r.Stuck) + len(r.Orphans)
}

// soak is the state of a running soak: the LRPs the driver desired, as it knows them.
type soak struct {
	c       *Cluster
	cfg     SoakConfig
	rng     *rand.Rand
	sampler *Sampler

	mu     sync.Mutex
	res    SoakResult
	lrps   map[string]*soakLRP
	nextID int
}

type soakLRP struct {
	guid      string
	instances int32
	// defs are its definitions, oldest first; version numbers the next one.
	defs    []string
	version int
}

// Soak runs a mixed workload on a cluster of sim cells for cfg.Duration — desires, scale
// changes, rollouts, cancels, rollbacks and removes over cfg.LRPs LRPs — while faults hit
// at random, sampling the invariant throughout; then it waits for rest and checks every LRP,
// rollout and cell. Sim cells record their instances in their work directories, so that a
// killed sim cell's instances live on and its restarted agent adopts them, as a process
// cell's do.
func Soak(ctx context.Context, c *Cluster, cfg SoakConfig) SoakResult {
	if cfg.LRPs == 0 {
		cfg.LRPs = 200
	}
	if cfg.FaultEvery == 0 {
		cfg.FaultEvery = 30 * time.Second
	}
	if cfg.Faults == nil {
		for _, f := range Faults {
			cfg.Faults = append(cfg.Faults, f.Name)
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 30 * time.Second
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	s := &soak{c: c, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1)), lrps: map[string]*soakLRP{},
		res: SoakResult{Seed: cfg.Seed, Ops: map[string]int{}, Rollouts: map[string]int{}}}
	s.sampler = StartSampler(c.BBS, 500*time.Millisecond)
	fmt.Fprintf(cfg.Progress, "soak: seed %d, %d LRPs, %s, a fault every %s on average from %v\n", cfg.Seed, cfg.LRPs, cfg.Duration, cfg.FaultEvery, cfg.Faults)
	began := time.Now()
	for len(s.lrps) < cfg.LRPs && ctx.Err() == nil {
		s.desire(ctx)
	}
	fmt.Fprintf(cfg.Progress, "soak: %d LRPs desired in %s\n", len(s.lrps), time.Since(began).Round(time.Second))

	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.injectFaults(runCtx) }()
	go func() { defer wg.Done(); s.report(runCtx, began) }()
	for runCtx.Err() == nil {
		s.step(runCtx)
	}
	wg.Wait()
	s.res.Duration = time.Since(began)
	s.finish(ctx)
	s.res.Sampled = s.sampler.Stop()
	return s.res
}

// step does one write of the workload, drawn at random.
func (s *soak) step(ctx context.Context) {
	l := s.pick()
	switch p := s.rng.IntN(100); {
	case l == nil || p < 5:
		s.desire(ctx)
	case p < 10:
		s.remove(ctx, l)
	case p < 35:
		s.scale(ctx, l)
	case p < 70:
		s.update(ctx, l)
	case p < 85:
		s.cancel(ctx, l)
	default:
		s.rollback(ctx, l)
	}
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

func (s *soak) pick() *soakLRP {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lrps) == 0 {
		return nil
	}
	guids := make([]string, 0, len(s.lrps))
	for g := range s.lrps {
		guids = append(guids, g)
	}
	sort.Strings(guids)
	return s.lrps[guids[s.rng.IntN(len(guids))]]
}

// write sends one write of kind, counting it; refused are the error types that mean the BBS
// rightly said no.
func (s *soak) write(ctx context.Context, kind string, fn func(ctx context.Context) error, done []model.ErrorType, refused ...model.ErrorType) bool {
	again, err := retried(ctx, fn)
	if err != nil && again && slices.Contains(done, model.TypeOf(err)) {
		err = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Requests++
	s.res.Ops[kind]++
	if again {
		s.res.Retried++
	}
	switch {
	case err == nil:
		return true
	case slices.Contains(refused, model.TypeOf(err)):
		s.res.Refused++
	case ctx.Err() != nil:
		s.res.Requests-- // cut short by the end of the run, not by the system
		s.res.Ops[kind]--
	default:
		s.res.Failed++
		s.problemLocked("%s: %v", kind, err)
	}
	return false
}

func (s *soak) problemLocked(format string, args ...any) {
	if len(s.res.Problems) < 50 {
		s.res.Problems = append(s.res.Problems, fmt.Sprintf(format, args...))
	}
}

func (s *soak) desire(ctx context.Context) {
	s.mu.Lock()
	s.nextID++
	l := &soakLRP{guid: fmt.Sprintf("soak-%d", s.nextID), instances: 1 + s.rng.Int32N(4), version: 1}
	s.mu.Unlock()
	def := s.definition(l)
	ok := s.write(ctx, "desire", func(ctx context.Context) error {
		return s.c.BBS.DesireLRP(ctx, &model.DesiredLRP{ProcessGUID: l.guid, Domain: "soak", Instances: l.instances, LRPDefinition: def})
	}, []model.ErrorType{model.ErrResourceExists})
	if ok {
		s.mu.Lock()
		s.lrps[l.guid] = l
		s.mu.Unlock()
		s.sampler.Watch(l.guid, l.instances)
	}
}

// definition is l's next definition: sim instances that take 0.2–1 s to start, so that
// rollouts last a few seconds.
func (s *soak) definition(l *soakLRP) model.LRPDefinition {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("%s-v%d", l.guid, l.version)
	l.version++
	return simDefinition(id, time.Duration(200+s.rng.IntN(800))*time.Millisecond)
}

func (s *soak) remove(ctx context.Context, l *soakLRP) {
	s.sampler.Forget(l.guid)
	s.mu.Lock()
	delete(s.lrps, l.guid)
	s.mu.Unlock()
	s.write(ctx, "remove", func(ctx context.Context) error { return s.c.BBS.RemoveDesiredLRP(ctx, l.guid) },
		[]model.ErrorType{model.ErrResourceNotFound})
}

func (s *soak) scale(ctx context.Context, l *soakLRP) {
	n := 1 + s.rng.Int32N(5)
	if n < l.instances {
		s.sampler.Watch(l.guid, n) // the indices given up are no longer owed
	}
	if s.write(ctx, "scale", func(ctx context.Context) error {
		return s.c.BBS.UpdateDesiredLRP(ctx, l.guid, &model.DesiredLRPUpdate{Instances: &n})
	}, nil) {
		s.mu.Lock()
		l.instances = n
		s.mu.Unlock()
	}
	s.sampler.Watch(l.guid, n)
}

func (s *soak) update(ctx context.Context, l *soakLRP) {
	def := s.definition(l)
	if s.write(ctx, "update", func(ctx context.Context) error {
		return s.c.BBS.UpdateDesiredLRP(ctx, l.guid, &model.DesiredLRPUpdate{Definition: &def})
	}, []model.ErrorType{model.ErrUpdateInProgress, model.ErrResourceExists}, model.ErrUpdateInProgress) {
		s.mu.Lock()
		l.defs = append(l.defs, def.DefinitionID)
		s.mu.Unlock()
	}
}

func (s *soak) cancel(ctx context.Context, l *soakLRP) {
	s.write(ctx, "cancel", func(ctx context.Context) error { return s.c.BBS.CancelUpdate(ctx, l.guid) },
		[]model.ErrorType{model.ErrNoUpdateInProgress}, model.ErrNoUpdateInProgress)
}

// rollback rolls l back to its first definition, or to one it updated to since.
func (s *soak) rollback(ctx context.Context, l *soakLRP) {
	s.mu.Lock()
	target := l.guid + "-v1"
	if len(l.defs) > 1 {
		target = l.defs[s.rng.IntN(len(l.defs)-1)]
	}
	s.mu.Unlock()
	// ResourceNotFound: a definition beyond the history kept (pruned), or never stored (its
	// update refused).
	s.write(ctx, "rollback", func(ctx context.Context) error { return s.c.BBS.Rollback(ctx, l.guid, target) },
		[]model.ErrorType{model.ErrUpdateInProgress}, model.ErrUpdateInProgress, model.ErrResourceNotFound, model.ErrInvalidRequest)
}

// injectFaults hits a random fault at random times (exponentially distributed gaps) and
// waits for its restart before the next.
func (s *soak) injectFaults(ctx context.Context) {
	for {
		gap := time.Duration(s.rng.ExpFloat64() * float64(s.cfg.FaultEvery))
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		f, err := FaultByName(s.cfg.Faults[s.rng.IntN(len(s.cfg.Faults))])
		if err != nil {
			s.mu.Lock()
			s.problemLocked("%v", err)
			s.mu.Unlock()
			return
		}
		h, err := s.c.Inject(ctx, f, nil)
		s.mu.Lock()
		if err != nil {
			s.problemLocked("inject %s: %v", f.Name, err)
		} else {
			s.res.Faults = append(s.res.Faults, f.Name)
		}
		s.mu.Unlock()
		if err == nil {
			wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if _, err := s.c.WaitRestarted(wctx, h); err != nil {
				s.mu.Lock()
				s.problemLocked("%v", err)
				s.mu.Unlock()
			}
			cancel()
		}
	}
}

// report prints the figures every ProgressEvery.
func (s *soak) report(ctx context.Context, began time.Time) {
	t := time.NewTicker(s.cfg.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		r := s.res
		lrps := len(s.lrps)
		s.mu.Unlock()
		sm := s.sampler.Result()
		fmt.Fprintf(s.cfg.Progress, "soak %s: %d LRPs; requests %d (%d retried, %d refused, %d failed); faults %d; samples %d (%d unsampled), %d below desired\n",
			time.Since(began).Round(time.Second), lrps, r.Requests, r.Retried, r.Refused, r.Failed, len(r.Faults), sm.Samples, sm.Unsampled, sm.Violations)
	}
}

// finish waits for every rollout to end and every LRP to come to rest, then records what is
// not.
func (s *soak) finish(ctx context.Context) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		stuck, unsettled, err := s.atRest(ctx)
		if err == nil && len(stuck)+len(unsettled) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			s.mu.Lock()
			s.res.Stuck, s.res.Unsettled = stuck, unsettled
			if err != nil {
				s.problemLocked("at rest: %v", err)
			}
			s.mu.Unlock()
			break
		}
		time.Sleep(time.Second)
	}
	orphans, err := s.c.CellOrphans(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Orphans = orphans
	if err != nil {
		s.problemLocked("cells: %v", err)
	}
}

// atRest lists the rollouts still under way and the LRPs not at rest on their active
// definition, and counts the rollouts by state.
func (s *soak) atRest(ctx context.Context) (stuck, unsettled []string, err error) {
	var rollouts []model.Rollout
	var desired []*model.DesiredLRP
	var all []model.ActualLRP
	err = retry(ctx, func(ctx context.Context) (err error) {
		if rollouts, err = s.c.BBS.Rollouts(ctx, model.RolloutFilter{}); err != nil {
			return err
		}
		if desired, err = s.c.BBS.DesiredLRPs(ctx, model.DesiredLRPFilter{Domain: "soak"}); err != nil {
			return err
		}
		all, err = s.c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{Domain: "soak"})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int{}
	for _, r := range rollouts {
		counts[r.State]++
		// A rollout fails only when its LRP is removed under it, which the workload does.
		if r.InProgress() || (r.State == model.RolloutFailed && r.Reason != "the LRP was removed") {
			stuck = append(stuck, fmt.Sprintf("%s to %s %s at index %d (%s)", r.ProcessGUID, r.ToDefinitionID, r.State, r.CurrentIndex, r.Reason))
		}
	}
	for _, d := range desired {
		if ok, why := settled(all, d.ProcessGUID, d.Instances, d.DefinitionID); !ok {
			unsettled = append(unsettled, d.ProcessGUID+": "+why)
		}
	}
	s.mu.Lock()
	s.res.Rollouts = counts
	s.mu.Unlock()
	sort.Strings(stuck)
	sort.Strings(unsettled)
	return stuck, unsettled, nil
}

// WriteSoak prints a soak's figures.
func WriteSoak(w io.Writer, r SoakResult) {
	fmt.Fprintf(w, "soak of %s (seed %d)\n", r.Duration.Round(time.Second), r.Seed)
	fmt.Fprintf(w, "  requests    %d writes (%s): %d retried after no answer or Unavailable, %d refused as they should be, %d failed\n",
		r.Requests, countsString(r.Ops), r.Retried, r.Refused, r.Failed)
	fmt.Fprintf(w, "  rollouts    %s\n", countsString(r.Rollouts))
	faults := map[string]int{}
	for _, f := range r.Faults {
		faults[f]++
	}
	fmt.Fprintf(w, "  faults      %d (%s)\n", len(r.Faults), countsString(faults))
	fmt.Fprintf(w, "  samples     %d (%d unsampled: API unavailable), %d with an owed index below its desired count\n",
		r.Sampled.Samples, r.Sampled.Unsampled, r.Sampled.Violations)
	fmt.Fprintf(w, "  at rest     %d LRPs not at rest, %d rollouts still under way, %d containers no instance accounts for\n",
		len(r.Unsettled), len(r.Stuck), len(r.Orphans))
	fmt.Fprintf(w, "  violations  %d\n", r.Violations())
	for _, list := range [][]string{r.Problems, exampleStrings(r.Sampled.Examples), first(r.Unsettled), first(r.Stuck), first(r.Orphans)} {
		for _, p := range list {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func exampleStrings(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func first(list []string) []string {
	if len(list) > 10 {
		return append(list[:10:10], fmt.Sprintf("… and %d more", len(list)-10))
	}
	return list
}
