package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/boot"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/internal/pgcluster"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/worker"
	"go.uber.org/zap"
)

// runClusterCommand runs the production topology on one machine, as `make cluster` does:
// one PostgreSQL holding the BBS's database and Temporal's two, the real Temporal server
// (tools/temporal-server) with its schema applied by its own SQL tool and its Web UI, two
// `bbs api` replicas behind `bbs lb`, two `bbs worker` processes, cells and the router —
// every one a process of its own, configured through the environment variables its
// subcommand reads, supervised (restarted with back-off when it dies). Every connection
// between them is mutual TLS, with the certificates deploy/gen-certs.sh makes (clusterCerts),
// as the production shape requires of listeners beyond loopback. Ctrl-C stops all of it in
// reverse order; the next run resumes with the data (and the certificates) kept.
func runClusterCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	dataDir := fs.String("data-dir", ".cluster", "where PostgreSQL keeps its data and every process its log")
	certsDir := fs.String("certs-dir", "", "the mutual-TLS certificates (ca.crt, server.crt/.key, client.crt/.key), made by deploy/gen-certs.sh unless ca.crt exists (default <data-dir>/certs)")
	listen := fs.String("listen", "127.0.0.1:8889", "the front of the JSON API (bbs lb)")
	protocolListen := fs.String("bbs-listen", "127.0.0.1:8890", "the front of the BBS protocol (bbs lb)")
	portBase := fs.Int("port-base", 17000, "internal ports: API replica N serves on base+10(N-1)+1 (JSON) and +2 (BBS protocol); the Temporal server's internal services on base+50 to base+63")
	pgPort := fs.Int("pg-port", 54339, "port of the cluster's PostgreSQL")
	temporalBin := fs.String("temporal-server-bin", boot.EnvOr("TEMPORAL_SERVER_BIN", ""), "the real Temporal server (default: bin/temporal-server, else temporal-server on PATH) [TEMPORAL_SERVER_BIN]")
	temporalPort := fs.Int("temporal-port", 7233, "Temporal frontend port")
	uiPort := fs.Int("temporal-ui-port", 8233, "Temporal Web UI port (0: no UI)")
	shards := fs.Int("history-shards", 4, "Temporal history shards (fixed once the cluster's databases exist)")
	apis := fs.Int("api-replicas", 2, "bbs api processes behind the front")
	workers := fs.Int("workers", 2, "bbs worker processes")
	nCells := fs.Int("cells", 3, "cell agents")
	nZones := fs.Int("zones", 2, "zones to spread the cells over")
	instancePorts := fs.Int("instance-port-base", 61000, "cell N gives its instances host ports from base+1000(N-1), a thousand each")
	cellExecutor := fs.String("cell-executor", "process", "process (real local processes) or sim")
	routerAddr := fs.String("router-listen", "127.0.0.1:8080", "the router's address (apps by Host header)")
	routerAdmin := fs.String("router-admin-listen", "127.0.0.1:8081", "the router's stats")
	metricsBase := fs.Int("metrics-port-base", 9890, "metrics listeners (GET /metrics, plain HTTP; deploy/prometheus-cluster.yml): bbs lb on base, worker N on base+N, cell N on base+10+N, API replica N on base+20+N; the router serves /metrics on its stats address")
	convergeEvery := fs.Duration("convergence-interval", 0, "how often convergence runs (0: the worker's default) [BBS_CONVERGENCE_INTERVAL for the workers]")
	logLevel := boot.LogLevelFlag(fs)
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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tbin := *temporalBin
	if tbin == "" {
		if tbin, err = temporaldev.FindServerBin(); err != nil {
			return err
		}
	}
	version, err := exec.Command(tbin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", tbin, err)
	}
	rel := func(name string) string { return filepath.Join(*dataDir, name) }
	if *certsDir == "" {
		*certsDir = rel("certs")
	}
	certsAbs, err := filepath.Abs(*certsDir)
	if err != nil {
		return err
	}
	certs, made, err := makeClusterCerts(ctx, certsAbs)
	if err != nil {
		return err
	}
	log.Info(made)
	temporalTLS, err := certs.temporalTLS()
	if err != nil {
		return err
	}
	c := &cluster{log: log, dir: dir}
	defer c.stopAll()

	// PostgreSQL: the BBS's database and Temporal's two.
	log.Info("starting PostgreSQL", zap.String("data", filepath.Join(dir, "postgres")))
	pgCfg := pgcluster.Config{DataDir: filepath.Join(dir, "postgres"), Port: *pgPort, LogFile: filepath.Join(dir, "postgres.log")}
	startPG := func(ctx context.Context) (supervise.Child, error) { return pgcluster.Start(ctx, pgCfg) }
	first, err := startPG(ctx)
	if err != nil {
		return err
	}
	pg := first.(*pgcluster.Cluster)
	c.watch("PostgreSQL", first, startPG)
	for _, name := range []string{"bbs", "temporal", "temporal_visibility"} {
		if err := pg.CreateDatabase(ctx, name); err != nil {
			return err
		}
	}
	dbURL := pg.URL("bbs")

	// Temporal: schema, server, namespace, UI.
	log.Info("applying Temporal's schema with its SQL tool", zap.String("log", rel("temporal-schema.log")))
	if err := applyTemporalSchema(ctx, tbin, *pgPort, pg.URL, filepath.Join(dir, "temporal-schema.log"), log); err != nil {
		return err
	}
	tPorts := newTemporalPorts(*temporalPort, *portBase)
	tDir := filepath.Join(dir, "temporal")
	if err := writeTemporalConfig(tDir, *pgPort, tPorts, *shards, certs.temporalServerTLS()); err != nil {
		return err
	}
	log.Info("starting the Temporal server", zap.String("version", strings.TrimSpace(string(version))))
	startTemporal := func(ctx context.Context) (supervise.Child, error) {
		return startTemporalServer(ctx, tbin, tDir, filepath.Join(dir, "temporal.log"), c.pidFile("temporal"), *temporalPort)
	}
	if err := c.start(ctx, "Temporal server", startTemporal); err != nil {
		return err
	}
	temporalAddr := fmt.Sprintf("127.0.0.1:%d", *temporalPort)
	tcfg := system.TemporalConfig{Address: temporalAddr, Namespace: "default", TLS: temporalTLS}
	log.Info("setting up the Temporal namespace")
	if err := setUpNamespace(ctx, tcfg, 72*time.Hour, log); err != nil {
		return err
	}
	uiLine := "not served (--temporal-ui-port 0)"
	if *uiPort != 0 {
		uiAddr := fmt.Sprintf("127.0.0.1:%d", *uiPort)
		if err := c.process(ctx, "Temporal UI", supervise.Command{Path: tbin,
			Args:    append([]string{"ui", "--listen", uiAddr, "--frontend", temporalAddr, "--namespace", tcfg.Namespace}, certs.temporalUIArgs()...),
			LogFile: filepath.Join(dir, "temporal-ui.log"), ReadyAddr: uiAddr}); err != nil {
			return err
		}
		uiLine = fmt.Sprintf("http://localhost:%d  (the ui-server's embedded assets, for the frontend above)", *uiPort)
	}

	// The BBS's migrations, once, before its processes race for them.
	store, err := boot.OpenStore(ctx, dbURL, log)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}

	// Every bbs process calls its peers with the client certificate; those that listen
	// require one.
	common := merge(map[string]string{"BBS_LOG_LEVEL": *logLevel}, certs.peerEnv())
	listening := merge(common, certs.serverEnv())
	withTemporal := merge(map[string]string{"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": temporalAddr, "TEMPORAL_NAMESPACE": tcfg.Namespace},
		certs.temporalEnv())
	// Metrics on listeners of their own, plain HTTP (docs/METRICS.md): the replicas' and the
	// cells' listeners require a client certificate.
	metricsAt := func(port int) map[string]string {
		return map[string]string{"BBS_METRICS_LISTEN_ADDR": fmt.Sprintf("127.0.0.1:%d", port)}
	}
	var apiBackends, protocolBackends, apiLines []string
	for i := 1; i <= *apis; i++ {
		name := fmt.Sprintf("api-%d", i)
		addr := fmt.Sprintf("127.0.0.1:%d", *portBase+10*(i-1)+1)
		paddr := fmt.Sprintf("127.0.0.1:%d", *portBase+10*(i-1)+2)
		if err := c.bbs(ctx, name, self, []string{"api"}, merge(listening, withTemporal, metricsAt(*metricsBase+20+i), map[string]string{
			"BBS_LISTEN_ADDR": addr, "BBS_PROTOCOL_LISTEN_ADDR": paddr}), addr, syscall.SIGTERM); err != nil {
			return err
		}
		apiBackends, protocolBackends = append(apiBackends, addr), append(protocolBackends, paddr)
		apiLines = append(apiLines, fmt.Sprintf("%s https://%s (BBS protocol https://%s, log %s)", name, addr, paddr, rel(name+".log")))
	}
	if err := c.bbs(ctx, "lb", self, []string{"lb"}, merge(listening, metricsAt(*metricsBase), map[string]string{
		"BBS_LB_LISTEN_ADDR": *listen, "BBS_LB_BACKENDS": strings.Join(apiBackends, ","),
		"BBS_LB_PROTOCOL_LISTEN_ADDR": *protocolListen, "BBS_LB_PROTOCOL_BACKENDS": strings.Join(protocolBackends, ","),
	}), *listen, syscall.SIGTERM); err != nil {
		return err
	}
	frontURL := "https://" + *listen
	workerEnv := merge(common, withTemporal)
	if *convergeEvery > 0 {
		workerEnv["BBS_CONVERGENCE_INTERVAL"] = convergeEvery.String()
	}
	var workerNames []string
	for i := 1; i <= *workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		if err := c.bbs(ctx, name, self, []string{"worker"}, merge(workerEnv, metricsAt(*metricsBase+i)), "", syscall.SIGTERM); err != nil {
			return err
		}
		workerNames = append(workerNames, fmt.Sprintf("%s (log %s)", name, rel(name+".log")))
	}
	if err := c.bbs(ctx, "router", self, []string{"router"}, merge(common, map[string]string{
		"BBS_ROUTER_LISTEN_ADDR": *routerAddr, "BBS_ROUTER_ADMIN_ADDR": *routerAdmin, "BBS_API_URL": frontURL,
	}), *routerAddr, syscall.SIGTERM); err != nil {
		return err
	}
	var cellLines, cellIDs []string
	for i := 1; i <= *nCells; i++ {
		id, zone := fmt.Sprintf("cell-%d", i), fmt.Sprintf("z%d", (i-1)%*nZones+1)
		work := filepath.Join(dir, "cells", id)
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		first := *instancePorts + (i-1)*1000
		// SIGINT stops a cell at once (its instances stop, its presence is withdrawn), as
		// Ctrl-C would; SIGTERM would drain it first.
		if err := c.bbs(ctx, id, self, []string{"cell"}, merge(listening, metricsAt(*metricsBase+10+i), map[string]string{
			"BBS_CELL_ID": id, "BBS_CELL_ZONE": zone, "BBS_API_URL": frontURL, "BBS_CELL_EXECUTOR": *cellExecutor,
			"BBS_CELL_WORK_DIR": work, "BBS_CELL_PORT_RANGE": fmt.Sprintf("%d-%d", first, first+999),
		}), "", syscall.SIGINT); err != nil {
			return err
		}
		cellIDs = append(cellIDs, id)
		cellLines = append(cellLines, fmt.Sprintf("%s in zone %s (%s executor, log %s)", id, zone, *cellExecutor, rel(id+".log")))
	}
	if err := boot.WaitForCells(ctx, store, cellIDs, 60*time.Second, nil); err != nil {
		return fmt.Errorf("%w; see %s", err, rel("cell-*.log"))
	}

	fmt.Printf(`
BBS cluster is up (the production topology on one machine):
  API           %s  (bbs lb: round robin over the replicas, failover)
  BBS protocol  https://%s  (bbs lb, to each replica's protocol listener)
  Mutual TLS    on between all processes: every listener (front, replicas, cells, Temporal) requires a
                certificate from the cluster's CA; certificates by deploy/gen-certs.sh in %s. Try:
                %s
  API replicas  %s
  Workers       %s
                task queue %q; placement leads in one worker at a time (advisory lock), one convergence schedule
  Temporal      %s  (go.temporal.io/server %s: frontend, history, matching, worker in one process; %d history shards;
                namespace %s; databases temporal, temporal_visibility; config %s; log %s)
  Temporal UI   %s
  Router        http://%s (apps by Host header; stats: http://%s/stats; log %s)
  Cells         %s
  PostgreSQL    %s  (data in %s, log %s)
  Metrics       GET /metrics over plain HTTP: lb on 127.0.0.1:%d, worker N on +N, cell N on +10+N, API replica N on
                +20+N, the router on its stats address (Prometheus: deploy/prometheus-cluster.yml, Grafana:
                deploy/grafana-dashboard.json)
  Processes     each is restarted if it dies (the log says so); pids in %s/<name>.pid
Ctrl-C stops everything; the next 'make cluster' resumes with the data kept.

`, frontURL, *protocolListen, *certsDir, howToCall(*certsDir, frontURL, temporalAddr), strings.Join(apiLines, "\n                "), strings.Join(workerNames, ", "),
		worker.TaskQueue, temporalAddr, strings.TrimSpace(string(version)), *shards, tcfg.Namespace, rel("temporal/cluster.yaml"),
		rel("temporal.log"), uiLine, *routerAddr, *routerAdmin, rel("router.log"),
		strings.Join(cellLines, "\n                "), boot.RedactURL(dbURL), rel("postgres"), rel("postgres.log"), *metricsBase, rel("run"))

	select {
	case <-ctx.Done():
		fmt.Println()
		log.Info("shutting down")
		return nil
	case err := <-c.failed:
		return err
	}
}

// cluster is the set of supervised children of `bbs cluster`, in start order.
type cluster struct {
	log      *zap.Logger
	dir      string
	children []*clusterChild
	failed   chan error
}

type clusterChild struct {
	name string
	sup  *supervise.Supervisor
}

func (c *cluster) pidFile(name string) string { return filepath.Join(c.dir, "run", name+".pid") }

// watch supervises a child that is running, restarting it with start when it dies.
func (c *cluster) watch(name string, first supervise.Child, start func(context.Context) (supervise.Child, error)) {
	if c.failed == nil {
		c.failed = make(chan error, 1)
	}
	s := supervise.Watch(name, first, start, supervise.DefaultPolicy, c.log)
	c.children = append(c.children, &clusterChild{name: name, sup: s})
	go func() {
		<-s.Failed()
		select {
		case c.failed <- s.Err():
		default:
		}
	}()
	c.log.Info(name+" is up", zap.Int("pid", first.PID()))
}

// start starts a child with start and supervises it.
func (c *cluster) start(ctx context.Context, name string, start func(context.Context) (supervise.Child, error)) error {
	first, err := start(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.watch(name, first, start)
	return nil
}

// process starts and supervises a child process described by cmd, its pid file named after
// name's first word in lower case ("Temporal UI" → run/temporal-ui.pid).
func (c *cluster) process(ctx context.Context, name string, cmd supervise.Command) error {
	if cmd.PIDFile == "" {
		cmd.PIDFile = c.pidFile(strings.ToLower(strings.ReplaceAll(name, " ", "-")))
	}
	return c.start(ctx, name, func(ctx context.Context) (supervise.Child, error) { return supervise.Start(ctx, cmd) })
}

// bbs starts `bbs <args>` as the child name, configured by env (on top of ours, without any
// BBS_, DATABASE_URL or TEMPORAL_ setting of our own, so that the children get exactly what
// the banner says), its output in <dir>/<name>.log; ready once it listens on ready, if set.
func (c *cluster) bbs(ctx context.Context, name, self string, args []string, env map[string]string, ready string, stop syscall.Signal) error {
	return c.process(ctx, name, supervise.Command{Path: self, Args: args, Env: childEnv(env),
		LogFile: filepath.Join(c.dir, name+".log"), PIDFile: c.pidFile(name), ReadyAddr: ready,
		StopSignal: stop, StopTimeout: 30 * time.Second})
}

// stopAll stops the children in reverse order: cells first (they withdraw their presence
// through the API), PostgreSQL last.
func (c *cluster) stopAll() {
	for i := len(c.children) - 1; i >= 0; i-- {
		ch := c.children[i]
		c.log.Info("stopping " + ch.name)
		if err := ch.sup.Stop(); err != nil {
			c.log.Error("stopping "+ch.name, zap.Error(err))
		}
	}
}

// childEnv is our environment without the settings `bbs cluster` decides, plus env.
func childEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "BBS_") || strings.HasPrefix(name, "DATABASE_URL") || strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "SSHD_") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
