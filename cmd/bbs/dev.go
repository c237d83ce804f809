package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/boot"
	"os"
	"path/filepath"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/internal/pgcluster"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/metrics"
	"github.com/updatable-lrps/bbs/worker"
	"github.com/updatable-lrps/bbs/workflows"
	"go.uber.org/zap"
)

// runDevCommand runs the whole system on one machine, as `make run` does: a private
// PostgreSQL cluster under the data directory (unless DATABASE_URL is set), the Temporal dev
// server with its Web UI, migrations, the API and the worker. Ctrl-C stops all of it; the
// next run resumes with the data kept.
func runDevCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dataDir := fs.String("data-dir", boot.EnvOr("BBS_DATA_DIR", ".data"), "where PostgreSQL and Temporal keep their state [BBS_DATA_DIR]")
	apiAddr := fs.String("listen", boot.EnvOr("BBS_LISTEN_ADDR", "127.0.0.1:8889"), "API address [BBS_LISTEN_ADDR]")
	protocolAddr := protocolListenFlag(fs)
	protocolTLSAddr := protocolTLSListenFlag(fs)
	pgPort := fs.Int("pg-port", 54329, "port of the private PostgreSQL (ignored when DATABASE_URL is set)")
	temporalBin := fs.String("temporal-bin", boot.EnvOr("TEMPORAL_BIN", ""), "temporal CLI (default: bin/temporal, else temporal on PATH) [TEMPORAL_BIN]")
	temporalPort := fs.Int("temporal-port", 7233, "Temporal frontend port")
	uiPort := fs.Int("temporal-ui-port", 8233, "Temporal Web UI port")
	logLevel := boot.LogLevelFlag(fs)
	nCells := fs.Int("cells", 3, "cell agents to run")
	var rf rolloutFlags
	rf.register(fs)
	routerAddr := fs.String("router-listen", "127.0.0.1:8080", "the router's address (apps by Host header)")
	routerAdmin := fs.String("router-admin-listen", "127.0.0.1:8081", "the router's stats")
	noWorker := fs.Bool("no-worker", false, "do not run the worker (placement, convergence, rollouts) in this process: for running `bbs worker` separately")
	convergeEvery := fs.Duration("convergence-interval", boot.EnvDuration("BBS_CONVERGENCE_INTERVAL", workflows.DefaultConvergenceInterval), "how often convergence runs [BBS_CONVERGENCE_INTERVAL]")
	nZones := fs.Int("zones", 2, "zones to spread the cells over")
	cellExecutor := fs.String("cell-executor", "process", "process (real local processes) or sim")
	sshAddr := fs.String("ssh-proxy-listen", "127.0.0.1:2222", "the ssh proxy's address (\"\": no ssh proxy)")
	ccURL := fs.String("tps-cc-url", "", "Cloud Controller's internal API the tps-watcher reports crashes to (default: a stand-in that logs them to <data-dir>/cc.log)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := boot.NewLogger(*logLevel, true)
	if err != nil {
		return err
	}
	defer log.Sync()
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	dbURL, err := boot.SecretFromEnv("DATABASE_URL")
	if err != nil {
		return err
	}
	pgNote := "(from DATABASE_URL)"
	supervised := "the Temporal dev server is restarted if it dies (the log says so)"
	var pgFailed <-chan struct{}
	var pgSup *supervise.Supervisor
	if dbURL == "" {
		log.Info("starting PostgreSQL", zap.String("data", filepath.Join(dir, "postgres")))
		pgCfg := pgcluster.Config{
			DataDir: filepath.Join(dir, "postgres"),
			Port:    *pgPort,
			LogFile: filepath.Join(dir, "postgres.log"),
		}
		// A restart uses the same data directory (pgcluster clears the postmaster.pid a
		// killed server leaves) and port, so the store's pool simply reconnects.
		startPG := func(ctx context.Context) (supervise.Child, error) {
			pg, err := pgcluster.Start(ctx, pgCfg)
			if err != nil {
				return nil, err
			}
			log.Info("PostgreSQL is up", zap.Int("pid", pg.PID()), zap.Int("port", pg.Port()))
			return pg, nil
		}
		first, err := startPG(ctx)
		if err != nil {
			return err
		}
		pg := first.(*pgcluster.Cluster)
		pgSup = supervise.Watch("PostgreSQL", pg, startPG, supervise.DefaultPolicy, log)
		pgFailed = pgSup.Failed()
		defer func() {
			log.Info("stopping PostgreSQL")
			if err := pgSup.Stop(); err != nil {
				log.Error("stopping PostgreSQL", zap.Error(err))
			}
		}()
		if err := pg.CreateDatabase(ctx, "bbs"); err != nil {
			return err
		}
		dbURL = pg.URL("bbs")
		pgNote = fmt.Sprintf("(data in %s, log %s)", filepath.Join(*dataDir, "postgres"), filepath.Join(*dataDir, "postgres.log"))
		supervised = "PostgreSQL and the Temporal dev server are restarted if they die (the log says so)"
	}

	log.Info("starting the Temporal dev server")
	temporalLog := filepath.Join(dir, "temporal.log")
	tCfg := temporaldev.Config{
		Bin:     *temporalBin,
		DBFile:  filepath.Join(dir, "temporal.db"),
		Port:    *temporalPort,
		UIPort:  *uiPort,
		LogFile: temporalLog,
	}
	// A restart uses the same SQLite file, so workflows, schedules and the namespace are
	// still there; the API's and the worker's client (lazy, gRPC) reconnects by itself.
	startTemporal := func(ctx context.Context) (supervise.Child, error) {
		ts, err := temporaldev.Start(ctx, tCfg)
		if err != nil {
			return nil, err
		}
		log.Info("Temporal dev server is up", zap.Int("pid", ts.PID()), zap.String("address", ts.Address()))
		return ts, nil
	}
	first, err := startTemporal(ctx)
	if err != nil {
		return err
	}
	ts := first.(*temporaldev.Server)
	tsSup := supervise.Watch("Temporal dev server", ts, startTemporal, supervise.DefaultPolicy, log)
	defer func() {
		log.Info("stopping the Temporal dev server")
		tsSup.Stop()
	}()

	store, err := boot.OpenStore(ctx, dbURL, log)
	if err != nil {
		return err
	}
	defer store.Close()
	tcfg := system.TemporalConfig{Address: ts.Address(), Namespace: ts.Namespace()}
	temporal, err := system.LazyTemporal(tcfg, log)
	if err != nil {
		return err
	}
	defer temporal.Close()
	protocolTLS, certs, err := listenDevProtocolTLS(*protocolTLSAddr, dir)
	if err != nil {
		return fmt.Errorf("BBS protocol over TLS: %w", err)
	}
	// One process, one registry: the API serves every part's series at /metrics.
	reg := metrics.NewRegistry()
	ro, err := rf.options()
	if err != nil {
		if protocolTLS != nil {
			protocolTLS.Close()
		}
		return err
	}
	a, err := boot.StartAPI(ctx, store, *apiAddr, *protocolAddr, nil, system.APIConfig{ProtocolTLSListener: protocolTLS,
		Cells: cellapi.NewClient(nil), Temporal: temporal, Rollouts: ro, Metrics: reg, Log: log})
	if err != nil {
		if protocolTLS != nil {
			protocolTLS.Close()
		}
		return err
	}
	defer func() {
		log.Info("stopping the API")
		a.Stop()
	}()
	workerLine := fmt.Sprintf("task queue %q", worker.TaskQueue)
	if *noWorker {
		workerLine = "not started (--no-worker): run `bbs worker` yourself"
	} else {
		w, err := system.StartWorker(ctx, system.WorkerConfig{Store: store, Temporal: temporal,
			ConvergenceInterval: *convergeEvery, Rollouts: ro, Cells: cellapi.NewClient(nil), Metrics: reg, Log: log})
		if err != nil {
			return err
		}
		defer func() {
			log.Info("stopping the worker")
			w.Stop()
		}()
	}

	rt, err := system.StartRouter(ctx, system.RouterConfig{Listen: *routerAddr, Admin: *routerAdmin,
		BBS: bbsclient.New(a.URL(), nil), Metrics: reg, Log: log})
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping the router")
		rt.Stop()
	}()

	sshLine, sshProxy, err := startDevSSHProxy(ctx, *sshAddr, dir, *dataDir, a.URL(), log)
	if err != nil {
		return err
	}
	if sshProxy != nil {
		defer func() {
			log.Info("stopping the ssh proxy")
			sshProxy.Stop()
		}()
	}
	tpsLine, stopTPS, err := startDevTPSWatcher(ctx, *ccURL, dir, *dataDir, a.URL(), log)
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping the tps-watcher")
		stopTPS()
	}()

	log.Info("starting cells", zap.Int("cells", *nCells), zap.Int("zones", *nZones))
	cells, err := startDevCells(ctx, store, *nCells, *nZones, a.URL(), *cellExecutor, dir, log)
	defer func() {
		log.Info("stopping the cells")
		stopDevCells(cells, log)
	}()
	if err != nil {
		return err
	}
	cellLines := ""
	for _, c := range cells {
		cellLines += fmt.Sprintf("  Cell          %s in zone %s (%s executor, log %s)\n", c.id, c.zone, *cellExecutor,
			filepath.Join(*dataDir, filepath.Base(c.logFile)))
	}

	fmt.Printf(`
BBS dev stack is up:
  API           %s        try: curl -s -XPOST %s/v1/ping
  BBS protocol  %s
  BBS protocol  %s
  Temporal UI   http://localhost:%d
  Temporal      %s (namespace default, state in %s, log %s)
  Worker        %s
  Router        http://%s (apps by Host header; stats: http://%s/stats)
  SSH proxy     %s
  TPS watcher   %s
  PostgreSQL    %s %s
%s  Metrics       %s/metrics  (Prometheus: every part above but the cells, which serve none here; docs/METRICS.md)
  Supervision   %s
Ctrl-C stops everything; the next 'make run' resumes with the data kept.

`, a.URL(), a.URL(), protocolLine(a), protocolTLSLine(a, certs), *uiPort, ts.Address(), filepath.Join(*dataDir, "temporal.db"),
		filepath.Join(*dataDir, "temporal.log"), workerLine, *routerAddr, *routerAdmin, sshLine, tpsLine, boot.RedactURL(dbURL), pgNote, cellLines, a.URL(), supervised)

	select {
	case <-ctx.Done():
		fmt.Println()
		log.Info("shutting down")
		return nil
	case <-pgFailed:
		return pgSup.Err()
	case <-tsSup.Failed():
		return tsSup.Err()
	}
}

// protocolLine says where the BBS protocol is served, for the banner.
func protocolLine(a *system.API) string {
	if a.ProtocolURL() == "" {
		return "not served (--bbs-listen is empty)"
	}
	return a.ProtocolURL() + "  (protobuf, for Diego and Cloud Foundry clients: cfdot, Cloud Controller, ...)"
}
