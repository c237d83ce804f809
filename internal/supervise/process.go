package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Command describes a child process: what to run, with which environment, where its output
// goes and how it is stopped.
type Command struct {
	// Path and Args are the program and its arguments (without the program name).
	Path string
	Args []string
	// Env is the child's whole environment (nil: ours).
	Env []string
	// LogFile receives its output, appended; "" discards it.
	LogFile string
	// PIDFile, when set, holds the pid of the running process (removed when it exits), so
	// that an operator (or a chaos test) can find it: kill -9 $(cat FILE).
	PIDFile string
	// StopSignal asks it to stop (default SIGTERM); after StopTimeout (default 10 s) it and
	// its process group are killed.
	StopSignal  syscall.Signal
	StopTimeout time.Duration
	// ReadyAddr, when set, is a TCP address the process listens on once it is ready; Start
	// waits for it, at most ReadyTimeout (default 60 s).
	ReadyAddr    string
	ReadyTimeout time.Duration
}

// Process is a running child process. It runs in its own process group, so that Ctrl-C in
// the terminal reaches only the parent, which stops its children in order.
type Process struct {
	c      Command
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts the process and, if ReadyAddr is set, waits until it accepts connections
// there; a process that exits first or does not get ready in time is stopped and reported,
// with the name of its log.
func Start(ctx context.Context, c Command) (*Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logName := "(discarded)"
	if c.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(c.LogFile), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(c.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		logName = c.LogFile
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	p := &Process{c: c, cmd: cmd, exited: make(chan struct{})}
	if c.PIDFile != "" {
		_ = os.MkdirAll(filepath.Dir(c.PIDFile), 0o755)
		_ = os.WriteFile(c.PIDFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	}
	go func() {
		p.err = cmd.Wait()
		if c.PIDFile != "" {
			// Only ours: a restarted process may have written its own meanwhile.
			if b, err := os.ReadFile(c.PIDFile); err == nil && string(b) == strconv.Itoa(cmd.Process.Pid)+"\n" {
				os.Remove(c.PIDFile)
			}
		}
		close(p.exited)
	}()
	if c.ReadyAddr != "" {
		if err := p.waitReady(ctx); err != nil {
			p.Stop()
			return nil, fmt.Errorf("%s (log: %s): %w", filepath.Base(c.Path), logName, err)
		}
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	timeout := p.c.ReadyTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if conn, err := net.DialTimeout("tcp", p.c.ReadyAddr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s within %s", p.c.ReadyAddr, timeout)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before listening on %s: %v", p.c.ReadyAddr, p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited, for whatever reason.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Err says how it exited (e.g. "signal: killed"), once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return nil
	}
}

// Stop sends the stop signal, waits up to the stop timeout, then kills the process group,
// and returns once the process has exited.
func (p *Process) Stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	sig := p.c.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	timeout := p.c.StopTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	// Whatever it started in its group (instances of a cell, say) goes with it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	return nil
}
