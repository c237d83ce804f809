package activities_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap/zaptest"
)

// fakeRolloutStore is one LRP's instances in memory.
type fakeRolloutStore struct {
	activities.RolloutStore // nil: the index-run steps are tested on the real store (rollout_run_test.go)

	mu        sync.Mutex
	instances int32
	exists    bool
	lrps      map[string]*model.ActualLRP // definition id + index
	checks    int
	desireErr error
	toStop    []model.ActualLRP
	ended     bool // FinishRollout was called
}

func newFakeRolloutStore(instances int32) *fakeRolloutStore {
	return &fakeRolloutStore{instances: instances, exists: true, lrps: map[string]*model.ActualLRP{}}
}

func key(def string, index int32) string { return def + "/" + string(rune('0'+index)) }

func (f *fakeRolloutStore) set(def string, index int32, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lrps[key(def, index)] = &model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "app", DefinitionID: def, Index: index}, State: state}
}

func (f *fakeRolloutStore) RolloutByID(_ context.Context, id string) (*model.Rollout, error) {
	return &model.Rollout{ID: id, State: model.RolloutActive}, nil
}

func (f *fakeRolloutStore) DesiredInstances(context.Context, string) (int32, string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.instances, "def1", f.exists, nil
}

func (f *fakeRolloutStore) DesireInstance(_ context.Context, _, def string, index int32) (*model.ActualLRP, error) {
	if f.desireErr != nil {
		return nil, f.desireErr
	}
	f.set(def, index, model.StateUnclaimed)
	return &model.ActualLRP{State: model.StateUnclaimed}, nil
}

func (f *fakeRolloutStore) Instance(_ context.Context, _, def string, index int32) (*model.ActualLRP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	a, ok := f.lrps[key(def, index)]
	if !ok {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance")
	}
	c := *a
	return &c, nil
}

func (f *fakeRolloutStore) RetireOthers(context.Context, string, string, int32) ([]model.ActualLRP, error) {
	return f.toStop, nil
}

func (f *fakeRolloutStore) RetireInstance(context.Context, string, string, int32) ([]model.ActualLRP, error) {
	return f.toStop, nil
}

func (f *fakeRolloutStore) IndicesOff(context.Context, string, string) ([]int32, error) {
	return nil, nil
}

func (f *fakeRolloutStore) RecordRolloutProgress(context.Context, string, model.RolloutProgress) error {
	return nil
}
func (f *fakeRolloutStore) BeginCancel(context.Context, string) error { return nil }
func (f *fakeRolloutStore) FinishRollout(context.Context, string, string, string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := !f.ended
	f.ended = true
	return first, nil
}
func (f *fakeRolloutStore) CompleteRollout(ctx context.Context, id string, _ model.RolloutProgress, state string, _ []string) (bool, error) {
	return f.FinishRollout(ctx, id, state, "")
}
func (f *fakeRolloutStore) StartRollout(context.Context, db.RolloutRequest) (*db.RolloutStart, error) {
	return nil, model.Errorf(model.ErrInvalidRequest, "not in this fake")
}

func (f *fakeRolloutStore) PruneDefinition(context.Context, string, string) (bool, error) {
	return true, nil
}

func (f *fakeRolloutStore) checkCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

// fakeWaiter wakes its subscribers when told to.
type fakeWaiter struct {
	mu   sync.Mutex
	subs []chan struct{}
}

func (w *fakeWaiter) Changes(context.Context, string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs = append(w.subs, ch)
	w.mu.Unlock()
	return ch, func() {}
}

func (w *fakeWaiter) change() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *fakeWaiter) subscribed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs) > 0
}

type awaitRun struct {
	out        activities.AwaitRunningOutput
	err        error
	heartbeats int
}

func await(t *testing.T, r *activities.Rollouts, in activities.AwaitRunningInput, details any) awaitRun {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(r)
	var mu sync.Mutex
	var res awaitRun
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
		mu.Lock()
		res.heartbeats++
		mu.Unlock()
	})
	if details != nil {
		env.SetHeartbeatDetails(details)
	}
	val, err := env.ExecuteActivity(r.AwaitRunning, in)
	res.err = err
	if err == nil {
		if err := val.Get(&res.out); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

var def2At0 = activities.AwaitRunningInput{ProcessGUID: "app", DefinitionID: "def2", Index: 0}

func TestAwaitRunningReturnsAtOnceWhenRunning(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateRunning)
	r := &activities.Rollouts{Store: s, Waiter: &fakeWaiter{}, Log: zaptest.NewLogger(t), SafetyTick: time.Hour}
	start := time.Now()
	res := await(t, r, def2At0, nil)
	if res.err != nil || !res.out.Running || time.Since(start) > time.Second {
		t.Fatalf("got %+v after %v", res, time.Since(start))
	}
	// An index that runs at once costs the server no heartbeat.
	if res.heartbeats != 0 {
		t.Fatalf("%d heartbeats for an instance already running", res.heartbeats)
	}
}

// A change wakes the wait at once; the safety tick (an hour here) plays no part.
func TestAwaitRunningIsWokenByAChange(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateClaimed)
	waiter := &fakeWaiter{}
	r := &activities.Rollouts{Store: s, Waiter: waiter, Log: zaptest.NewLogger(t), SafetyTick: time.Hour}
	go func() {
		for !waiter.subscribed() || s.checkCount() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		waiter.change() // an unrelated change: checks once, keeps waiting
		time.Sleep(50 * time.Millisecond)
		s.set("def2", 0, model.StateRunning)
		waiter.change()
	}()
	start := time.Now()
	res := await(t, r, def2At0, nil)
	if res.err != nil || !res.out.Running {
		t.Fatalf("got %+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	if n := s.checkCount(); n != 3 {
		t.Fatalf("%d checks, want 3 (start, unrelated change, the start): waits must not poll", n)
	}
}

func TestAwaitRunningGivesUpAfterTheDeadline(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateCrashed)
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: 20 * time.Millisecond}
	in := def2At0
	in.Deadline = 150 * time.Millisecond
	start := time.Now()
	res := await(t, r, in, nil)
	if res.err != nil || !res.out.GivenUp || res.out.Reason == "" {
		t.Fatalf("got %+v", res)
	}
	if d := time.Since(start); d < in.Deadline || d > 2*time.Second {
		t.Fatalf("gave up after %v, deadline %v", d, in.Deadline)
	}
	if res.heartbeats != 0 {
		t.Fatalf("%d heartbeats in a wait shorter than a second", res.heartbeats)
	}
}

// A wait that lasts beyond a second heartbeats (with the first attempt's start, for a retry).
func TestAwaitRunningHeartbeatsALongWait(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateCrashed)
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: 100 * time.Millisecond}
	in := def2At0
	in.Deadline = 1500 * time.Millisecond
	res := await(t, r, in, nil)
	if res.err != nil || !res.out.GivenUp {
		t.Fatalf("got %+v", res)
	}
	if res.heartbeats == 0 { // the SDK throttles the rest
		t.Fatal("no heartbeat in a wait of 1.5 s")
	}
}

// A retried attempt keeps the first attempt's start, found in the heartbeat details.
func TestAwaitRunningDeadlineSurvivesARetry(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateUnclaimed)
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), SafetyTick: time.Hour}
	in := def2At0
	in.Deadline = time.Minute
	res := await(t, r, in, map[string]any{"since": time.Now().Add(-time.Hour).UnixNano()})
	if res.err != nil || !res.out.GivenUp {
		t.Fatalf("got %+v", res)
	}
}

func TestAwaitRunningWithoutTheInstance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exists    bool
		instances int32
		want      activities.AwaitRunningOutput
		notFound  bool
	}{
		{"missing", true, 3, activities.AwaitRunningOutput{Missing: true}, false},
		{"scaled below the index", true, 0, activities.AwaitRunningOutput{Beyond: true}, false},
		{"LRP removed", false, 3, activities.AwaitRunningOutput{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeRolloutStore(tc.instances)
			s.exists = tc.exists
			r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t)}
			res := await(t, r, def2At0, nil)
			if tc.notFound {
				var appErr *temporal.ApplicationError
				if !errors.As(res.err, &appErr) || appErr.Type() != string(model.ErrResourceNotFound) || !appErr.NonRetryable() {
					t.Fatalf("error = %v, want a non-retryable ResourceNotFound", res.err)
				}
				return
			}
			if res.err != nil || res.out != tc.want {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

func TestRolloutActivitiesDoNotRetryWhatCannotSucceed(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.desireErr = model.Errorf(model.ErrInvalidRequest, "bad definition id")
	r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t)}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(r)
	_, err := env.ExecuteActivity(r.DesireInstance, activities.InstanceInput{ProcessGUID: "app", DefinitionID: "def2"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != string(model.ErrInvalidRequest) {
		t.Fatalf("error = %v", err)
	}
}

// A failed stop request does not fail the retirement: convergence asks the cells again.
func TestRetireOthersSurvivesAFailedStop(t *testing.T) {
	s := newFakeRolloutStore(3)
	s.toStop = []model.ActualLRP{{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "def1"}, State: model.StateRunning}}
	stopper := &fakeStopper{err: errors.New("cell unreachable")}
	r := &activities.Rollouts{Store: s, Stopper: stopper, Log: zaptest.NewLogger(t)}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(r)
	val, err := env.ExecuteActivity(r.RetireOthers, activities.RetireOthersInput{ProcessGUID: "app", Keep: "def2"})
	if err != nil {
		t.Fatal(err)
	}
	var out activities.RetireOutput
	if err := val.Get(&out); err != nil || out.ToStop != 1 || !out.StopFailed || len(stopper.got) != 1 {
		t.Fatalf("out %+v, stops %v, %v", out, stopper.got, err)
	}
}

// One listening connection serves every wait, and each subscriber gets one coalesced wake-up.
func TestPGWaiterFansOutOneListener(t *testing.T) {
	store := dbtest.NewStore(t)
	w := activities.NewPGWaiter(store.Notifications())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const n = 200
	chans := make([]<-chan struct{}, n)
	stops := make([]func(), n)
	for i := range n {
		chans[i], stops[i] = w.Changes(ctx, "app")
	}
	// The listener connects in the background: notify until the first subscriber hears.
	for {
		for range 5 {
			if _, err := store.DB().ExecContext(ctx, `SELECT pg_notify('bbs_lrp_changes', 'app')`); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-chans[0]:
		case <-time.After(100 * time.Millisecond):
			if ctx.Err() != nil {
				t.Fatal("no notification arrived")
			}
			continue
		}
		break
	}
	for i := 1; i < n; i++ {
		select {
		case <-chans[i]:
		case <-ctx.Done():
			t.Fatalf("subscriber %d never woke", i)
		}
	}
	// Coalesced: however many notifications came, at most one wake-up is pending.
	time.Sleep(100 * time.Millisecond)
	for i := range n {
		select {
		case <-chans[i]:
		default:
		}
		select {
		case <-chans[i]:
			t.Fatalf("subscriber %d had two wake-ups pending", i)
		default:
		}
	}
	var listeners int
	if err := store.DB().GetContext(ctx, &listeners, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND query ILIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Fatalf("%d listening connections for %d waits, want 1", listeners, n)
	}
	for _, stop := range stops[:n/2] {
		stop()
	}
	cancel() // the rest end with their context
	deadline := time.Now().Add(5 * time.Second)
	for w.Subscribers() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := w.Subscribers(); got != 0 {
		t.Fatalf("%d subscribers left", got)
	}
}

// Another LRP's changes do not wake a wait.
func TestPGWaiterWakesOnlyTheChangedLRP(t *testing.T) {
	store := dbtest.NewStore(t)
	w := activities.NewPGWaiter(store.Notifications())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mine, stopMine := w.Changes(ctx, "app")
	defer stopMine()
	other, stopOther := w.Changes(ctx, "other")
	defer stopOther()
	for {
		if _, err := store.DB().ExecContext(ctx, `INSERT INTO events (name, data) VALUES ('desired_lrp_created', '{"process_guid": "other"}')`); err != nil {
			t.Fatal(err)
		}
		select {
		case <-other:
		case <-time.After(100 * time.Millisecond):
			if ctx.Err() != nil {
				t.Fatal("no notification arrived")
			}
			continue
		}
		break
	}
	select {
	case <-mine:
		t.Fatal("a change of another LRP woke this wait")
	case <-time.After(200 * time.Millisecond):
	}
}

// AwaitRunning over the real waiter: a commit in PostgreSQL wakes it.
func TestAwaitRunningWokenByPostgreSQL(t *testing.T) {
	store := dbtest.NewStore(t)
	w := activities.NewPGWaiter(store.Notifications())
	s := newFakeRolloutStore(3)
	s.set("def2", 0, model.StateClaimed)
	r := &activities.Rollouts{Store: s, Waiter: w, Log: zaptest.NewLogger(t), SafetyTick: time.Hour}
	go func() {
		for w.Subscribers() == 0 {
			time.Sleep(time.Millisecond)
		}
		s.set("def2", 0, model.StateRunning)
		// Keep notifying until it lands: the listener may still be connecting.
		for w.Subscribers() != 0 {
			// An event of this LRP, as a cell's start report writes: its trigger names the LRP.
			_, _ = store.DB().Exec(`INSERT INTO events (name, data) VALUES ('actual_lrp_instance_changed', '{"before": {}, "after": {"process_guid": "app"}}')`)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res := await(t, r, def2At0, nil)
	if res.err != nil || !res.out.Running {
		t.Fatalf("got %+v", res)
	}
}

// The activities' store is the real one: the contract must stay satisfied by *db.Store.
var _ activities.RolloutStore = (*db.Store)(nil)

// stepRecorder is a RolloutMetrics that keeps what it is told.
type stepRecorder struct {
	mu       sync.Mutex
	steps    []string
	took     []time.Duration
	finished []string
}

func (r *stepRecorder) IndexStep(outcome string, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps, r.took = append(r.steps, outcome), append(r.took, took)
}

func (r *stepRecorder) Finished(state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, state)
}

// Each wait that decides its index is recorded once, timed from its first attempt; a wait
// that decides nothing (the instance missing, to be desired again) is not.
func TestAwaitRunningRecordsTheStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     string // "" for no instance
		instances int32
		deadline  time.Duration
		want      []string
	}{
		{"running", model.StateRunning, 3, 0, []string{model.StepUpdated}},
		{"given up", model.StateCrashed, 3, time.Minute, []string{model.StepGivenUp}},
		{"scaled away", "", 0, 0, []string{model.StepScaledAway}},
		{"missing", "", 3, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeRolloutStore(tc.instances)
			if tc.state != "" {
				s.set("def2", 0, tc.state)
			}
			rec := &stepRecorder{}
			r := &activities.Rollouts{Store: s, Log: zaptest.NewLogger(t), Metrics: rec}
			in := def2At0
			in.Deadline = tc.deadline
			// A retried attempt: the step began an hour ago.
			if res := await(t, r, in, map[string]any{"since": time.Now().Add(-time.Hour).UnixNano()}); res.err != nil {
				t.Fatal(res.err)
			}
			if !slices.Equal(rec.steps, tc.want) {
				t.Fatalf("steps recorded %v, want %v", rec.steps, tc.want)
			}
			for _, d := range rec.took {
				if d < time.Hour || d > time.Hour+time.Minute {
					t.Fatalf("step took %v, want an hour: timed from the first attempt", d)
				}
			}
		})
	}
}

// A rollout is counted when FinishRollout ends it, not again when a retry finds it ended.
func TestFinishRolloutCountsOnce(t *testing.T) {
	rec := &stepRecorder{}
	r := &activities.Rollouts{Store: newFakeRolloutStore(3), Log: zaptest.NewLogger(t), Metrics: rec}
	for range 2 {
		if _, err := r.FinishRollout(context.Background(), activities.FinishRolloutInput{RolloutID: "r1", State: model.RolloutCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(rec.finished, []string{model.RolloutCompleted}) {
		t.Fatalf("finished %v, want one completed", rec.finished)
	}
}
