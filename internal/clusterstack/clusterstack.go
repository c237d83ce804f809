// Package clusterstack is what `bbs cluster` (and so `make cluster`) runs: the production
// topology on one machine. One PostgreSQL holds the BBS's database and Temporal's two; the
// real Temporal server (tools/temporal-server) has its schema applied by its own SQL tool
// and its Web UI; two `bbs api` replicas run behind `bbs lb`, two `bbs worker` processes,
// cells and the router — every one a process of its own, configured through the
// environment variables its subcommand reads, supervised (restarted with back-off when it
// dies). Every connection between them is mutual TLS, with the certificates
// deploy/gen-certs.sh makes (certs.go), as the production shape requires of listeners
// beyond loopback. Run stops all of it in reverse order when its context ends; the next run
// resumes with the data (and the certificates) kept.
package clusterstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"go.uber.org/zap"
)

// Config is what `bbs cluster`'s flags ask of the cluster.
type Config struct {
	// DataDir is where PostgreSQL keeps its data and every process its log and pid file, as
	// the operator named it: the banner shows paths under it so.
	DataDir string
	// CertsDir holds the mutual-TLS certificates, made by deploy/gen-certs.sh unless its
	// ca.crt exists ("": <DataDir>/certs).
	CertsDir string
	// Listen and ProtocolListen are the fronts (bbs lb) of the JSON API and the BBS protocol.
	Listen, ProtocolListen string
	// PortBase places the internal ports: API replica N serves on base+10(N-1)+1 (JSON) and
	// +2 (BBS protocol); the Temporal server's internal services on base+50 to base+63.
	PortBase int
	// PGPort is the cluster's PostgreSQL's port.
	PGPort int
	// TemporalServerBin is the real Temporal server ("": temporaldev.FindServerBin's choice).
	TemporalServerBin string
	// TemporalPort is the frontend's port, TemporalUIPort the Web UI's (0: no UI).
	TemporalPort, TemporalUIPort int
	// HistoryShards is fixed once the cluster's databases exist.
	HistoryShards int
	// APIReplicas, Workers and Cells are how many of each to run; the cells spread over
	// Zones zones, with CellExecutor ("process" or "sim"), cell N's instances on host ports
	// from InstancePortBase+1000(N-1), a thousand each.
	APIReplicas, Workers, Cells, Zones int
	InstancePortBase                   int
	CellExecutor                       string
	// CellMemoryMB, CellDiskMB and CellContainers are each cell's capacity (0: `bbs cell`'s
	// default): a benchmark's thousands of sim instances need more room than the three cells
	// of a demonstration, and the cells get no BBS_ setting of ours but these.
	CellMemoryMB, CellDiskMB, CellContainers int
	// RouterAddr and RouterAdminAddr are the router's app and stats addresses.
	RouterAddr, RouterAdminAddr string
	// MetricsPortBase places the metrics listeners: bbs lb on base, worker N on base+N,
	// cell N on base+10+N, API replica N on base+20+N.
	MetricsPortBase int
	// ConvergenceInterval is the workers' (0: their default).
	ConvergenceInterval time.Duration
	// LogLevel is every bbs process's --log-level.
	LogLevel string
	// Log is the cluster's own logger.
	Log *zap.Logger
	// Out receives the banner (nil: standard output).
	Out io.Writer
}

// Run starts the cluster, prints the banner, and runs until ctx ends (nil) or a process
// fails for good (its supervisor's error); it stops everything it started before it
// returns.
func Run(ctx context.Context, cfg Config) error {
	c, err := newCluster(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.stopAll()
	defer c.closeStore()
	for _, step := range []func(context.Context) error{
		c.startPostgres, c.startTemporal, c.startUI, c.migrate,
		c.startAPIs, c.startLB, c.startWorkers, c.startRouter, c.startCells,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	fmt.Fprint(c.out, c.banner())
	select {
	case <-ctx.Done():
		fmt.Fprintln(c.out)
		c.log.Info("shutting down")
		return nil
	case err := <-c.failed:
		return err
	}
}

// cluster is a running cluster: its supervised children in start order, and what the
// banner says of them.
type cluster struct {
	layout // the configuration, and the children's addresses and environment

	log     *zap.Logger
	out     io.Writer
	self    string // this binary, which the bbs processes run
	tbin    string // the Temporal server
	version string // the Temporal server's
	// temporalTLS is what our own calls to the Temporal frontend present (the namespace's
	// set-up).
	temporalTLS *tls.Config
	children    []*child
	failed      chan error
	store       *db.Store
	pgURL       func(database string) string // a database of the cluster's PostgreSQL

	apiLines, workerLines, cellLines []string
	uiLine                           string
}

// newCluster finds the binaries and makes (or keeps) the data directory and the
// certificates.
func newCluster(ctx context.Context, cfg Config) (*cluster, error) {
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &cluster{layout: layout{cfg: cfg, dir: dir}, log: cfg.Log, out: cfg.Out, failed: make(chan error, 1)}
	if c.out == nil {
		c.out = os.Stdout
	}
	if c.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if err := c.findTemporal(); err != nil {
		return nil, err
	}
	if c.cfg.CertsDir == "" {
		c.cfg.CertsDir = c.rel("certs")
	}
	certsAbs, err := filepath.Abs(c.cfg.CertsDir)
	if err != nil {
		return nil, err
	}
	certs, made, err := makeClusterCerts(ctx, certsAbs)
	if err != nil {
		return nil, err
	}
	c.log.Info(made)
	c.certs = certs
	if c.temporalTLS, err = certs.temporalTLS(); err != nil {
		return nil, err
	}
	return c, nil
}

// findTemporal finds the Temporal server and asks its version.
func (c *cluster) findTemporal() error {
	c.tbin = c.cfg.TemporalServerBin
	if c.tbin == "" {
		var err error
		if c.tbin, err = temporaldev.FindServerBin(); err != nil {
			return err
		}
	}
	version, err := exec.Command(c.tbin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", c.tbin, err)
	}
	c.version = strings.TrimSpace(string(version))
	return nil
}

// rel is a path under the data directory as the operator named it.
func (c *cluster) rel(name string) string { return filepath.Join(c.cfg.DataDir, name) }

// migrate applies the BBS's migrations, once, before its processes race for them.
func (c *cluster) migrate(ctx context.Context) error {
	store, err := boot.OpenStore(ctx, c.dbURL, c.log)
	if err != nil {
		return err
	}
	c.store = store
	return store.Migrate(ctx)
}

// closeStore closes the store the migrations used, before the children stop.
func (c *cluster) closeStore() {
	if c.store != nil {
		c.store.Close()
	}
}
