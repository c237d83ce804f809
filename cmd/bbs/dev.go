package main

import (
	"context"
	"os"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/devstack"
	"github.com/updatable-lrps/bbs/workflows"
)

// runDevCommand runs the whole system on one machine, as `make run` does (internal/devstack):
// a private PostgreSQL cluster under the data directory (unless DATABASE_URL is set), the
// Temporal dev server with its Web UI, migrations, the API and the worker. Ctrl-C stops all
// of it; the next run resumes with the data kept.
func runDevCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("dev")
	cmd.ConsoleLog()
	fs := cmd.Flags
	var cfg devstack.Config
	fs.StringVar(&cfg.DataDir, "data-dir", boot.EnvOr("BBS_DATA_DIR", ".data"), "where PostgreSQL and Temporal keep their state [BBS_DATA_DIR]")
	fs.StringVar(&cfg.APIAddr, "listen", boot.EnvOr("BBS_LISTEN_ADDR", "127.0.0.1:8889"), "API address [BBS_LISTEN_ADDR]")
	protocolAddr := protocolListenFlag(fs)
	fs.StringVar(&cfg.ProtocolTLSAddr, "bbs-tls-listen", boot.EnvOr("BBS_PROTOCOL_TLS_LISTEN_ADDR", "127.0.0.1:8891"),
		"address to serve the BBS protocol over mutual TLS too, with certificates made in <data-dir>/certs (cfdot speaks only https); empty: not served [BBS_PROTOCOL_TLS_LISTEN_ADDR]")
	fs.IntVar(&cfg.PGPort, "pg-port", 54329, "port of the private PostgreSQL (ignored when DATABASE_URL is set)")
	fs.StringVar(&cfg.TemporalBin, "temporal-bin", boot.EnvOr("TEMPORAL_BIN", ""), "temporal CLI (default: bin/temporal, else temporal on PATH) [TEMPORAL_BIN]")
	fs.IntVar(&cfg.TemporalPort, "temporal-port", 7233, "Temporal frontend port")
	fs.IntVar(&cfg.TemporalUIPort, "temporal-ui-port", 8233, "Temporal Web UI port")
	fs.IntVar(&cfg.Cells, "cells", 3, "cell agents to run")
	var rf rolloutFlags
	rf.register(fs)
	fs.StringVar(&cfg.RouterAddr, "router-listen", "127.0.0.1:8080", "the router's address (apps by Host header)")
	fs.StringVar(&cfg.RouterAdminAddr, "router-admin-listen", "127.0.0.1:8081", "the router's stats")
	fs.BoolVar(&cfg.NoWorker, "no-worker", false, "do not run the worker (placement, convergence, rollouts) in this process: for running `bbs worker` separately")
	fs.DurationVar(&cfg.ConvergenceInterval, "convergence-interval", boot.EnvDuration("BBS_CONVERGENCE_INTERVAL", workflows.DefaultConvergenceInterval), "how often convergence runs [BBS_CONVERGENCE_INTERVAL]")
	fs.IntVar(&cfg.Zones, "zones", 2, "zones to spread the cells over")
	fs.StringVar(&cfg.CellExecutor, "cell-executor", "process", "process (real local processes) or sim")
	fs.StringVar(&cfg.SSHProxyAddr, "ssh-proxy-listen", "127.0.0.1:2222", "the ssh proxy's address (\"\": no ssh proxy)")
	fs.StringVar(&cfg.CCURL, "tps-cc-url", "", "Cloud Controller's internal API the tps-watcher reports crashes to (default: a stand-in that logs them to <data-dir>/cc.log)")
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg.ProtocolAddr, cfg.Log, cfg.Out = *protocolAddr, p.Log, os.Stdout
	if cfg.Rollouts, err = rf.options(); err != nil {
		return err
	}
	if cfg.DatabaseURL, err = boot.SecretFromEnv("DATABASE_URL"); err != nil {
		return err
	}
	return devstack.Run(ctx, cfg)
}
