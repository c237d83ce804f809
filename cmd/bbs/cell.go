package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// runCellCommand runs a cell agent. SIGTERM drains it (its instances move to other cells
// before it exits); SIGINT (Ctrl-C) stops it at once.
func runCellCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cell", flag.ContinueOnError)
	host, _ := os.Hostname()
	id := fs.String("id", envOr("BBS_CELL_ID", host), "cell id [BBS_CELL_ID]")
	zone := fs.String("zone", envOr("BBS_CELL_ZONE", "z1"), "availability zone [BBS_CELL_ZONE]")
	memory := fs.Int("memory-mb", envInt("BBS_CELL_MEMORY_MB", 8192), "memory capacity [BBS_CELL_MEMORY_MB]")
	disk := fs.Int("disk-mb", envInt("BBS_CELL_DISK_MB", 16384), "disk capacity [BBS_CELL_DISK_MB]")
	containers := fs.Int("containers", envInt("BBS_CELL_CONTAINERS", 100), "container capacity [BBS_CELL_CONTAINERS]")
	tags := fs.String("placement-tags", envOr("BBS_CELL_PLACEMENT_TAGS", ""), "comma-separated placement tags [BBS_CELL_PLACEMENT_TAGS]")
	listenAddr := fs.String("listen", envOr("BBS_CELL_LISTEN_ADDR", "127.0.0.1:0"), "the cell's own API [BBS_CELL_LISTEN_ADDR]")
	advertise := fs.String("advertise-url", envOr("BBS_CELL_ADVERTISE_URL", ""), "how others reach the cell's API, when not its listen address (e.g. https://cell-z1:1800) [BBS_CELL_ADVERTISE_URL]")
	apiURL := fs.String("api-url", envOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	kind := fs.String("executor", envOr("BBS_CELL_EXECUTOR", "process"), "process (real local processes) or sim (simulated instances) [BBS_CELL_EXECUTOR]")
	workDir := fs.String("work-dir", envOr("BBS_CELL_WORK_DIR", ""), "where process instances get their directories (default: a temporary directory) [BBS_CELL_WORK_DIR]")
	ports := fs.String("port-range", envOr("BBS_CELL_PORT_RANGE", "61000-61999"), "host ports for instances, FIRST-LAST [BBS_CELL_PORT_RANGE]")
	monitorEvery := fs.Duration("monitor-interval", 500*time.Millisecond, "health check interval until healthy")
	healthyEvery := fs.Duration("healthy-monitor-interval", 30*time.Second, "health check interval once RUNNING")
	pollEvery := fs.Duration("poll-interval", 5*time.Second, "reconciliation poll interval")
	grace := fs.Duration("stop-grace", 10*time.Second, "SIGTERM → SIGKILL grace period for instances")
	evacTimeout := fs.Duration("evacuation-timeout", 10*time.Minute, "longest drain")
	stopDrain := fs.Duration("stop-drain", envDuration("BBS_CELL_STOP_DRAIN", 2*time.Second), "how long a stopped instance keeps serving after routers were told to deregister it [BBS_CELL_STOP_DRAIN]")
	logLevel := logLevelFlag(fs)
	var serverTLS tlsFlags
	serverTLS.register(fs)
	metricsOpts := registerMetrics(fs, "", &serverTLS)
	var clientTLS clientTLSFlags
	clientTLS.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	reg, stopMetrics, err := metricsOpts.start(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	var first, last uint32
	if _, err := fmt.Sscanf(*ports, "%d-%d", &first, &last); err != nil || first == 0 || last < first {
		return fmt.Errorf("--port-range %q: want FIRST-LAST", *ports)
	}
	backend, skipProbe, cleanup, err := system.Backend(*kind, *workDir, 0, log)
	if err != nil {
		return err
	}
	defer cleanup()
	// The cell runs whatever command it is handed: beyond loopback only mutual TLS will do.
	listenTLS, err := serverTLS.serverConfig()
	if err != nil {
		return err
	}
	ln, scheme, err := system.Listen(*listenAddr, listenTLS)
	if err != nil {
		return err
	}
	apiTLS, err := clientTLS.config()
	if err != nil {
		return err
	}
	var placementTags []string
	if *tags != "" {
		placementTags = strings.Split(*tags, ",")
	}
	agent := system.NewCell(system.CellConfig{
		Agent: cell.Config{
			ID: *id, Zone: *zone, PlacementTags: placementTags, Listener: ln, AdvertiseScheme: scheme, AdvertiseURL: *advertise,
			Capacity:          model.CellCapacity{MemoryMB: int32(*memory), DiskMB: int32(*disk), Containers: int32(*containers)},
			PollInterval:      *pollEvery,
			EvacuationTimeout: *evacTimeout,
			StopDrain:         *stopDrain,
		},
		Executor: executor.Config{
			PortRangeStart: first, PortRangeEnd: last, MonitorInterval: *monitorEvery,
			HealthyMonitorInterval: *healthyEvery, StopGracePeriod: *grace, Log: os.Stdout, SkipPortProbe: skipProbe,
		},
		Backend: backend,
		BBS:     bbsclient.New(*apiURL, apiTLS),
		Metrics: reg,
		Log:     log,
	}).Agent

	drain := make(chan os.Signal, 1)
	signal.Notify(drain, syscall.SIGTERM)
	defer signal.Stop(drain)
	go func() {
		select {
		case <-drain:
			log.Info("SIGTERM: draining")
			agent.Drain()
		case <-ctx.Done():
		}
	}()
	return agent.Run(ctx, func(rep string) {
		log.Info("cell ready", zap.String("rep", rep))
	})
}

func envInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscanf(os.Getenv(name), "%d", &v); err == nil {
		return v
	}
	return def
}
