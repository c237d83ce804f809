package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/updatable-lrps/bbs/bbsclient"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// devSystem is `bbs dev` started by the demo because no system was running.
type devSystem struct {
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	logPath string
}

// startConfig says how to start `bbs dev` when the API does not answer.
type startConfig struct {
	bbsBin      string
	temporalBin string
	dataDir     string
	apiURL      string
	routerURL   string
	statsURL    string
}

// banner is what `bbs dev` prints once everything, the cells included, is up.
const banner = "BBS dev stack is up"

// startDev runs `bbs dev` with its state under cfg.dataDir and its output in
// dataDir/dev.log, listening where the demo's flags say, and waits until it is up. It runs
// in its own process group: a Ctrl-C in the terminal reaches the demo, which removes its LRP
// before it stops the system.
func startDev(ctx context.Context, cfg startConfig, api *bbsclient.Client, out func(string, ...any)) (*devSystem, error) {
	for what, path := range map[string]string{"bbs (make build)": cfg.bbsBin, "the temporal CLI": cfg.temporalBin} {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s not found at %s: %w", what, path, err)
		}
	}
	listen, err := hostPort(cfg.apiURL)
	if err != nil {
		return nil, err
	}
	routerListen, err := hostPort(cfg.routerURL)
	if err != nil {
		return nil, err
	}
	adminListen, err := hostPort(cfg.statsURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return nil, err
	}
	s := &devSystem{done: make(chan struct{}), logPath: filepath.Join(cfg.dataDir, "dev.log")}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	s.cmd = exec.Command(cfg.bbsBin, "dev", "--data-dir", cfg.dataDir, "--temporal-bin", cfg.temporalBin,
		"--listen", listen, "--router-listen", routerListen, "--router-admin-listen", adminListen)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out("starting %s (state in %s, output in %s)", strings.Join(s.cmd.Args, " "), cfg.dataDir, s.logPath)
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("bbs dev exited (%v) before it was up; the end of %s:\n%s", s.err, s.logPath, tail(s.logPath, 15))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		logged, _ := os.ReadFile(s.logPath)
		if bytes.Contains(logged, []byte(banner)) {
			if ok, _ := available(ctx, api); ok {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("bbs dev was not up within 3 minutes; the end of %s:\n%s", s.logPath, tail(s.logPath, 15))
		}
	}
}

// stop sends SIGINT, as Ctrl-C in `make run` does, and waits for everything to stop.
func (s *devSystem) stop() error {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(90 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("bbs dev did not stop within 90s after SIGINT; killed it (see %s)", s.logPath)
	}
	var exit *exec.ExitError
	if errors.As(s.err, &exit) {
		return fmt.Errorf("bbs dev exited with %v (see %s)", s.err, s.logPath)
	}
	return s.err
}

// hostPort is the host:port of a URL, for a --listen flag.
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf("%s: want a URL with a host and a port", raw)
	}
	return u.Host, nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
