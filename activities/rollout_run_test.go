package activities_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap/zaptest"
)

// runWorld is an LRP of three RUNNING instances in a real store, a rollout of it to v2 with
// an open index run, and a stand-in for placement and cells that runs the v2 instances the
// test lets run.
type runWorld struct {
	t      *testing.T
	store  *db.Store
	r      *activities.Rollouts
	id     string
	fence  int64
	steps  *stepRecorder
	cancel context.CancelFunc
}

func newRunWorld(t *testing.T, runs func(index int32) bool) *runWorld {
	return newRunWorldOf(t, 3, runs)
}

// newRunWorldOf is a runWorld of n instances.
func newRunWorldOf(t *testing.T, n int32, runs func(index int32) bool) *runWorld {
	store := dbtest.NewStore(t)
	lrp := &model.DesiredLRP{ProcessGUID: "app", Domain: "cf-apps", Instances: n, LRPDefinition: model.LRPDefinition{
		RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 64,
		Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}}}
	if _, err := store.DesireLRP(context.Background(), lrp); err != nil {
		t.Fatal(err)
	}
	w := &runWorld{t: t, store: store, steps: &stepRecorder{}}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	t.Cleanup(cancel)
	w.exec(`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-1', instance_guid = 'old-'||instance_index, address = '10.0.0.1'`)
	def := lrp.LRPDefinition
	def.DefinitionID = "v2"
	st, err := store.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: &def})
	if err != nil {
		t.Fatal(err)
	}
	w.id = st.Rollout.ID
	if w.fence, err = store.OpenRun(ctx, w.id); err != nil {
		t.Fatal(err)
	}
	// Placement and cells: every v2 instance the test lets run is RUNNING a moment after it
	// is desired.
	go func() {
		for ctx.Err() == nil {
			var idx []int32
			_ = store.DB().SelectContext(ctx, &idx, `SELECT instance_index FROM actual_lrps WHERE definition_id = 'v2' AND state = 'UNCLAIMED'`)
			for _, i := range idx {
				if runs(i) {
					_, _ = store.DB().ExecContext(ctx, `UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-2',
    instance_guid = 'new-'||instance_index, address = '10.0.0.2' WHERE definition_id = 'v2' AND instance_index = $1`, i)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	w.r = &activities.Rollouts{Store: store, Log: zaptest.NewLogger(t), SafetyTick: 20 * time.Millisecond, Metrics: w.steps}
	return w
}

func (w *runWorld) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.store.DB().Exec(q, args...); err != nil {
		w.t.Fatal(err)
	}
}

func (w *runWorld) walk(in activities.WalkRunInput) (activities.WalkRunOutput, error) {
	return w.walkDef(in, "v2")
}

// walkDef runs WalkRun to definition def.
func (w *runWorld) walkDef(in activities.WalkRunInput, def string) (activities.WalkRunOutput, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(w.r)
	in.RolloutID, in.ProcessGUID, in.DefinitionID, in.Fence = w.id, "app", def, w.fence
	if in.MaxSteps == 0 {
		in.MaxSteps = 100
	}
	val, err := env.ExecuteActivity(w.r.WalkRun, in)
	var out activities.WalkRunOutput
	if err == nil {
		err = val.Get(&out)
	}
	return out, err
}

// A run walks every index: the new instance RUNNING before the old one there retires, one
// index after the other, the row and its events following each index.
func TestWalkRunWalksEveryIndex(t *testing.T) {
	w := newRunWorld(t, func(int32) bool { return true })
	out, err := w.walk(activities.WalkRunInput{Deadline: time.Minute})
	if err != nil || !slices.Equal(out.Updated, []int32{0, 1, 2}) || out.Next != 3 || out.Fenced {
		t.Fatalf("WalkRun = %+v, %v", out, err)
	}
	var retiring []int32
	if err := w.store.DB().Select(&retiring, `SELECT instance_index FROM actual_lrps WHERE definition_id = 'app' AND retiring ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(retiring, []int32{0, 1, 2}) {
		t.Fatalf("old instances retiring at %v", retiring)
	}
	ro, err := w.store.RolloutByID(context.Background(), w.id)
	if err != nil || ro.UpdatedInstances != 3 || ro.CurrentIndex != 3 {
		t.Fatalf("row = %+v, %v", ro, err)
	}
	var events int
	if err := w.store.DB().Get(&events, `SELECT count(*) FROM events WHERE name = 'rollout_changed' AND data->>'updated_instances' IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if events < 3 {
		t.Fatalf("%d rollout_changed events, want one per index at least", events)
	}
	if len(w.steps.steps) != 3 {
		t.Fatalf("steps recorded: %v", w.steps.steps)
	}
}

// MaxSteps ends a run early; the next run takes up where it ended.
func TestWalkRunStopsAtMaxSteps(t *testing.T) {
	w := newRunWorld(t, func(int32) bool { return true })
	out, err := w.walk(activities.WalkRunInput{Deadline: time.Minute, MaxSteps: 2})
	if err != nil || !slices.Equal(out.Updated, []int32{0, 1}) || out.Next != 2 {
		t.Fatalf("WalkRun = %+v, %v", out, err)
	}
	if n := count(t, w.store, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 2`); n != 0 {
		t.Fatal("a run at its last step desired the index after it")
	}
}

// A run the workflow stops while its index never runs ends without another write, and
// StopRun tells what it did: the index it left desired, which the workflow retires.
func TestWalkRunStopped(t *testing.T) {
	w := newRunWorld(t, func(i int32) bool { return i == 0 })
	done := make(chan activities.WalkRunOutput)
	go func() {
		out, err := w.walk(activities.WalkRunInput{Deadline: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	for count(t, w.store, `SELECT count(*) FROM rollouts WHERE run_index = 1`) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	st, err := w.store.StopRun(context.Background(), w.id)
	if err != nil || !slices.Equal(st.Updated, []int32{0}) || st.Index != 1 {
		t.Fatalf("StopRun = %+v, %v", st, err)
	}
	select {
	case out := <-done:
		if !slices.Equal(out.Updated, []int32{0}) {
			t.Fatalf("WalkRun = %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stopped run kept waiting")
	}
}

// Once healthy, an index that does not run within the deadline is given up: its new
// instance retires, the old one keeps serving, and the run goes on.
func TestWalkRunGivesUpAnIndex(t *testing.T) {
	w := newRunWorld(t, func(i int32) bool { return i != 1 })
	out, err := w.walk(activities.WalkRunInput{Deadline: 200 * time.Millisecond})
	if err != nil || !slices.Equal(out.Updated, []int32{0, 2}) || !slices.Equal(out.GivenUp, []int32{1}) || out.Next != 3 {
		t.Fatalf("WalkRun = %+v, %v", out, err)
	}
	if n := count(t, w.store, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND instance_index = 1 AND NOT retiring`); n != 1 {
		t.Fatal("the old instance of a given-up index was retired")
	}
	if n := count(t, w.store, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 1`); n != 0 {
		t.Fatal("the new instance of a given-up index was kept")
	}
}

// Unhealthy (no instance of the definition has run), the first index waits without a
// deadline, as seed 000's failing definition does, until the workflow stops the run.
func TestWalkRunWaitsForAnUnhealthyDefinition(t *testing.T) {
	w := newRunWorld(t, func(int32) bool { return false })
	done := make(chan activities.WalkRunOutput)
	go func() {
		out, err := w.walk(activities.WalkRunInput{Deadline: 50 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("the run ended on its own: %+v", out)
	case <-time.After(500 * time.Millisecond):
	}
	if st, err := w.store.StopRun(context.Background(), w.id); err != nil || st.Index != 0 || len(st.GivenUp) != 0 {
		t.Fatalf("StopRun = %+v, %v", st, err)
	}
	<-done
}

func count(t *testing.T, s *db.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().Get(&n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}
