package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/model"
)

func startSpec(guid string, monitor bool, env ...string) executor.StartSpec {
	d := model.LRPDefinition{RootFS: "preloaded:sim", Action: &model.Action{Run: &model.RunAction{Path: "/bin/app"}}}
	if monitor {
		d.CheckDefinition = &model.CheckDefinition{Checks: []model.Check{{TCPCheck: &model.TCPCheck{Port: 8080}}}}
	}
	for i := 0; i+1 < len(env); i += 2 {
		d.Env = append(d.Env, model.EnvironmentVariable{Name: env[i], Value: env[i+1]})
	}
	return executor.StartSpec{Guid: guid, Definition: d, Env: d.Env}
}

func waitDone(t *testing.T, in executor.Instance) error {
	t.Helper()
	select {
	case <-in.Done():
		return in.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("instance did not exit")
		return nil
	}
}

func TestReproducibleDraws(t *testing.T) {
	outcomes := func(seed int64) string {
		var b strings.Builder
		be := sim.New(seed)
		for i := 0; i < 200; i++ {
			in, err := be.Start(context.Background(),
				startSpec(fmt.Sprintf("g%d", i), true, "SIM_FAIL_START", "0.5", "SIM_HEALTHY_PROBABILITY", "0.5"))
			switch {
			case err != nil:
				b.WriteByte('F')
			case in.Check(context.Background()) != nil:
				b.WriteByte('U')
			default:
				b.WriteByte('H')
			}
		}
		return b.String()
	}
	a, again, other := outcomes(7), outcomes(7), outcomes(8)
	if a != again {
		t.Fatalf("same seed, different outcomes:\n%s\n%s", a, again)
	}
	if a == other {
		t.Fatal("different seeds, same outcomes")
	}
	for _, c := range "FUH" {
		if n := strings.Count(a, string(c)); n < 20 {
			t.Fatalf("outcome %c only %d times in %s", c, n, a)
		}
	}
}

func TestMonitorModes(t *testing.T) {
	ctx := context.Background()
	be := sim.New(1)
	for _, tc := range []struct {
		monitor      string
		before, late bool // healthy at once, healthy after 150ms
	}{
		{"", true, true},
		{"pass", true, true},
		{"fail", false, false},
		{"pass-after:100", false, true},
		{"fail-after:100", true, false},
	} {
		t.Run(tc.monitor, func(t *testing.T) {
			env := []string{}
			if tc.monitor != "" {
				env = append(env, "SIM_MONITOR", tc.monitor)
			}
			in, err := be.Start(ctx, startSpec("g", true, env...))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Stop(0)
			if !in.HasMonitor() {
				t.Fatal("HasMonitor = false for a definition with a check definition")
			}
			if got := in.Check(ctx) == nil; got != tc.before {
				t.Fatalf("healthy at once = %v", got)
			}
			time.Sleep(150 * time.Millisecond)
			if got := in.Check(ctx) == nil; got != tc.late {
				t.Fatalf("healthy later = %v", got)
			}
		})
	}
}

func TestActionExits(t *testing.T) {
	be := sim.New(1)
	in, err := be.Start(context.Background(), startSpec("g", false, "SIM_CRASH_AFTER_MS", "20", "SIM_EXIT_AFTER_MS", "500"))
	if err != nil {
		t.Fatal(err)
	}
	if in.HasMonitor() {
		t.Fatal("HasMonitor = true without monitor")
	}
	if err := waitDone(t, in); err == nil || !strings.Contains(err.Error(), "SIM_CRASH_AFTER_MS") {
		t.Fatalf("crash err = %v", err)
	}
	in, err = be.Start(context.Background(), startSpec("g", false, "SIM_EXIT_AFTER_MS", "20"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, in); err != nil {
		t.Fatalf("exit err = %v", err)
	}
}

func TestStopEndsTheAction(t *testing.T) {
	in, err := sim.New(1).Start(context.Background(), startSpec("g", false, "SIM_CRASH_AFTER_MS", "60000"))
	if err != nil {
		t.Fatal(err)
	}
	in.Stop(time.Second)
	if err := waitDone(t, in); err == nil {
		t.Fatal("stopped action reports success")
	}
}

func TestStartDelayHonoursCancellation(t *testing.T) {
	be := sim.New(1)
	begin := time.Now()
	if _, err := be.Start(context.Background(), startSpec("g", false, "SIM_START_DELAY_MS", "50")); err != nil {
		t.Fatal(err)
	}
	if time.Since(begin) < 50*time.Millisecond {
		t.Fatal("start did not take SIM_START_DELAY_MS")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := be.Start(ctx, startSpec("g", false, "SIM_START_DELAY_MS", "60000")); err == nil {
		t.Fatal("cancelled start succeeded")
	}
}

func TestBadValuesAreStartErrors(t *testing.T) {
	for _, kv := range [][2]string{
		{"SIM_FAIL_START", "2"},
		{"SIM_START_DELAY_MS", "soon"},
		{"SIM_CRASH_AFTER_MS", "-1"},
		{"SIM_MONITOR", "maybe"},
		{"SIM_MONITOR", "pass-after:x"},
		{"SIM_HEALTHY_PROBABILITY", "x"},
	} {
		_, err := sim.New(1).Start(context.Background(), startSpec("g", true, kv[0], kv[1]))
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: err = %v", kv[0], kv[1], err)
		}
	}
}
