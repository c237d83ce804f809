package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

func (d *devStack) databaseURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bbs?sslmode=disable", d.pgPort)
}

// slowDemo is a definition whose instances take a moment to start, so that a rollout is
// still walking when the test strikes.
func slowDemo(id string) obj {
	def := demoDefinition(id, id)
	def["action"] = obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "sleep 0.7; exec " + demoBin}}}
	return def
}

// TestWorkerKilledMidRollout kills the worker (SIGKILL) in the middle of a rollout and
// starts a new one: the workflow resumes from its history and the rollout completes, with
// the served indices never below N.
func TestWorkerKilledMidRollout(t *testing.T) {
	const n = 4
	d := startDev(t, "--no-worker")
	env := []string{"DATABASE_URL=" + d.databaseURL(), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", d.temporalPort)}
	w := start(t, env, "worker")
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "4 RUNNING", 30*time.Second, func() bool { return d.allOn("web", "web", n) })

	s := d.sample("web", n)
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": slowDemo("v2")}}, nil)
	d.waitFor(t, "the walk to be past index 0", 30*time.Second, func() bool { return d.rollout("web").UpdatedInstances >= 1 })
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.done
	if d.rollout("web").State != "active" {
		t.Fatalf("the rollout finished before the worker was killed: %+v", d.rollout("web"))
	}
	time.Sleep(time.Second)
	start(t, env, "worker")
	d.waitFor(t, "the rollout to complete after the restart", 90*time.Second, func() bool {
		return d.rollout("web").State == "completed" && d.allOn("web", "v2", n)
	})
	s.finish(t, n, "rollout with the worker killed")
}

// TestRolloutCommittedButNotStartedIsResumed plays the API dying between committing a
// rollout and starting its workflow: convergence finds the rollout without a workflow and
// starts it.
func TestRolloutCommittedButNotStartedIsResumed(t *testing.T) {
	const n = 3
	d := startDev(t, "--convergence-interval", "3s")
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "3 RUNNING", 30*time.Second, func() bool { return d.allOn("web", "web", n) })

	ctx := context.Background()
	store, err := db.Open(ctx, d.databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	def := model.LRPDefinition{
		DefinitionID: "v2", RootFS: "preloaded:cflinuxfs4", MemoryMB: 64, DiskMB: 64, Ports: []uint32{8080},
		Env:             []model.EnvironmentVariable{{Name: "DEMO_VERSION", Value: "v2"}},
		Action:          &model.Action{Run: &model.RunAction{Path: demoBin}},
		CheckDefinition: &model.CheckDefinition{Checks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}}},
	}
	// What the API commits, without the workflow start that would follow.
	if _, err := store.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "web", Kind: model.RolloutKindUpdate, Definition: &def}); err != nil {
		t.Fatal(err)
	}
	s := d.sample("web", n)
	d.waitFor(t, "convergence to start the rollout and the rollout to complete", 60*time.Second, func() bool {
		return d.rollout("web").State == "completed" && d.allOn("web", "v2", n)
	})
	s.finish(t, n, "resumed rollout")
}
