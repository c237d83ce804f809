package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// cellFlags are the flags of `bbs cell`, in the shape of the configuration they make.
type cellFlags struct {
	agent                cell.Config
	exec                 executor.Config
	memory, disk, count  int
	tags, listen, apiURL string
	kind, workDir, ports string
}

// register registers the cell's flags on the command.
func (c *cellFlags) register(cmd *boot.Command) {
	fs := cmd.Flags
	host, _ := os.Hostname()
	fs.StringVar(&c.agent.ID, "id", boot.EnvOr("BBS_CELL_ID", host), "cell id [BBS_CELL_ID]")
	fs.StringVar(&c.agent.Zone, "zone", boot.EnvOr("BBS_CELL_ZONE", "z1"), "availability zone [BBS_CELL_ZONE]")
	fs.IntVar(&c.memory, "memory-mb", boot.EnvInt("BBS_CELL_MEMORY_MB", 8192), "memory capacity [BBS_CELL_MEMORY_MB]")
	fs.IntVar(&c.disk, "disk-mb", boot.EnvInt("BBS_CELL_DISK_MB", 16384), "disk capacity [BBS_CELL_DISK_MB]")
	fs.IntVar(&c.count, "containers", boot.EnvInt("BBS_CELL_CONTAINERS", 100), "container capacity [BBS_CELL_CONTAINERS]")
	fs.StringVar(&c.tags, "placement-tags", boot.EnvOr("BBS_CELL_PLACEMENT_TAGS", ""), "comma-separated placement tags [BBS_CELL_PLACEMENT_TAGS]")
	fs.StringVar(&c.listen, "listen", boot.EnvOr("BBS_CELL_LISTEN_ADDR", "127.0.0.1:0"), "the cell's own API [BBS_CELL_LISTEN_ADDR]")
	fs.StringVar(&c.agent.AdvertiseURL, "advertise-url", boot.EnvOr("BBS_CELL_ADVERTISE_URL", ""), "how others reach the cell's API, when not its listen address (e.g. https://cell-z1:1800) [BBS_CELL_ADVERTISE_URL]")
	fs.StringVar(&c.apiURL, "api-url", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	fs.StringVar(&c.kind, "executor", boot.EnvOr("BBS_CELL_EXECUTOR", "process"), "process (real local processes) or sim (simulated instances) [BBS_CELL_EXECUTOR]")
	fs.StringVar(&c.workDir, "work-dir", boot.EnvOr("BBS_CELL_WORK_DIR", ""), "where process instances get their directories (default: a temporary directory) [BBS_CELL_WORK_DIR]")
	fs.StringVar(&c.ports, "port-range", boot.EnvOr("BBS_CELL_PORT_RANGE", "61000-61999"), "host ports for instances, FIRST-LAST [BBS_CELL_PORT_RANGE]")
	fs.DurationVar(&c.exec.MonitorInterval, "monitor-interval", 500*time.Millisecond, "health check interval until healthy")
	fs.DurationVar(&c.exec.HealthyMonitorInterval, "healthy-monitor-interval", 30*time.Second, "health check interval once RUNNING")
	fs.DurationVar(&c.agent.PollInterval, "poll-interval", 5*time.Second, "reconciliation poll interval")
	fs.DurationVar(&c.exec.StopGracePeriod, "stop-grace", 10*time.Second, "SIGTERM → SIGKILL grace period for instances")
	fs.DurationVar(&c.agent.EvacuationTimeout, "evacuation-timeout", 10*time.Minute, "longest drain")
	fs.DurationVar(&c.agent.StopDrain, "stop-drain", boot.EnvDuration("BBS_CELL_STOP_DRAIN", 2*time.Second), "how long a stopped instance keeps serving after routers were told to deregister it [BBS_CELL_STOP_DRAIN]")
}

// runCellCommand runs a cell agent. SIGTERM drains it (its instances move to other cells
// before it exits); SIGINT (Ctrl-C) stops it at once.
func runCellCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("cell")
	var cf cellFlags
	cf.register(cmd)
	cmd.ServerTLS()
	cmd.Metrics("")
	cmd.PeerTLS()
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	agent, cleanup, err := cf.newAgent(p)
	if err != nil {
		return err
	}
	defer cleanup()
	drain := make(chan os.Signal, 1)
	signal.Notify(drain, syscall.SIGTERM)
	defer signal.Stop(drain)
	go func() {
		select {
		case <-drain:
			p.Log.Info("SIGTERM: draining")
			agent.Drain()
		case <-ctx.Done():
		}
	}()
	return agent.Run(ctx, func(rep string) {
		p.Log.Info("cell ready", zap.String("rep", rep))
	})
}

// newAgent makes the cell agent of the flags: its executor's backend (cleanup removes what
// it made) and its listener, which, since the cell runs whatever command it is handed,
// requires mutual TLS beyond loopback.
func (c *cellFlags) newAgent(p *boot.Process) (agent *cell.Agent, cleanup func(), err error) {
	var first, last uint32
	if _, err := fmt.Sscanf(c.ports, "%d-%d", &first, &last); err != nil || first == 0 || last < first {
		return nil, nil, fmt.Errorf("--port-range %q: want FIRST-LAST", c.ports)
	}
	backend, skipProbe, cleanup, err := system.Backend(c.kind, c.workDir, 0, p.Log)
	if err != nil {
		return nil, nil, err
	}
	ln, scheme, err := system.Listen(c.listen, p.ServerTLS)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	agentCfg := c.agent
	agentCfg.Listener, agentCfg.AdvertiseScheme = ln, scheme
	agentCfg.Capacity = model.CellCapacity{MemoryMB: int32(c.memory), DiskMB: int32(c.disk), Containers: int32(c.count)}
	if c.tags != "" {
		agentCfg.PlacementTags = strings.Split(c.tags, ",")
	}
	execCfg := c.exec
	execCfg.PortRangeStart, execCfg.PortRangeEnd, execCfg.Log, execCfg.SkipPortProbe = first, last, os.Stdout, skipProbe
	return system.NewCell(system.CellConfig{Agent: agentCfg, Executor: execCfg, Backend: backend,
		BBS: bbsclient.New(c.apiURL, p.PeerTLS), Metrics: p.Metrics, Log: p.Log}).Agent, cleanup, nil
}
