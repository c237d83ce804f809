package clusterstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/updatable-lrps/bbs/internal/gctune"
	"github.com/updatable-lrps/bbs/internal/pgcluster"
	"github.com/updatable-lrps/bbs/internal/supervise"
	"github.com/updatable-lrps/bbs/internal/system"
	"go.uber.org/zap"
)

// startPostgres starts PostgreSQL, supervised, with the BBS's database and Temporal's two.
func (c *cluster) startPostgres(ctx context.Context) error {
	c.log.Info("starting PostgreSQL", zap.String("data", filepath.Join(c.dir, "postgres")))
	pgCfg := pgcluster.Config{DataDir: filepath.Join(c.dir, "postgres"), Port: c.cfg.PGPort, LogFile: filepath.Join(c.dir, "postgres.log")}
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
	c.dbURL = pg.URL("bbs")
	c.pgURL = pg.URL
	return nil
}

// startTemporal applies Temporal's schema, writes the server's configuration, starts the
// server, supervised, and sets up the namespace.
func (c *cluster) startTemporal(ctx context.Context) error {
	c.log.Info("applying Temporal's schema with its SQL tool", zap.String("log", c.rel("temporal-schema.log")))
	if err := applyTemporalSchema(ctx, c.tbin, c.cfg.PGPort, c.pgURL, filepath.Join(c.dir, "temporal-schema.log"), c.log); err != nil {
		return err
	}
	tDir := filepath.Join(c.dir, "temporal")
	ports := newTemporalPorts(c.cfg.TemporalPort, c.cfg.PortBase)
	if err := writeTemporalConfig(tDir, c.cfg.PGPort, ports, c.cfg.HistoryShards, c.certs.temporalServerTLS()); err != nil {
		return err
	}
	c.log.Info("starting the Temporal server", zap.String("version", c.version))
	startTemporal := func(ctx context.Context) (supervise.Child, error) {
		return startTemporalServer(ctx, c.tbin, tDir, filepath.Join(c.dir, "temporal.log"), c.pidFile("temporal"), c.cfg.TemporalPort)
	}
	if err := c.start(ctx, "Temporal server", startTemporal); err != nil {
		return err
	}
	c.temporalAddr, c.namespace = fmt.Sprintf("127.0.0.1:%d", c.cfg.TemporalPort), "default"
	c.log.Info("setting up the Temporal namespace")
	tcfg := system.TemporalConfig{Address: c.temporalAddr, Namespace: c.namespace, TLS: c.temporalTLS}
	return setUpNamespace(ctx, tcfg, 72*time.Hour, c.log)
}

// startTemporalServer starts the server process from the configuration in dir, returning once
// its frontend accepts connections.
func startTemporalServer(ctx context.Context, bin, dir, logFile, pidFile string, frontend int) (*supervise.Process, error) {
	return supervise.Start(ctx, supervise.Command{
		Path: bin, Args: []string{"start", "--config-dir", dir, "--env", "cluster"},
		Env: gctune.Env(os.Environ()), LogFile: logFile, PIDFile: pidFile,
		ReadyAddr: fmt.Sprintf("127.0.0.1:%d", frontend), ReadyTimeout: 2 * time.Minute,
		StopTimeout: 20 * time.Second,
	})
}

// startUI starts the Temporal Web UI (the ui-server's embedded assets), supervised, unless
// its port is 0.
func (c *cluster) startUI(ctx context.Context) error {
	if c.cfg.TemporalUIPort == 0 {
		c.uiLine = "not served (--temporal-ui-port 0)"
		return nil
	}
	uiAddr := fmt.Sprintf("127.0.0.1:%d", c.cfg.TemporalUIPort)
	if err := c.process(ctx, "Temporal UI", supervise.Command{Path: c.tbin,
		Args:    append([]string{"ui", "--listen", uiAddr, "--frontend", c.temporalAddr, "--namespace", c.namespace}, c.certs.temporalUIArgs()...),
		LogFile: filepath.Join(c.dir, "temporal-ui.log"), ReadyAddr: uiAddr}); err != nil {
		return err
	}
	c.uiLine = fmt.Sprintf("http://localhost:%d  (the ui-server's embedded assets, for the frontend above)", c.cfg.TemporalUIPort)
	return nil
}
