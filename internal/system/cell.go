package system

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/cell"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/process"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/metrics"
	"go.uber.org/zap"
)

// CellConfig is what a cell agent is made of: its own configuration, its executor's, the
// backend that runs containers, and the BBS it reports to.
type CellConfig struct {
	Agent    cell.Config
	Executor executor.Config
	Backend  executor.Backend
	BBS      cell.BBS
	// Metrics, when set, is the process's registry, on which the cell registers its
	// capacity series.
	Metrics *prometheus.Registry
	Log     *zap.Logger
}

// Cell is a cell agent and its executor, ready to Run.
type Cell struct {
	Agent *cell.Agent
	Exec  *executor.Executor
}

// NewCell builds a cell agent; Cell.Agent.Run runs it.
func NewCell(cfg CellConfig) *Cell {
	exec := executor.New(cfg.Backend, cfg.Executor, cfg.Log)
	c := &Cell{Agent: cell.New(cfg.Agent, cfg.BBS, exec, cfg.Log), Exec: exec}
	if cfg.Metrics != nil {
		metrics.RegisterCell(cfg.Metrics, cfg.Agent.Capacity, c.Agent.Available)
	}
	return c
}

// Backend makes a cell's executor backend by kind: "process" runs real local processes in
// directories under workDir (a temporary directory when ""), "sim" simulated instances seeded
// by seed (sim instances bind no ports, so the executor must not probe them:
// executor.Config.SkipPortProbe), recorded in workDir when set. Either way a cell agent
// restarted on the same workDir adopts the instances its predecessor left running
// (executor.Adopter). cleanup removes what Backend created.
func Backend(kind, workDir string, seed int64, log *zap.Logger) (b executor.Backend, skipPortProbe bool, cleanup func(), err error) {
	cleanup = func() {}
	switch kind {
	case "process":
		dir := workDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "bbs-cell-"); err != nil {
				return nil, false, cleanup, err
			}
			cleanup = func() { os.RemoveAll(dir) }
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, false, cleanup, err
		}
		return process.New(dir, log), false, cleanup, nil
	case "sim":
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		if workDir != "" {
			return sim.NewIn(seed, workDir), true, cleanup, nil
		}
		return sim.New(seed), true, cleanup, nil
	default:
		return nil, false, cleanup, fmt.Errorf("executor %q: want process or sim", kind)
	}
}
