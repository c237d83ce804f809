// Package temporaldev runs the Temporal dev server (`temporal server start-dev`) as a child
// process for the all-in-one dev mode: state in a SQLite file so that rollouts survive a
// restart, the Web UI beside it, and the search attributes our workflows use registered.
package temporaldev

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// SearchAttributes are the custom search attributes of our workflows, registered at start so
// that operators can find rollouts in the Web UI.
var SearchAttributes = map[string]string{
	"ProcessGuid":    "Keyword",
	"Domain":         "Keyword",
	"FromDefinition": "Keyword",
	"ToDefinition":   "Keyword",
	"RolloutState":   "Keyword",
}

// Config says how to run the dev server.
type Config struct {
	// Bin is the temporal CLI; "" looks for bin/temporal, then temporal on PATH.
	Bin string
	// DBFile keeps the server's state; "" keeps nothing (faster, for tests).
	DBFile    string
	Port      int // gRPC frontend on 127.0.0.1
	UIPort    int // Web UI on 127.0.0.1
	Namespace string
	// LogFile receives the server's output; "" discards it.
	LogFile string
}

// Server is a running dev server.
type Server struct {
	cmd     *exec.Cmd
	done    chan error
	address string
}

// FindBin returns the temporal CLI to use: bin/temporal under the working directory (the
// pinned build `make` makes), else temporal on PATH.
func FindBin() (string, error) {
	if p, err := filepath.Abs(filepath.Join("bin", "temporal")); err == nil {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("the temporal CLI was found neither at bin/temporal nor on PATH: " +
		"run `make bin/temporal` (builds github.com/temporalio/cli/cmd/temporal@v1.5.1)")
}

// Start launches the dev server and returns once its frontend accepts connections.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	bin := cfg.Bin
	if bin == "" {
		var err error
		if bin, err = FindBin(); err != nil {
			return nil, err
		}
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))
	if c, err := net.DialTimeout("tcp", address, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("port %d is already in use: is another Temporal server running?", cfg.Port)
	}
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(cfg.Port),
		"--ui-port", strconv.Itoa(cfg.UIPort),
		"--namespace", cfg.Namespace,
		"--log-level", "warn",
		// One task-queue partition: measured 119 → 183 steps/s on a 2-core machine.
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
	}
	if cfg.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.DBFile), 0o755); err != nil {
			return nil, err
		}
		args = append(args, "--db-filename", cfg.DBFile)
	}
	for _, name := range slices.Sorted(maps.Keys(SearchAttributes)) {
		args = append(args, "--search-attribute", name+"="+SearchAttributes[name])
	}
	cmd := exec.Command(bin, args...)
	// Its own process group: Ctrl-C in the terminal must not kill it before we stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, done: make(chan error, 1), address: address}
	go func() { s.done <- cmd.Wait() }()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("temporal dev server did not come up (see %s): %w", cfg.LogFile, err)
	}
	return s, nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return s.address }

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if c, err := net.DialTimeout("tcp", s.address, time.Second); err == nil {
			c.Close()
			return nil
		}
	}
	return errors.New("timed out")
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (s *Server) Stop() error {
	if s.cmd.Process == nil {
		return nil
	}
	select {
	case err := <-s.done:
		s.done <- err
		return nil
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.done <- nil
	return nil
}
