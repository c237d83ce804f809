package workflows_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaltest"
	bbsworker "github.com/updatable-lrps/bbs/worker"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.uber.org/zap/zaptest"
)

// rolloutHistoryFile is the first RolloutWorkflow history recorded (a walk paused, resumed and
// superseded, on a real dev server, by BBS_RECORD_HISTORY=1 go test ./workflows/ -run
// RolloutOnDevServer). Keep it as it is: new histories go into a set of their own
// (TestRecordRolloutHistories), so that every version's keep replaying.
const rolloutHistoryFile = "testdata/rollout_history.json"

// Replaying recorded histories proves the workflow code still makes the same decisions:
// rollout_history.json and every set under testdata/rollout (TestRecordRolloutHistories),
// each file a subtest. Beyond the commands a replay checks, each call the workflow makes
// (with its input), its search attributes and its output must match the golden file
// recorded next to the history (replayCalls).
func TestRolloutWorkflowReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(rolloutHistoryDir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append([]string{rolloutHistoryFile}, files...) {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(file), "testdata/"), ".json")
		t.Run(name, func(t *testing.T) {
			checkCalls(t, file, replayCalls(t, file))
		})
	}
}

// memStore is an LRP in memory whose instances a pretend cell starts after a delay.
type memStore struct {
	mu        sync.Mutex
	instances int32
	healthy   string
	lrps      map[string]model.ActualLRP // definition/index
	states    map[string]string          // rollout id → state
	progress  map[string]model.RolloutProgress
	startIn   time.Duration
	waiter    *memWaiter
	// hang are the slots (definition/index) whose instance never starts: a flaky index.
	hang map[string]bool
	// crash are the slots whose instance crash-loops: it ends CRASHED after three crashes.
	crash map[string]bool
	// runs are the index runs by rollout id (db/rollout_run.go's fenced steps, in memory).
	runs map[string]*memRun
	// splits are the traffic splits set, in order; every router acknowledges at once.
	splits []model.TrafficSplit
	// failWindow is the analysis window whose canary answers 10 % 500s.
	failWindow string
	// freeze is the fleet's freeze, windows the rollout windows, strategies the rollouts'
	// strategies by id (nil: none).
	freeze     model.RolloutFreeze
	windows    map[string]*model.RolloutWindow
	strategies map[string]*model.RolloutStrategy
}

func (m *memStore) FreezeState(context.Context) (model.RolloutFreeze, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.freeze, nil
}

func (m *memStore) RolloutWindow(_ context.Context, name string) (*model.RolloutWindow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.windows[name]; w != nil {
		return w, nil
	}
	return nil, model.Errorf(model.ErrResourceNotFound, "rollout window %q not found", name)
}

type memRun struct {
	opened, stopped int
	fence           int64
	attempt         int32
	state           db.RunState
}

func slot(def string, i int32) string { return fmt.Sprintf("%s/%d", def, i) }

func (m *memStore) RolloutByID(_ context.Context, id string) (*model.Rollout, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[id]
	if st == "" {
		st = model.RolloutActive
	}
	return &model.Rollout{ID: id, ProcessGUID: "app", State: st, Strategy: m.strategies[id]}, nil
}

// StartRollout records a rollback as a new rollout row (the rollback signal's path).
func (m *memStore) StartRollout(_ context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.DefinitionID == "pruned" {
		return nil, model.Errorf(model.ErrResourceNotFound, "no definition %q", req.DefinitionID)
	}
	id := fmt.Sprintf("rollback-%d", len(m.states))
	m.states[id] = model.RolloutActive
	return &db.RolloutStart{Rollout: &model.Rollout{ID: id, ProcessGUID: req.ProcessGUID, Kind: req.Kind,
		FromDefinitionID: "def1", ToDefinitionID: req.DefinitionID, State: model.RolloutActive}}, nil
}

func (m *memStore) DesiredInstances(context.Context, string) (int32, string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.instances, m.healthy, true, nil
}

func (m *memStore) DesireInstance(_ context.Context, guid, def string, i int32) (*model.ActualLRP, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.lrps[slot(def, i)]; ok {
		return &a, nil
	}
	a := model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: guid, DefinitionID: def, Index: i}, State: model.StateUnclaimed}
	m.lrps[slot(def, i)] = a
	if m.hang[slot(def, i)] {
		return &a, nil
	}
	time.AfterFunc(m.startIn, func() {
		m.mu.Lock()
		if a, ok := m.lrps[slot(def, i)]; ok && m.crash[slot(def, i)] {
			a.State, a.CrashCount, a.CrashReason = model.StateCrashed, 3, `exit status 1; last output: "boom"`
			m.lrps[slot(def, i)] = a
		} else if ok {
			a.State = model.StateRunning
			m.lrps[slot(def, i)] = a
			m.healthy = def
		}
		m.mu.Unlock()
		m.waiter.change()
	})
	return &a, nil
}

func (m *memStore) Instance(_ context.Context, _, def string, i int32) (*model.ActualLRP, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.lrps[slot(def, i)]; ok {
		return &a, nil
	}
	return nil, model.Errorf(model.ErrResourceNotFound, "no instance %s", slot(def, i))
}

func (m *memStore) retire(match func(model.ActualLRP) bool) []model.ActualLRP {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []model.ActualLRP
	for _, k := range slices.Sorted(maps.Keys(m.lrps)) {
		if a := m.lrps[k]; match(a) {
			delete(m.lrps, k)
			out = append(out, a)
		}
	}
	return out
}

func (m *memStore) RetireOthers(_ context.Context, _, keep string, i int32) ([]model.ActualLRP, error) {
	return m.retire(func(a model.ActualLRP) bool { return a.Index == i && a.DefinitionID != keep }), nil
}

func (m *memStore) RetireInstance(_ context.Context, _, def string, i int32) ([]model.ActualLRP, error) {
	return m.retire(func(a model.ActualLRP) bool { return a.Index == i && a.DefinitionID == def }), nil
}

func (m *memStore) IndicesOff(_ context.Context, _, def string) ([]int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for _, a := range m.lrps {
		if a.DefinitionID != def && a.Index < m.instances && !slices.Contains(out, a.Index) {
			out = append(out, a.Index)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *memStore) RecordRolloutProgress(_ context.Context, id string, p model.RolloutProgress) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.progress[id] = p
	return nil
}

func (m *memStore) RecordRolloutState(_ context.Context, id, state, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.progress[id]
	p.State = state
	m.progress[id] = p
	return nil
}

func (m *memStore) run(id string) *memRun {
	if m.runs == nil {
		m.runs = map[string]*memRun{}
	}
	if m.runs[id] == nil {
		m.runs[id] = &memRun{state: db.RunState{Index: -1, Limit: -1}}
	}
	return m.runs[id]
}

func (m *memStore) OpenRun(_ context.Context, id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(id)
	r.opened++
	r.fence++
	r.attempt = 0
	r.state = db.RunState{Index: -1, Limit: -1}
	return r.fence, nil
}

func (m *memStore) StopRun(_ context.Context, id string) (db.RunState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(id)
	r.stopped++
	r.fence++
	return r.state, nil
}

func (m *memStore) TakeRun(_ context.Context, h db.RunHold) (db.RunState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(h.RolloutID)
	if r.fence != h.Fence || r.attempt > h.Attempt {
		return db.RunState{}, db.ErrRunFenced
	}
	r.attempt = h.Attempt
	return r.state, nil
}

// runCounts counts the index runs opened and the StopRun calls, over every rollout.
func (m *memStore) runCounts() (opened, stopped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		opened += r.opened
		stopped += r.stopped
	}
	return opened, stopped
}

func (m *memStore) HoldsRun(_ context.Context, h db.RunHold) (bool, int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(h.RolloutID)
	return r.fence == h.Fence && r.attempt == h.Attempt, r.state.Limit, nil
}

func (m *memStore) SetRunLimit(_ context.Context, id string, fence int64, limit int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.run(id); r.fence == fence {
		r.state.Limit = limit
	}
	return nil
}

func (m *memStore) StopRunRetiring(ctx context.Context, id, guid, def string) (db.RunState, []model.ActualLRP, error) {
	st, _ := m.StopRun(ctx, id)
	var stop []model.ActualLRP
	for _, i := range st.InFlight {
		retired, _ := m.RetireInstance(ctx, guid, def, i)
		stop = append(stop, retired...)
	}
	return st, stop, nil
}

// AdvanceRun is db.Store.AdvanceRun in memory; holding the lock throughout, as the
// transaction holds the row.
func (m *memStore) AdvanceRun(ctx context.Context, h db.RunHold, a db.RunAdvance) (*db.RunAdvanced, error) {
	m.mu.Lock()
	r := m.run(h.RolloutID)
	if r.fence != h.Fence || r.attempt != h.Attempt {
		m.mu.Unlock()
		return nil, db.ErrRunFenced
	}
	out := &db.RunAdvanced{Exists: true, Instances: m.instances}
	st := r.state
	st.InFlight = slices.Clone(st.InFlight)
	m.mu.Unlock()
	drop := func(i int32) { st.InFlight = slices.DeleteFunc(st.InFlight, func(x int32) bool { return x == i }) }
	for _, d := range a.Decided {
		drop(d.Index)
		var stop []model.ActualLRP
		switch d.Outcome {
		case model.StepUpdated:
			stop, _ = m.RetireOthers(ctx, a.ProcessGUID, a.DefinitionID, d.Index)
			if !slices.Contains(st.Updated, d.Index) {
				st.Updated = append(slices.Clone(st.Updated), d.Index)
				slices.Sort(st.Updated)
			}
		default:
			stop, _ = m.RetireInstance(ctx, a.ProcessGUID, a.DefinitionID, d.Index)
			if d.Outcome == model.StepGivenUp {
				st.GivenUp = append(slices.Clone(st.GivenUp), d.Index)
			}
		}
		out.ToStop = append(out.ToStop, stop...)
	}
	for _, i := range a.Interrupt {
		drop(i)
		stop, _ := m.RetireInstance(ctx, a.ProcessGUID, a.DefinitionID, i)
		out.ToStop = append(out.ToStop, stop...)
	}
	for _, i := range a.Next {
		if i < out.Instances {
			_, _ = m.DesireInstance(ctx, a.ProcessGUID, a.DefinitionID, i)
			if !slices.Contains(st.InFlight, i) {
				st.InFlight = append(st.InFlight, i)
				slices.Sort(st.InFlight)
			}
		}
	}
	st.Index = -1
	if len(st.InFlight) > 0 {
		st.Index = st.InFlight[0]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r.state = st
	out.Run = st
	p := m.progress[h.RolloutID]
	p.UpdatedInstances = 0
	if !a.Back {
		p.UpdatedInstances = int32(len(st.Updated))
	}
	for _, i := range a.Before {
		if !slices.Contains(st.Updated, i) {
			p.UpdatedInstances++
		}
	}
	p.Instances = m.instances
	m.progress[h.RolloutID] = p
	return out, nil
}

func (m *memStore) BeginCancel(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states[id] = model.RolloutCanceling
	return nil
}

func (m *memStore) FinishRollout(_ context.Context, id, state, _ string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !model.RolloutInProgress(m.states[id]) {
		return false, nil
	}
	m.states[id] = state
	return true, nil
}

func (m *memStore) CompleteRollout(_ context.Context, id string, p model.RolloutProgress, state string, _ []string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !model.RolloutInProgress(m.states[id]) {
		return false, nil
	}
	m.progress[id] = p
	m.states[id] = state
	return true, nil
}

func (m *memStore) PruneDefinition(_ context.Context, _, def string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.lrps {
		if a.DefinitionID == def {
			return false, nil
		}
	}
	return true, nil
}

func (m *memStore) SetTraffic(_ context.Context, _ string, weights map[string]int32) (model.TrafficSplit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	split := model.TrafficSplit{ProcessGUID: "app", Generation: int64(len(m.splits) + 1), Weights: weights}
	m.splits = append(m.splits, split)
	return split, nil
}

func (m *memStore) TrafficWaiting(context.Context, string, int64, time.Duration) ([]string, error) {
	return nil, nil
}

func (m *memStore) RecordTrafficAcked(context.Context, string, model.TrafficSplit) error { return nil }

// RoutableCounts counts the RUNNING instances by definition.
func (m *memStore) RoutableCounts(context.Context, string) (map[string]int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int32{}
	for _, a := range m.lrps {
		if a.State == model.StateRunning && !a.Retiring {
			out[a.DefinitionID]++
		}
	}
	return out, nil
}

// TakeAnalysisMark and AnalysisWindow measure a healthy canary — every window passes — but
// in the window failWindow ends, where it answers 10 % 500s.
func (m *memStore) TakeAnalysisMark(context.Context, string, string, string) (int64, error) {
	return 1, nil
}

func (m *memStore) AnalysisWindow(_ context.Context, _, _, _, _, to string) (db.AnalysisWindow, error) {
	side := model.AnalysisSide{Requests: 1000, P50MS: 2, P99MS: 5, Instances: 1}
	w := db.AnalysisWindow{Canary: side, Baseline: side}
	m.mu.Lock()
	defer m.mu.Unlock()
	if to == m.failWindow {
		w.Canary.ErrorRate = 0.1
	}
	return w, nil
}

func (m *memStore) RecordVerdict(context.Context, string, model.AnalysisVerdict) error { return nil }

func (m *memStore) defs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.lrps)) {
		out = append(out, k+" "+m.lrps[k].State)
	}
	return out
}

// memWaiter broadcasts the pretend cell's changes.
type memWaiter struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (w *memWaiter) Changes(context.Context, string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}
}

func (w *memWaiter) change() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// The real activities over an in-memory store, on a real dev server: a walk is paused,
// resumed, then superseded by def3, and ends with def3 at every index.
func TestRolloutOnDevServer(t *testing.T) {
	c := temporaltest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waiter := &memWaiter{subs: map[chan struct{}]struct{}{}}
	store := &memStore{instances: 3, healthy: "def1", lrps: map[string]model.ActualLRP{}, states: map[string]string{},
		progress: map[string]model.RolloutProgress{}, startIn: 50 * time.Millisecond, waiter: waiter}
	for i := range int32(3) {
		store.lrps[slot("def1", i)] = model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "def1", Index: i}, State: model.StateRunning}
	}
	w := bbsworker.New(c, "test-rollouts", bbsworker.Deps{RolloutStore: store, Waiter: waiter, Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	in := workflows.RolloutInput{RolloutID: "r1", ProcessGUID: "app", Domain: "cf-apps", FromDefinitionID: "def1",
		ToDefinitionID: "def2", Kind: model.RolloutKindUpdate}
	runID, err := workflows.StartRollout(ctx, c, "test-rollouts", in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := workflows.StartRollout(ctx, c, "test-rollouts", in)
	if err != nil || again != runID {
		t.Fatalf("second start: run %q (first %q), %v", again, runID, err)
	}
	if err := workflows.SignalRollout(ctx, c, "app", workflows.SignalPause); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	v, err := c.QueryWorkflow(ctx, model.RolloutWorkflowID("app"), "", workflows.QueryProgress)
	if err != nil {
		t.Fatal(err)
	}
	var p workflows.RolloutProgress
	if err := v.Get(&p); err != nil || p.State != model.RolloutPaused {
		t.Fatalf("progress while paused = %+v, %v", p, err)
	}
	if err := workflows.SignalRollout(ctx, c, "app", workflows.SignalResume); err != nil {
		t.Fatal(err)
	}
	for store.progressOf("r1").UpdatedInstances < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	sup := in
	sup.RolloutID, sup.ToDefinitionID = "r2", "def3"
	if err := workflows.SupersedeRollout(ctx, c, "test-rollouts", sup); err != nil {
		t.Fatal(err)
	}
	var out workflows.RolloutOutput
	if err := c.GetWorkflow(ctx, model.RolloutWorkflowID("app"), runID).Get(ctx, &out); err != nil {
		t.Fatalf("rollout: %v", err)
	}
	if out.State != model.RolloutCompleted || out.RolloutID != "r2" || !slices.Equal(out.Updated, []int32{0, 1, 2}) {
		t.Fatalf("output %+v", out)
	}
	want := []string{"def3/0 RUNNING", "def3/1 RUNNING", "def3/2 RUNNING"}
	if got := store.defs(); !slices.Equal(got, want) {
		t.Fatalf("instances %q, want %q", got, want)
	}
	if os.Getenv("BBS_RECORD_HISTORY") != "" {
		recordHistory(ctx, t, c, model.RolloutWorkflowID("app"), runID, rolloutHistoryFile)
	}
}

func (m *memStore) progressOf(id string) model.RolloutProgress {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.progress[id]
}
