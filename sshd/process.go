package sshd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/crypto/ssh"
)

// hangUpGrace is how long a session's processes get after SIGHUP (their client went away)
// before they are killed.
const hangUpGrace = 2 * time.Second

// process is a session's program: the leader of its own process group (and, with a
// terminal, of its own session), so that signals reach whatever it started.
type process struct {
	cmd  *exec.Cmd
	ptmx *os.File // nil without a terminal
	out  sync.WaitGroup
	done chan struct{}
}

// startProcess starts cmd wired to the channel: through a pseudo-terminal when the client
// asked for one, else through pipes (stdout and stderr apart).
func startProcess(cmd *exec.Cmd, ch ssh.Channel, term *ptyRequest) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	if term != nil {
		if term.Term != "" {
			cmd.Env = append(cmd.Env, "TERM="+term.Term)
		}
		ptmx, err := pty.StartWithSize(cmd, winsize(term.Cols, term.Rows))
		if err != nil {
			return nil, fmt.Errorf("start %s with a terminal: %w", cmd.Path, err)
		}
		p.ptmx = ptmx
		go io.Copy(ptmx, ch)
		p.out.Add(1)
		go func() { defer p.out.Done(); io.Copy(ch, ptmx) }()
		return p, nil
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	// A background child that keeps stdout open must not hold the session forever.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() { io.Copy(stdin, ch); stdin.Close() }()
	return p, nil
}

// wait waits for the program and its output; nil when it could not be waited for.
func (p *process) wait() *os.ProcessState {
	p.cmd.Wait()
	if p.ptmx != nil {
		// The terminal drains until every holder of its other side has exited.
		drained := make(chan struct{})
		go func() { p.out.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(time.Second):
		}
		p.ptmx.Close()
	}
	close(p.done)
	return p.cmd.ProcessState
}

func (p *process) resize(cols, rows uint32) {
	if p.ptmx != nil {
		pty.Setsize(p.ptmx, winsize(cols, rows))
	}
}

// signal sends the named signal (RFC 4254 6.10: "TERM", "INT", ...) to the program's group.
func (p *process) signal(name string) error {
	sig, ok := signals[name]
	if !ok {
		return errors.New("unknown signal " + quote(name))
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// hangUp ends the program as a terminal hang-up does, killing it after hangUpGrace.
func (p *process) hangUp() {
	pgid := -p.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGHUP)
	syscall.Kill(pgid, syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(hangUpGrace):
		syscall.Kill(pgid, syscall.SIGKILL)
	}
}

func winsize(cols, rows uint32) *pty.Winsize {
	clamp := func(v uint32) uint16 { return uint16(min(v, 0xffff)) }
	return &pty.Winsize{Cols: clamp(cols), Rows: clamp(rows)}
}

// signals are the signal names of RFC 4254 6.10.
var signals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE, "HUP": syscall.SIGHUP,
	"ILL": syscall.SIGILL, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE,
	"QUIT": syscall.SIGQUIT, "SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,
}

// signalled tells whether the program was killed by a signal, and its RFC 4254 name.
func signalled(state *os.ProcessState) (string, bool) {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	for name, s := range signals {
		if s == ws.Signal() {
			return name, true
		}
	}
	return "KILL", true
}

// findShell is bash when there is one, as diego-sshd prefers, else sh.
func findShell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
