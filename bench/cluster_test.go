package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/chaos"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// BenchmarkCluster runs the rollout and task benchmarks of `make bench` on the production
// topology, `make bench-cluster`: `bbs cluster` started as a process of its own (package
// chaos) — PostgreSQL, the real Temporal server with its history shards on PostgreSQL, two
// API replicas behind the front (`bbs lb`), two workers, the router and sim cells at their
// production heartbeat and poll — one fresh cluster for each, stopped when it ends. Each
// sub-benchmark is the dev-server benchmark of its name, written once (target): its figures
// sit beside those of `make bench`. The floors run on the cluster's Temporal server, their
// worker in this process with the cluster's client certificate; CPU is that of every
// process of the cluster, by kind (clusterTarget.CPU).
//
// BBS_BIN is the bbs binary (default: built from ../cmd/bbs), TEMPORAL_SERVER_BIN the
// Temporal server (default: bin/temporal-server). BENCH_CLUSTER_LRPS shrinks the thousand
// rollouts and BENCH_CLUSTER_TASKS the ten thousand tasks, for a run on a busy machine;
// BENCH_CLUSTER_DIR keeps each cluster's data and logs under it.
func BenchmarkCluster(b *testing.B) {
	b.Run("RolloutStep50", func(b *testing.B) { rolloutStep50(b, startCluster(b)) })
	b.Run("ThousandRollouts", func(b *testing.B) {
		thousandRollouts(b, startCluster(b), envInt(b, "BENCH_CLUSTER_LRPS", 1000))
	})
	b.Run("ThreeHundredTasks", func(b *testing.B) { tasksWithAndWithoutCallbacks(b, startCluster(b), clusterCells, 300) })
	b.Run("TenThousandTasks", func(b *testing.B) {
		tasksWithAndWithoutCallbacks(b, startCluster(b), clusterCells, envInt(b, "BENCH_CLUSTER_TASKS", 10000))
	})
}

// The cluster's shape: `bbs cluster`'s two API replicas and two workers, and ten sim cells
// (the most its metrics ports leave room for: cell N's is base+10+N, API replica 1's
// base+21) of 2,000 containers and 32 GB each — room for 1,000 LRPs of 4 instances and
// every rollout's extra instance at once, and for 10,000 tasks desired at once, as the
// dev-server benchmarks' 40 and 100 cells have.
const (
	clusterAPIReplicas = 2
	clusterWorkers     = 2
	clusterCells       = 10
	clusterCellMB      = 32768
	clusterCellSlots   = 2000
)

// clusterTarget is a `bbs cluster` this benchmark started.
type clusterTarget struct {
	c        *chaos.Cluster
	db       *sqlx.DB
	temporal client.Client
	tb       testing.TB
	// processes are the cluster's children by the names of their pid files.
	processes []string
}

// startCluster starts a cluster for b, stopped (its PostgreSQL and Temporal server with it)
// when b ends, however it ends; a failed benchmark logs the end of the cluster's output.
func startCluster(b *testing.B) *clusterTarget {
	b.Helper()
	tbin, err := temporaldev.FindServerBin()
	if err != nil {
		b.Fatalf("the cluster benchmarks need the Temporal server (make bin/temporal-server): %v", err)
	}
	dir := b.TempDir()
	if keep := os.Getenv("BENCH_CLUSTER_DIR"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(b.Name(), "/", "-"))
	}
	c, err := chaos.Start(ctx, chaos.Config{BBS: bbsBinary(b), TemporalServer: tbin, Dir: dir,
		Cells: clusterCells, CellExecutor: "sim", Logf: b.Logf,
		Args: []string{"--api-replicas", strconv.Itoa(clusterAPIReplicas), "--workers", strconv.Itoa(clusterWorkers),
			"--cell-memory-mb", strconv.Itoa(clusterCellMB), "--cell-disk-mb", strconv.Itoa(clusterCellMB),
			"--cell-containers", strconv.Itoa(clusterCellSlots)}})
	if err != nil {
		b.Fatal(err)
	}
	s := &clusterTarget{c: c, tb: b}
	b.Cleanup(func() {
		if s.temporal != nil {
			s.temporal.Close()
		}
		if s.db != nil {
			s.db.Close()
		}
		if err := c.Stop(); err != nil {
			b.Errorf("stop the cluster: %v", err)
		}
		if b.Failed() {
			out := c.Output()
			b.Logf("bbs cluster's output (the end; every process's log is in %s):\n%s", dir, out[max(0, len(out)-4000):])
		}
	})
	if s.db, err = sqlx.Open("postgres", c.DatabaseURL()); err != nil {
		b.Fatal(err)
	}
	s.temporal, err = system.DialTemporal(ctx, system.TemporalConfig{Address: c.TemporalAddress(), Namespace: "default", TLS: c.TLS}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= clusterAPIReplicas; i++ {
		s.processes = append(s.processes, fmt.Sprintf("api-%d", i))
	}
	for i := 1; i <= clusterWorkers; i++ {
		s.processes = append(s.processes, fmt.Sprintf("worker-%d", i))
	}
	s.processes = append(append(s.processes, c.Cells...), "lb", "router", "temporal", "temporal-ui", "postgres")
	return s
}

var buildBBS struct {
	once sync.Once
	path string
	err  error
}

// bbsBinary is BBS_BIN, or bbs built from this tree once per run.
func bbsBinary(b *testing.B) string {
	if p := os.Getenv("BBS_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			b.Fatal(err)
		}
		return abs
	}
	buildBBS.once.Do(func() {
		dir, err := os.MkdirTemp("", "bbs-bench-bin-")
		if err != nil {
			buildBBS.err = err
			return
		}
		buildBBS.path = filepath.Join(dir, "bbs")
		out, err := exec.Command("go", "build", "-o", buildBBS.path, "../cmd/bbs").CombinedOutput()
		if err != nil {
			buildBBS.err = fmt.Errorf("build bbs: %v\n%s", err, out)
		}
	})
	if buildBBS.err != nil {
		b.Fatal(buildBBS.err)
	}
	return buildBBS.path
}

func (s *clusterTarget) API() *bbsclient.Client        { return s.c.BBS }
func (s *clusterTarget) DB() *sqlx.DB                  { return s.db }
func (s *clusterTarget) TemporalClient() client.Client { return s.temporal }

func (s *clusterTarget) WatchFleet(prefix string, n int) *testcluster.FleetWatch {
	return testcluster.WatchFleet(s.tb, s.db, prefix, n)
}

// CPU is the CPU of this process (the clients: "bench"), of each of the cluster's processes
// by kind — its pid file's name without the number: api, worker, cell, lb, router, temporal
// (the server), temporal-ui, postgres (the postmaster and its backends, detached from us by
// pg_ctl) — and of `bbs cluster` itself, the supervisor, what is left of the tree below
// this process. PostgreSQL's is split: "postgres-temporal" is the backends serving the
// Temporal server's databases (its history and visibility), "postgres" the BBS's and the
// server's own processes (and backends that exited, which the postmaster reaped). A process
// that its supervisor restarted between two readings has its new pid's CPU in the second:
// the difference is then short of what the dead one spent.
func (s *clusterTarget) CPU() (time.Duration, map[string]time.Duration) {
	procs := readProcs()
	self := procs.self()
	total := procs.tree(os.Getpid())
	by := map[string]time.Duration{"bench": self}
	named := self
	for _, name := range s.processes {
		pid, err := s.c.PID(name)
		if err != nil {
			continue // restarting: its pid file is not written yet
		}
		cpu := procs.tree(pid)
		if !procs.below(pid, os.Getpid()) {
			total += cpu
		}
		kind := name
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				kind = name[:i]
			}
		}
		if name == "postgres" {
			history := temporalBackends(procs, pid)
			by["postgres-temporal"] += history
			cpu -= history
			named += history
		}
		by[kind] += cpu
		named += cpu
	}
	by["bbs cluster"] = total - named
	return total, by
}

// temporalBackends is the CPU of the backends below postmaster connected to a Temporal
// database (temporal, temporal_visibility), which a backend's title names:
// "postgres: <user> <database> <client> <state>".
func temporalBackends(procs procTable, postmaster int) time.Duration {
	var sum time.Duration
	for _, pid := range procs.children[postmaster] {
		title, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(strings.TrimRight(string(title), "\x00"), "postgres: "))
		if len(f) >= 2 && strings.HasPrefix(f[1], "temporal") {
			sum += procs.tree(pid)
		}
	}
	return sum
}
