package main

import (
	"context"
	"os"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/clusterstack"
)

// runClusterCommand runs the production topology on one machine, as `make cluster` does
// (internal/clusterstack): PostgreSQL, the real Temporal server and its UI, API replicas
// behind `bbs lb`, workers, cells and the router, each a supervised process, mutual TLS
// between them. Ctrl-C stops all of it in reverse order; the next run resumes with the data
// (and the certificates) kept.
func runClusterCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("cluster")
	cmd.ConsoleLog()
	fs := cmd.Flags
	var cfg clusterstack.Config
	fs.StringVar(&cfg.DataDir, "data-dir", ".cluster", "where PostgreSQL keeps its data and every process its log")
	fs.StringVar(&cfg.CertsDir, "certs-dir", "", "the mutual-TLS certificates (ca.crt, server.crt/.key, client.crt/.key), made by deploy/gen-certs.sh unless ca.crt exists (default <data-dir>/certs)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8889", "the front of the JSON API (bbs lb)")
	fs.StringVar(&cfg.ProtocolListen, "bbs-listen", "127.0.0.1:8890", "the front of the BBS protocol (bbs lb)")
	fs.IntVar(&cfg.PortBase, "port-base", 17000, "internal ports: API replica N serves on base+10(N-1)+1 (JSON) and +2 (BBS protocol); the Temporal server's internal services on base+50 to base+63")
	fs.IntVar(&cfg.PGPort, "pg-port", 54339, "port of the cluster's PostgreSQL")
	fs.StringVar(&cfg.TemporalServerBin, "temporal-server-bin", boot.EnvOr("TEMPORAL_SERVER_BIN", ""), "the real Temporal server (default: bin/temporal-server, else temporal-server on PATH) [TEMPORAL_SERVER_BIN]")
	fs.IntVar(&cfg.TemporalPort, "temporal-port", 7233, "Temporal frontend port")
	fs.IntVar(&cfg.TemporalUIPort, "temporal-ui-port", 8233, "Temporal Web UI port (0: no UI)")
	fs.IntVar(&cfg.HistoryShards, "history-shards", 4, "Temporal history shards (fixed once the cluster's databases exist)")
	fs.IntVar(&cfg.APIReplicas, "api-replicas", 2, "bbs api processes behind the front")
	fs.IntVar(&cfg.Workers, "workers", 2, "bbs worker processes")
	fs.IntVar(&cfg.Cells, "cells", 3, "cell agents")
	fs.IntVar(&cfg.Zones, "zones", 2, "zones to spread the cells over")
	fs.IntVar(&cfg.InstancePortBase, "instance-port-base", 61000, "cell N gives its instances host ports from base+1000(N-1), a thousand each")
	fs.StringVar(&cfg.CellExecutor, "cell-executor", "process", "process (real local processes) or sim")
	fs.IntVar(&cfg.CellMemoryMB, "cell-memory-mb", 0, "each cell's memory capacity (0: bbs cell's default, 8192)")
	fs.IntVar(&cfg.CellDiskMB, "cell-disk-mb", 0, "each cell's disk capacity (0: bbs cell's default, 16384)")
	fs.IntVar(&cfg.CellContainers, "cell-containers", 0, "each cell's container capacity (0: bbs cell's default, 100)")
	fs.StringVar(&cfg.RouterAddr, "router-listen", "127.0.0.1:8080", "the router's address (apps by Host header)")
	fs.StringVar(&cfg.RouterAdminAddr, "router-admin-listen", "127.0.0.1:8081", "the router's stats")
	fs.IntVar(&cfg.MetricsPortBase, "metrics-port-base", 9890, "metrics listeners (GET /metrics, plain HTTP; deploy/prometheus-cluster.yml): bbs lb on base, worker N on base+N, cell N on base+10+N, API replica N on base+20+N; the router serves /metrics on its stats address")
	fs.DurationVar(&cfg.ConvergenceInterval, "convergence-interval", 0, "how often convergence runs (0: the worker's default) [BBS_CONVERGENCE_INTERVAL for the workers]")
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg.LogLevel, cfg.Log, cfg.Out = cmd.LogLevel(), p.Log, os.Stdout
	return clusterstack.Run(ctx, cfg)
}
