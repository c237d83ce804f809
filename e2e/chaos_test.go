package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/chaos"
)

// TestChaos is the short form of `make chaos` (package chaos): on `bbs cluster` with
// process cells, apps under traffic through the router during an update, a cancelled update
// and a rollback, while the faults of chaos.MatrixShort kill processes (SIGKILL; PostgreSQL
// an immediate shutdown) and the cluster restarts them: every rollout ends where its signals
// put it, no request fails, no owed index is ever without a RUNNING instance, every index
// ends with exactly one, no process is orphaned, the task's callback arrives once and no
// event twice. CHAOS_TRIALS="cell api+leader ..." runs other trials; CHAOS_DIR keeps the
// cluster's data and logs there.
func TestChaos(t *testing.T) {
	trials := chaos.MatrixShort
	if s := os.Getenv("CHAOS_TRIALS"); s != "" {
		trials = nil
		for _, trial := range strings.Fields(s) {
			trials = append(trials, strings.Split(trial, "+"))
		}
	}
	dir := os.Getenv("CHAOS_DIR") // kept, with every process's log, for a look afterwards
	if dir == "" {
		dir = t.TempDir()
	}
	ctx := context.Background()
	c := startChaosCluster(t, chaos.Config{Dir: dir})
	m, err := chaos.NewMatrix(ctx, c, demoBin)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var outcomes []chaos.Outcome
	for _, faults := range trials {
		began := time.Now()
		o := m.Run(ctx, faults)
		t.Logf("%s: %s (%s)", o.Faults, map[bool]string{true: "ok", false: "FAILED"}[o.OK()], time.Since(began).Round(time.Second))
		outcomes = append(outcomes, o)
	}
	var table strings.Builder
	chaos.WriteTable(&table, outcomes)
	t.Logf("\n%s", table.String())
	for _, o := range outcomes {
		if !o.OK() {
			t.Errorf("%s: %s", o.Faults, strings.Join(o.Problems, "; "))
		}
	}
}

// startChaosCluster starts `bbs cluster` (package chaos) with cfg, the test's binaries filled
// in, and stops it when the test ends, showing its output if the test failed.
func startChaosCluster(t *testing.T, cfg chaos.Config) *chaos.Cluster {
	t.Helper()
	cfg.BBS, cfg.TemporalServer, cfg.Logf = bbsBin, temporalServerBin(t), t.Logf
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := chaos.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("bbs cluster's output:\n%s", c.Output())
		}
	})
	return c
}
