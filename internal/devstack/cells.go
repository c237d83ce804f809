package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/internal/boot"
	"go.uber.org/zap"
)

// cellProcess is a cell agent the dev stack runs as a child process (`bbs cell`).
type cellProcess struct {
	id, zone, logFile string
	cmd               *exec.Cmd
	done              chan struct{}
}

// newCellProcess is cell i (0-based) of a stack with zones zones: cell-1 in z1, cell-2 in
// z2, ..., each with a thousand host ports of its own (61000-61999, 62000-62999, ...), its
// work directory and its log under dir.
func newCellProcess(self string, i, zones int, apiURL, kind, dir string) *cellProcess {
	c := &cellProcess{
		id:      fmt.Sprintf("cell-%d", i+1),
		zone:    fmt.Sprintf("z%d", i%zones+1),
		done:    make(chan struct{}),
		logFile: filepath.Join(dir, fmt.Sprintf("cell-%d.log", i+1)),
	}
	first := 61000 + i*1000
	c.cmd = exec.Command(self, "cell", "--id", c.id, "--zone", c.zone, "--api-url", apiURL,
		"--executor", kind, "--work-dir", c.workDir(dir), "--port-range", fmt.Sprintf("%d-%d", first, first+999))
	// Its own process group: Ctrl-C reaches the dev stack, which then stops the cells.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

// workDir is where the cell's instances get their directories.
func (c *cellProcess) workDir(dir string) string { return filepath.Join(dir, "cells", c.id) }

// start starts the cell, its output appended to its log.
func (c *cellProcess) start(dir string) error {
	if err := os.MkdirAll(c.workDir(dir), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if err := c.cmd.Start(); err != nil {
		return err
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	return nil
}

// startCells starts the cell agents and waits until every one has announced itself.
func (s *stack) startCells(ctx context.Context) error {
	s.log.Info("starting cells", zap.Int("cells", s.cfg.Cells), zap.Int("zones", s.cfg.Zones))
	var cells []*cellProcess
	s.onStop(func() {
		s.log.Info("stopping the cells")
		stopCells(cells, s.log)
	})
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for i := 0; i < s.cfg.Cells; i++ {
		c := newCellProcess(self, i, s.cfg.Zones, s.api.URL(), s.cfg.CellExecutor, s.dir)
		if err := c.start(s.dir); err != nil {
			return err
		}
		cells = append(cells, c)
	}
	if err := boot.WaitForCells(ctx, s.store, cellIDs(cells), 30*time.Second, exitedAtStart(cells)); err != nil {
		return fmt.Errorf("%w; see %s", err, filepath.Join(s.dir, "cell-*.log"))
	}
	for _, c := range cells {
		s.banner.cells = append(s.banner.cells, bannerCell{id: c.id, zone: c.zone, executor: s.cfg.CellExecutor,
			log: filepath.Join(s.cfg.DataDir, filepath.Base(c.logFile))})
	}
	return nil
}

// cellIDs are the ids the wait looks for among the cells' presences.
func cellIDs(cells []*cellProcess) []string {
	ids := make([]string, len(cells))
	for i, c := range cells {
		ids[i] = c.id
	}
	return ids
}

// exitedAtStart says, for the wait, whether a cell has already given up.
func exitedAtStart(cells []*cellProcess) func() error {
	return func() error {
		for _, c := range cells {
			select {
			case <-c.done:
				return fmt.Errorf("cell %s exited at start; see %s", c.id, c.logFile)
			default:
			}
		}
		return nil
	}
}

// stopCells stops the cells at once (SIGINT: instances stop, presence withdrawn).
func stopCells(cells []*cellProcess, log *zap.Logger) {
	for _, c := range cells {
		c.cmd.Process.Signal(os.Interrupt)
	}
	for _, c := range cells {
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			log.Warn("cell did not stop; killing it", zap.String("cell_id", c.id))
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
}
