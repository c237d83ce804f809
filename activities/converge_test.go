package activities_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap/zaptest"
)

// TestMain gives the package's tests a real PostgreSQL and stops it afterwards.
func TestMain(m *testing.M) { dbtest.Main(m) }

type fakeStopper struct {
	got []model.ActualLRP
	err error
}

func (f *fakeStopper) StopInstances(_ context.Context, lrps []model.ActualLRP) error {
	f.got = append(f.got, lrps...)
	return f.err
}

// seed stores an LRP of 3 instances scaled down to 1 behind the store's back, its index 0
// gone, and index 1 running on a live cell in a fresh domain.
func seed(t *testing.T, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.DesireLRP(ctx, &model.DesiredLRP{
		ProcessGUID: "app", Domain: "cf-apps", Instances: 3,
		LRPDefinition: model.LRPDefinition{
			RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 64,
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO domains VALUES ('cf-apps', NULL)`,
		`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'http://127.0.0.1:1', 1024, 1024, 10, now() + interval '1 hour')`,
		`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-1', instance_guid = 'ig-1' WHERE instance_index = 1`,
		`DELETE FROM actual_lrps WHERE instance_index = 0`,
		`UPDATE desired_lrps SET instances = 1`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func run(t *testing.T, c *activities.Converger, in activities.ConvergeInput) (activities.ConvergeOutput, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(c)
	val, err := env.ExecuteActivity(c.Converge, in)
	if err != nil {
		return activities.ConvergeOutput{}, err
	}
	var out activities.ConvergeOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func TestConvergeActivity(t *testing.T) {
	s := dbtest.NewStore(t)
	seed(t, s)
	stopper := &fakeStopper{}
	c := &activities.Converger{Store: s, Stopper: stopper, Log: zaptest.NewLogger(t)}

	out, err := run(t, c, activities.ConvergeInput{})
	if err != nil {
		t.Fatal(err)
	}
	// Index 0 is recreated; index 2 (UNCLAIMED) is deleted; index 1 runs on a cell: stop it.
	want := activities.ConvergeOutput{MissingIndices: 1, ExtrasRemoved: 1, ExtrasToStop: 1, StopsRequested: 1}
	if out != want {
		t.Fatalf("output = %+v, want %+v", out, want)
	}
	if len(stopper.got) != 1 || stopper.got[0].Index != 1 || stopper.got[0].CellID != "cell-1" {
		t.Fatalf("stop requests = %+v", stopper.got)
	}

	// Idempotent: the second pass changes nothing and asks for the same stop again.
	out, err = run(t, c, activities.ConvergeInput{})
	if err != nil || out != (activities.ConvergeOutput{ExtrasToStop: 1, StopsRequested: 1}) {
		t.Fatalf("second pass = %+v, %v", out, err)
	}
}

func TestConvergeActivityStopFailureAndNoStopper(t *testing.T) {
	s := dbtest.NewStore(t)
	seed(t, s)
	failing := &activities.Converger{Store: s, Stopper: &fakeStopper{err: errors.New("cell unreachable")}, Log: zaptest.NewLogger(t)}
	out, err := run(t, failing, activities.ConvergeInput{})
	if err != nil || !out.StopFailed || out.StopsRequested != 0 || out.MissingIndices != 1 {
		t.Fatalf("a failed stop must not fail the committed pass: %+v, %v", out, err)
	}
	// Without a stopper (and without a logger) the pass still runs and only logs.
	out, err = run(t, &activities.Converger{Store: s}, activities.ConvergeInput{})
	if err != nil || out.ExtrasToStop != 1 || out.StopsRequested != 0 {
		t.Fatalf("nil stopper: %+v, %v", out, err)
	}
}

func TestConvergeActivityRejectsInvalidInput(t *testing.T) {
	c := &activities.Converger{Store: dbtest.NewStore(t)}
	_, err := run(t, c, activities.ConvergeInput{RetiredHistory: -1})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != string(model.ErrInvalidRequest) {
		t.Fatalf("error = %v, want a non-retryable InvalidRequest", err)
	}
}

func TestConvergeActivityRespectsCancellation(t *testing.T) {
	c := &activities.Converger{Store: dbtest.NewStore(t)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Converge(ctx, activities.ConvergeInput{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

// The pass prunes the event log to the Converger's bounds, and refuses negative ones for good.
func TestConvergeActivityPrunesEvents(t *testing.T) {
	s := dbtest.NewStore(t)
	for i := range 5 {
		if _, err := s.DB().Exec(`INSERT INTO events (name, data) VALUES ('desired_lrp_changed', $1)`, fmt.Sprintf(`{"n": %d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, &activities.Converger{Store: s, EventsKept: 2}, activities.ConvergeInput{})
	if err != nil || out.EventsPruned != 3 {
		t.Fatalf("keeping 2 of 5 events: %+v, %v, want 3 pruned", out, err)
	}
	_, err = run(t, &activities.Converger{Store: s, EventRetention: -time.Second}, activities.ConvergeInput{})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != string(model.ErrInvalidRequest) {
		t.Fatalf("a negative retention: error = %v, want a non-retryable InvalidRequest", err)
	}
}
