package workflows_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/temporaltest"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"github.com/updatable-lrps/bbs/model"
	bbsworker "github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap/zaptest"
)

// rolloutGroupHistories holds recorded histories of RolloutGroupWorkflow
// (RECORD_HISTORIES=1 go test ./workflows -run RolloutGroupOnDevServer writes them).
const rolloutGroupHistories = "testdata/rollout_group"

// memberRollouts stands in for the members' rollout workflows: it records each start and
// abort, and the test ends each member's rollout in the store as its workflow would.
type memberRollouts struct {
	mu       sync.Mutex
	started  []string
	aborting map[string]bool
}

func (m *memberRollouts) StartRollout(_ context.Context, r *model.Rollout, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = append(m.started, r.ProcessGUID)
	return nil
}

func (m *memberRollouts) Defaults() *model.RolloutStrategy { return nil }

func (m *memberRollouts) Abort(_ context.Context, guid, _ string) (*model.Rollout, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.aborting[guid] = true
	return nil, nil
}

// A group's workflow on a real dev server over the real store: waves with a pause between
// them, a pause and a resume, an abort past max_failed_percent whose member under way is
// aborted. Each member's rollout is ended in the store by the test, as its workflow would.
func TestRolloutGroupOnDevServer(t *testing.T) {
	c := temporaltest.New(t)
	store := dbtest.NewStore(t)
	members := &memberRollouts{aborting: map[string]bool{}}
	queue := "rollout-groups"
	w := bbsworker.New(c, queue, bbsworker.Deps{GroupStore: store, Members: members, Aborter: members, Log: zaptest.NewLogger(t)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	groups := &workflows.GroupClient{Client: c, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 6 {
		if _, err := store.DesireLRP(ctx, &model.DesiredLRP{ProcessGUID: fmt.Sprintf("app-%d", i), Domain: "cf-apps", Instances: 1,
			LRPDefinition: model.LRPDefinition{RootFS: "preloaded:cflinuxfs4", Action: &model.Action{Run: &model.RunAction{Path: "/app"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	// end ends every member rollout in progress of group as state says (completed unless
	// it names the LRP).
	end := func(group string, state map[string]string) {
		rs, err := store.Rollouts(ctx, model.RolloutFilter{Active: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.GroupID != group {
				continue
			}
			s := state[r.ProcessGUID]
			switch s {
			case "":
				s = model.RolloutCompleted
			case "hold": // until the group aborts it
				members.mu.Lock()
				aborting := members.aborting[r.ProcessGUID]
				members.mu.Unlock()
				if !aborting {
					continue
				}
				s = model.RolloutReverted
			}
			if _, err := store.FinishRollout(ctx, r.ID, s, "the test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(spec model.RolloutGroupSpec, steer func(), endAs map[string]string) workflows.RolloutGroupOutput {
		t.Helper()
		if _, err := store.CreateRolloutGroup(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := groups.StartGroup(ctx, spec.GroupID); err != nil {
			t.Fatal(err)
		}
		if steer != nil {
			steer()
		}
		wf := c.GetWorkflow(ctx, model.RolloutGroupWorkflowID(spec.GroupID), "")
		done := make(chan error, 1)
		var out workflows.RolloutGroupOutput
		go func() { done <- wf.Get(ctx, &out) }()
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				if os.Getenv("RECORD_HISTORIES") != "" {
					recordHistory(ctx, t, c, model.RolloutGroupWorkflowID(spec.GroupID), wf.GetRunID(), filepath.Join(rolloutGroupHistories, spec.GroupID+".json"))
				}
				return out
			case <-time.After(50 * time.Millisecond):
				end(spec.GroupID, endAs)
			}
		}
	}
	spec := func(id string, waves ...float64) model.RolloutGroupSpec {
		s := model.RolloutGroupSpec{GroupID: id, Selector: model.RolloutGroupSelector{Domain: "cf-apps"},
			Patch: model.DefinitionPatch{Env: []model.EnvironmentVariable{{Name: "GROUP", Value: id}}}, MaxConcurrentLRPs: 2,
			PauseBetweenWavesMS: 300}
		for _, w := range waves {
			s.Waves = append(s.Waves, model.RolloutWave{Percent: w})
		}
		return s
	}

	if out := run(spec("waves", 20, 50, 100), nil, nil); out.State != model.GroupCompleted {
		t.Fatalf("waves: %+v", out)
	}
	paused := func() {
		if _, err := store.ControlRolloutGroup(ctx, "paused", model.GroupControlPause, ""); err != nil {
			t.Fatal(err)
		}
		if err := groups.WakeGroup(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if _, err := store.ControlRolloutGroup(ctx, "paused", model.GroupControlResume, ""); err != nil {
			t.Fatal(err)
		}
		if err := groups.WakeGroup(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
	}
	if out := run(spec("paused", 50, 100), paused, nil); out.State != model.GroupCompleted {
		t.Fatalf("paused: %+v", out)
	}
	// app-0 reverts in the first wave (of 2 members; 0 % may fail): the group aborts, and
	// app-1, under way, is aborted.
	aborted := spec("aborted", 34, 100)
	aborted.PauseBetweenWavesMS = 0
	out := run(aborted, nil, map[string]string{"app-0": model.RolloutReverted, "app-1": "hold"})
	if out.State != model.GroupAborted || !members.aborting["app-1"] {
		t.Fatalf("aborted: %+v, aborting %v", out, members.aborting)
	}
	g, err := store.RolloutGroup(ctx, "aborted")
	if err != nil || g.Waves[1].State != model.WaveSkipped {
		t.Fatalf("aborted group: %+v, %v", g, err)
	}
	t.Logf("started %d member rollouts; aborted %v", len(members.started), members.aborting)
}

// Replaying the recorded histories proves the group workflow still makes the same decisions.
func TestRolloutGroupWorkflowReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(rolloutGroupHistories, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories in %s: %v", rolloutGroupHistories, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			bbsworker.RegisterWorkflows(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(temporalzap.New(zaptest.NewLogger(t)), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The activities' stores are the real one.
var (
	_ activities.GroupStore       = (*db.Store)(nil)
	_ activities.GroupResumeStore = (*db.Store)(nil)
)
