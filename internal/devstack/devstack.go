// Package devstack is what `bbs dev` (and so `make run`) runs: the whole system on one
// machine, in one process tree — a private PostgreSQL under the data directory (unless a
// database is given), the Temporal dev server with its Web UI, the API and the BBS protocol,
// the worker, the router, the ssh proxy, the tps-watcher in-process, and cell agents as
// child processes (`bbs cell`, the running binary). PostgreSQL and the Temporal dev server
// are supervised: one that dies is started again on the same state. Run prints where
// everything listens once the cells have announced themselves, and stops all of it, in
// reverse order, when its context ends; the next run resumes with the data kept.
package devstack

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/system"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Config is what `bbs dev`'s flags and environment ask of the stack.
type Config struct {
	// DataDir is where PostgreSQL, Temporal and the cells keep their state and logs, as the
	// operator named it: the banner shows paths under it so.
	DataDir string
	// DatabaseURL, when set, is the database to use instead of a private PostgreSQL.
	DatabaseURL string
	// PGPort is the private PostgreSQL's port.
	PGPort int
	// TemporalBin is the temporal CLI ("": temporaldev.FindBin's choice).
	TemporalBin string
	// TemporalPort and TemporalUIPort are the Temporal dev server's frontend and Web UI ports.
	TemporalPort, TemporalUIPort int
	// APIAddr is the JSON API's address; ProtocolAddr the BBS protocol's and ProtocolTLSAddr
	// its mutual-TLS twin's (each "": not served).
	APIAddr, ProtocolAddr, ProtocolTLSAddr string
	// Rollouts tune the rollouts the API starts and the worker resumes.
	Rollouts system.RolloutOptions
	// NoWorker leaves the worker to a `bbs worker` the operator runs.
	NoWorker bool
	// ConvergenceInterval is how often the worker's convergence runs.
	ConvergenceInterval time.Duration
	// RouterAddr and RouterAdminAddr are the router's app and stats addresses.
	RouterAddr, RouterAdminAddr string
	// SSHProxyAddr is the ssh proxy's address ("": no ssh proxy).
	SSHProxyAddr string
	// CCURL is the Cloud Controller the tps-watcher reports crashes to ("": a stand-in that
	// logs them to <data-dir>/cc.log).
	CCURL string
	// Cells is how many cell agents to run, spread over Zones zones, with CellExecutor
	// ("process" or "sim").
	Cells, Zones int
	CellExecutor string
	// Log is the stack's logger.
	Log *zap.Logger
	// Out receives the banner (nil: standard output).
	Out io.Writer
}

// Run starts the stack, prints the banner, and runs until ctx ends (nil) or PostgreSQL or
// the Temporal dev server fails for good (their supervisor's error); it stops everything
// it started before it returns.
func Run(ctx context.Context, cfg Config) error {
	s, err := newStack(cfg)
	if err != nil {
		return err
	}
	defer s.stopAll()
	if err := s.start(ctx); err != nil {
		return err
	}
	fmt.Fprint(s.out, s.banner.render())
	return s.wait(ctx)
}

// stack is a running dev stack: what it started, to stop in reverse order, and what its
// banner says.
type stack struct {
	cfg   Config
	log   *zap.Logger
	out   io.Writer
	dir   string // cfg.DataDir, absolute
	stops []func()

	pgSup, temporalSup *supervise.Supervisor
	dbURL              string
	store              *db.Store
	temporal           system.TemporalConfig
	temporalClient     client.Client
	metrics            *prometheus.Registry // every in-process part's, served by the API
	api                *system.API
	banner             banner
}

// newStack makes the data directory; the parts start in start.
func newStack(cfg Config) (*stack, error) {
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := cfg.Out
	if out == nil {
		out = os.Stdout
	}
	return &stack{cfg: cfg, log: cfg.Log, out: out, dir: dir, dbURL: cfg.DatabaseURL}, nil
}

// start starts the parts in dependency order, each registering how it stops.
func (s *stack) start(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		s.startPostgres, s.startTemporal, s.startAPI, s.startWorker, s.startRouter,
		s.startSSHProxy, s.startTPSWatcher, s.startCells,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// onStop registers what stops a part that has started: stopAll calls them in reverse order.
func (s *stack) onStop(stop func()) { s.stops = append(s.stops, stop) }

// stopAll stops what has started, the last first: the cells before the API they report to,
// PostgreSQL last.
func (s *stack) stopAll() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// shown is a path under the data directory as the operator named it, for the banner.
func (s *stack) shown(name string) string { return filepath.Join(s.cfg.DataDir, name) }

// wait runs until ctx ends or a supervised server fails for good.
func (s *stack) wait(ctx context.Context) error {
	var pgFailed <-chan struct{}
	if s.pgSup != nil {
		pgFailed = s.pgSup.Failed()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.out)
		s.log.Info("shutting down")
		return nil
	case <-pgFailed:
		return s.pgSup.Err()
	case <-s.temporalSup.Failed():
		return s.temporalSup.Err()
	}
}
