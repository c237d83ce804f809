package bench

import (
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"go.temporal.io/sdk/client"
)

// database is the BBS's database, read for what the API does not say (instances not yet
// RUNNING, rollouts completed, the event log).
type database interface {
	DB() *sqlx.DB
}

// target is what the rollout and task benchmarks drive and read, so that each benchmark is
// written once for the two shapes it runs on: the whole system inside this process on a
// Temporal dev server (inProcess, `make bench`) and `bbs cluster`'s processes on the real
// Temporal server (clusterTarget, `make bench-cluster`).
type target interface {
	database
	// API is a client of the JSON API (through the front, in a cluster).
	API() *bbsclient.Client
	// TemporalClient reaches the Temporal server the workers run on: the floor runs there.
	TemporalClient() client.Client
	// WatchFleet samples the rollouts' invariant over the LRPs of prefix (n instances each).
	WatchFleet(prefix string, n int) *testcluster.FleetWatch
	// CPU is the CPU time every process of the system and this one have used so far, in all
	// and by part; the difference of two readings is what a stretch of the run cost.
	CPU() (time.Duration, map[string]time.Duration)
}

// inProcess is a testcluster: its API, worker and cells run in this process, beside the
// Temporal dev server and the shared PostgreSQL (treeCPUByChild).
type inProcess struct{ *testcluster.Cluster }

func (s inProcess) API() *bbsclient.Client                         { return s.BBS }
func (s inProcess) TemporalClient() client.Client                  { return s.Temporal }
func (s inProcess) CPU() (time.Duration, map[string]time.Duration) { return treeCPUByChild() }
