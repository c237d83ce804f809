package main

import (
	"context"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/boot"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"go.uber.org/zap"
)

// devCell is a cell agent the dev mode runs as a child process.
type devCell struct {
	id, zone, logFile string
	cmd               *exec.Cmd
	done              chan struct{}
}

// startDevCells starts n cell agents spread over zones (cell-1 in z1, cell-2 in z2, ...),
// each with its own port range, work directory and log under dir, and waits until every one
// has announced itself.
func startDevCells(ctx context.Context, store *db.Store, n, zones int, apiURL, kind, dir string, log *zap.Logger) ([]*devCell, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cells []*devCell
	for i := 0; i < n; i++ {
		c := &devCell{
			id:      fmt.Sprintf("cell-%d", i+1),
			zone:    fmt.Sprintf("z%d", i%zones+1),
			done:    make(chan struct{}),
			logFile: filepath.Join(dir, fmt.Sprintf("cell-%d.log", i+1)),
		}
		work := filepath.Join(dir, "cells", c.id)
		if err := os.MkdirAll(work, 0o755); err != nil {
			return cells, err
		}
		out, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return cells, err
		}
		first := 61000 + i*1000
		c.cmd = exec.Command(self, "cell", "--id", c.id, "--zone", c.zone, "--api-url", apiURL,
			"--executor", kind, "--work-dir", work, "--port-range", fmt.Sprintf("%d-%d", first, first+999))
		c.cmd.Stdout, c.cmd.Stderr = out, out
		// Its own process group: Ctrl-C reaches the dev mode, which then stops the cells.
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.cmd.Start(); err != nil {
			out.Close()
			return cells, err
		}
		out.Close()
		go func() { c.cmd.Wait(); close(c.done) }()
		cells = append(cells, c)
	}
	ids := make([]string, len(cells))
	for i, c := range cells {
		ids[i] = c.id
	}
	exited := func() error {
		for _, c := range cells {
			select {
			case <-c.done:
				return fmt.Errorf("cell %s exited at start; see %s", c.id, c.logFile)
			default:
			}
		}
		return nil
	}
	if err := boot.WaitForCells(ctx, store, ids, 30*time.Second, exited); err != nil {
		return cells, fmt.Errorf("%w; see %s", err, filepath.Join(dir, "cell-*.log"))
	}
	return cells, nil
}

// stopDevCells stops the cells at once (SIGINT: instances stop, presence withdrawn).
func stopDevCells(cells []*devCell, log *zap.Logger) {
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
