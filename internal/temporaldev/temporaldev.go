// Package temporaldev finds and runs the Temporal dev server (`temporal server start-dev`) as a
// child process: for the all-in-one dev mode (state in a SQLite file so that rollouts survive a
// restart, the Web UI beside it) and for tests and benchmarks (in memory, headless, on a free
// port). It is the one place that knows how a dev server is found, configured and started.
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

	"github.com/updatable-lrps/bbs/internal/gctune"
)

// SearchAttributes are the custom search attributes of our workflows (workflows.SearchAttr*),
// registered at start so that operators can find rollouts in the Web UI (and so that starting
// a rollout, which sets them, does not fail). clusterstack registers the same on `make
// cluster`'s server, docker-compose.yml's temporal-admin-tools on the compose stack's.
var SearchAttributes = map[string]string{
	"ProcessGuid":    "Keyword",
	"Domain":         "Keyword",
	"FromDefinition": "Keyword",
	"ToDefinition":   "Keyword",
	"RolloutState":   "Keyword",
	"RolloutPhase":   "Keyword",
	"RolloutGroup":   "Keyword",
}

// DynamicConfig is the server configuration every Temporal server we start gets, as
// key=value: the dev servers (as --dynamic-config-value), the real server of `make cluster`
// (written as its dynamic config file), and deploy/temporal-dynamicconfig.yaml for the
// compose stack (a test checks that the file says the same).
var DynamicConfig = []string{
	// One task-queue partition: every queue has one poller, and a partitioned queue makes its
	// tasks wait for forwarding (measured 119 → 183 steps/s on a 2-core machine).
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
	// Eager activity execution: the SDK asks for it by default, but the server (v1.29) has
	// it off, so every activity a workflow task schedules waited for the transfer queue
	// (whose reader takes a token from a 20-per-second limiter on the dev server's one shard)
	// before a worker could poll it. With it on, the activity comes back with the workflow
	// task's completion to the worker that scheduled it.
	"system.enableActivityEagerExecution=true",
	// The same limiter (20 per second by default) paces the shard's transfer, timer and
	// visibility queue readers; on the dev server's one shard it, not the work, set the pace
	// of every workflow and activity task hand-out.
	"history.transferProcessorMaxPollRPS=1000",
	"history.timerProcessorMaxPollRPS=1000",
	"history.visibilityProcessorMaxPollRPS=1000",
	// A workflow poller's long poll lasts a minute by default. Under a burst (a thousand
	// rollouts started at once) matching at times left hundreds of first workflow tasks
	// undelivered while every poller of the queue waited, until the pollers' long polls
	// expired and they polled again: a 1,000-rollout benchmark took 1:40 instead of 0:45 in
	// one run of three (docs/BENCHMARKS.md, session 11). Polls of 5 s (a number is seconds)
	// bound such a stall to that, for one empty answer per idle poller every 5 s.
	"matching.longPollExpirationInterval=5",
}

// Config says how to run the dev server.
type Config struct {
	// Bin is the temporal CLI; "" uses FindBin.
	Bin string
	// DBFile keeps the server's state; "" keeps nothing (faster, for tests).
	DBFile string
	// Port is the gRPC frontend's port on 127.0.0.1; 0 picks a free one.
	Port int
	// UIPort is the Web UI's port on 127.0.0.1; 0 runs the server without its UI.
	UIPort    int
	Namespace string
	// LogFile receives the server's output; "" discards it.
	LogFile string
	// LogLevel is the server's log level; "" means warn.
	LogLevel string
	// SearchAttributes replaces SearchAttributes when not nil: for a test of a server that
	// lacks some (one set up before a BBS upgrade added them).
	SearchAttributes map[string]string
}

// Server is a running dev server.
type Server struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has exited; waitErr says how
	waitErr error
	address string
	ns      string
}

// ErrNoBin says that no temporal CLI was found. Tests that need a server fail with it (or, in
// -short mode, skip saying so): a missing server must never pass as a green run.
var ErrNoBin = errors.New("no Temporal CLI: TEMPORAL_BIN is unset, there is no bin/temporal in " +
	"this directory or above it, and none on PATH (`make bin/temporal` builds the pinned " +
	"github.com/temporalio/cli/cmd/temporal@v1.5.1; `make test` and `make run` do it for you)")

// FindBin returns the temporal CLI to use: $TEMPORAL_BIN when set (it must exist), else
// bin/temporal in the working directory or the nearest parent that has one (the pinned build
// `make` makes), else temporal on PATH.
func FindBin() (string, error) {
	if p := os.Getenv("TEMPORAL_BIN"); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("TEMPORAL_BIN=%s is not a file", p)
		}
		return filepath.Abs(p)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if p := filepath.Join(dir, "bin", "temporal"); isFile(p) {
				return p, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", ErrNoBin
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start launches the dev server and returns once its frontend accepts connections. With
// Port 0 it picks a free port, and tries again with another if that one was taken meanwhile.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Bin == "" {
		bin, err := FindBin()
		if err != nil {
			return nil, err
		}
		cfg.Bin = bin
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if cfg.Port != 0 {
		return start(ctx, cfg)
	}
	var err error
	for range 3 {
		if cfg.Port, err = freePort(); err != nil {
			return nil, err
		}
		var s *Server
		if s, err = start(ctx, cfg); err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))
	if c, err := net.DialTimeout("tcp", address, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("port %d is already in use: is another Temporal server running?", cfg.Port)
	}
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(cfg.Port),
		"--namespace", cfg.Namespace,
		"--log-level", cfg.LogLevel,
	}
	if cfg.UIPort != 0 {
		args = append(args, "--ui-port", strconv.Itoa(cfg.UIPort))
	} else {
		args = append(args, "--headless")
	}
	for _, v := range DynamicConfig {
		args = append(args, "--dynamic-config-value", v)
	}
	if cfg.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.DBFile), 0o755); err != nil {
			return nil, err
		}
		args = append(args, "--db-filename", cfg.DBFile)
	}
	attrs := SearchAttributes
	if cfg.SearchAttributes != nil {
		attrs = cfg.SearchAttributes
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		args = append(args, "--search-attribute", name+"="+attrs[name])
	}
	cmd := exec.Command(cfg.Bin, args...)
	cmd.Env = gctune.Env(os.Environ())
	// Its own process group: Ctrl-C in the terminal must not kill it before we stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logName := "(discarded)"
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		logName = cfg.LogFile
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Bin, err)
	}
	s := &Server{cmd: cmd, exited: make(chan struct{}), address: address, ns: cfg.Namespace}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("temporal dev server (%s) did not come up (log: %s): %w", cfg.Bin, logName, err)
	}
	return s, nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return s.address }

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.ns }

// PID is the server process's id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done is closed once the server process has exited, for whatever reason: Stop, a crash, a
// kill.
func (s *Server) Done() <-chan struct{} { return s.exited }

// Err says how the process exited (e.g. "signal: killed"), once Done is closed.
func (s *Server) Err() error {
	select {
	case <-s.exited:
		return s.waitErr
	default:
		return nil
	}
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("exited: %v", s.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
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
	case <-s.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	return nil
}

// freePort asks the kernel for an unused port. Another process could take it before the
// server binds it; Start then tries another.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
