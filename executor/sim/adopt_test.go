package sim_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
)

// A sim cell with a work directory leaves its running instances there when its agent dies,
// and the next backend on the directory adopts them, their scripts counted from their start;
// what stopped or crashed is not adopted.
func TestSimInstancesOutliveTheirAgent(t *testing.T) {
	dir := t.TempDir()
	b := sim.NewIn(1, dir)
	spec := func(guid string, env ...model.EnvironmentVariable) executor.StartSpec {
		return executor.StartSpec{Guid: guid, Key: model.ActualLRPKey{ProcessGUID: "pg", Index: 2}, Env: env,
			Definition: model.LRPDefinition{Action: &model.Action{Run: &model.RunAction{Path: "/app"}}}}
	}
	if _, err := b.Start(context.Background(), spec("runs")); err != nil {
		t.Fatal(err)
	}
	crashes, err := b.Start(context.Background(), spec("crashes", model.EnvironmentVariable{Name: "SIM_CRASH_AFTER_MS", Value: "300"}))
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := b.Start(context.Background(), spec("stopped"))
	if err != nil {
		t.Fatal(err)
	}
	stopped.Stop(0)

	adopted := sim.NewIn(1, dir).Adopt(nil) // the agent died; a new one starts on the directory
	got := map[string]executor.Instance{}
	for _, a := range adopted {
		got[a.Spec.Guid] = a.Instance
	}
	if len(got) != 2 || got["runs"] == nil || got["crashes"] == nil || adopted[0].Spec.Key.Index != 2 {
		t.Fatalf("adopted %+v", adopted)
	}
	select {
	case <-got["crashes"].Done():
		if got["crashes"].Err() == nil {
			t.Error("the adopted instance that crashes exited cleanly")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the adopted instance did not crash when its script said")
	}
	<-crashes.Done()
	got["runs"].Stop(0)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}
