package sshd

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/pkg/sftp"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// session is one "session" channel: its environment and terminal requests, then at most one
// program (exec, shell or the sftp subsystem), whose end closes the channel.
type session struct {
	s   *Server
	ch  ssh.Channel
	log *zap.Logger

	mu      sync.Mutex
	env     []string
	pty     *ptyRequest
	started bool
	proc    *process
	// afterReply is what the request just handled starts once its reply is sent: the
	// goroutine that ends the channel when the program exits. Started earlier, a program
	// that exits at once could close the channel before the client has its "yes", and the
	// client would report that its exec failed.
	afterReply func()
}

// Payloads of the session requests (RFC 4254 6).
type (
	ptyRequest struct {
		Term                 string
		Cols, Rows, PxW, PxH uint32
		Modes                string
	}
	windowChange struct {
		Cols, Rows, PxW, PxH uint32
	}
	envRequest struct {
		Name, Value string
	}
	commandRequest struct {
		Command string
	}
	signalRequest struct {
		Signal string
	}
	exitStatus struct {
		Status uint32
	}
	exitSignal struct {
		Signal     string
		CoreDumped bool
		Message    string
		Lang       string
	}
)

// maxEnvRequests bounds a session's env requests, so a client cannot grow it without end.
const maxEnvRequests = 256

func (s *Server) session(nch ssh.NewChannel, log *zap.Logger) {
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	se := &session{s: s, ch: ch, log: log, env: append([]string(nil), s.cfg.Env...)}
	for req := range reqs {
		ok, msg := se.request(req)
		if !ok && msg != "" {
			// A refusal says why on the channel's stderr; the request itself can only be no.
			ch.Stderr().Write([]byte("bbs sshd: " + msg + "\r\n"))
		}
		if req.WantReply {
			req.Reply(ok, nil)
		}
		se.mu.Lock()
		after := se.afterReply
		se.afterReply = nil
		se.mu.Unlock()
		if after != nil {
			after()
		}
	}
	// The client closed the channel or the connection is gone: end what it started.
	se.mu.Lock()
	p := se.proc
	se.mu.Unlock()
	if p != nil {
		p.hangUp()
	}
	ch.Close()
}

// request handles one channel request; a refusal comes with why, unless the request is one
// clients send hopefully (such as auth-agent-req@openssh.com).
func (se *session) request(req *ssh.Request) (bool, string) {
	se.mu.Lock()
	defer se.mu.Unlock()
	switch req.Type {
	case "env":
		var e envRequest
		if ssh.Unmarshal(req.Payload, &e) != nil || e.Name == "" {
			return false, "malformed env request"
		}
		if len(se.env) >= len(se.s.cfg.Env)+maxEnvRequests {
			return false, "too many env requests"
		}
		se.env = append(se.env, e.Name+"="+e.Value)
		return true, ""
	case "pty-req":
		var p ptyRequest
		if ssh.Unmarshal(req.Payload, &p) != nil {
			return false, "malformed pty-req"
		}
		if se.started {
			return false, "pty-req after the program started"
		}
		se.pty = &p
		return true, ""
	case "window-change":
		var w windowChange
		if ssh.Unmarshal(req.Payload, &w) != nil {
			return false, "malformed window-change"
		}
		if se.pty != nil {
			se.pty.Cols, se.pty.Rows = w.Cols, w.Rows
		}
		if se.proc != nil {
			se.proc.resize(w.Cols, w.Rows)
		}
		return true, ""
	case "signal":
		var sig signalRequest
		if ssh.Unmarshal(req.Payload, &sig) != nil {
			return false, "malformed signal request"
		}
		if se.proc == nil {
			return false, "no program to signal"
		}
		if err := se.proc.signal(sig.Signal); err != nil {
			return false, err.Error()
		}
		return true, ""
	case "exec", "shell", "subsystem":
		if se.started {
			return false, "this session already runs a program"
		}
		var c commandRequest
		if req.Type != "shell" && ssh.Unmarshal(req.Payload, &c) != nil {
			return false, "malformed " + req.Type + " request"
		}
		if err := se.start(req.Type, c.Command); err != nil {
			return false, err.Error()
		}
		se.started = true
		return true, ""
	}
	return false, ""
}

// start runs the session's program; the caller holds se.mu.
func (se *session) start(kind, command string) error {
	if kind == "subsystem" {
		if command != "sftp" {
			return errors.New("unknown subsystem " + quote(command) + " (only sftp)")
		}
		se.afterReply = func() { go se.serveSFTP() }
		return nil
	}
	args := []string{}
	if kind == "exec" {
		args = append(args, "-c", command)
	} else if se.pty == nil {
		args = append(args, "-s") // read commands from stdin
	} else {
		args = append(args, "-l")
	}
	cmd := exec.Command(se.s.cfg.Shell, args...)
	cmd.Dir = se.s.cfg.Dir
	cmd.Env = append([]string(nil), se.env...)
	p, err := startProcess(cmd, se.ch, se.pty)
	if err != nil {
		return err
	}
	se.proc = p
	se.log.Info("session started", zap.String("kind", kind), zap.Bool("pty", se.pty != nil))
	se.afterReply = func() { go se.finish(p) }
	return nil
}

// finish reports how the program ended and closes the channel.
func (se *session) finish(p *process) {
	state := p.wait()
	if state != nil {
		if sig, ok := signalled(state); ok {
			se.ch.SendRequest("exit-signal", false, ssh.Marshal(exitSignal{Signal: sig}))
		} else {
			se.ch.SendRequest("exit-status", false, ssh.Marshal(exitStatus{Status: uint32(state.ExitCode())}))
		}
	} else {
		se.ch.SendRequest("exit-status", false, ssh.Marshal(exitStatus{Status: 255}))
	}
	se.ch.Close()
}

// serveSFTP serves the sftp subsystem on the channel, relative paths from the session's
// directory (so `scp file diego:...:` lands in the instance's directory).
func (se *session) serveSFTP() {
	dir := se.s.cfg.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	status := uint32(0)
	srv, err := sftp.NewServer(se.ch, sftp.WithServerWorkingDirectory(dir))
	if err == nil {
		err = srv.Serve()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		se.log.Info("sftp ended", zap.Error(err))
		status = 1
	}
	se.ch.SendRequest("exit-status", false, ssh.Marshal(exitStatus{Status: status}))
	se.ch.Close()
}
