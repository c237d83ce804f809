// Package sshd is the SSH daemon that runs inside an LRP instance beside the app (Diego's
// diego-sshd): a codependent action of the instance's definition starts it on the container
// port the LRP's `diego-ssh` route names, and the ssh proxy (package sshproxy) reaches it
// there with the private key whose public half the daemon is given.
//
// It serves exec, an interactive shell with a pseudo-terminal, environment requests (the
// instance's own environment is inherited), signals and window changes, the sftp subsystem
// (so scp and sftp work) and direct-tcpip forwarding to the instance's own ports. It accepts
// only its authorized keys, bounds the connections it serves and times out idle handshakes.
//
// The process executor has no containers: an instance's container ports are reached at the
// host ports its cell mapped them to (CF_INSTANCE_PORTS), so the daemon listens on the host
// port of its container port, and forwarding translates a container port to its host port.
package sshd

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/internal/tcpserve"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// Defaults of Config's limits.
const (
	DefaultMaxConnections   = 16
	DefaultHandshakeTimeout = 10 * time.Second
)

// Config is what a daemon is made of.
type Config struct {
	// HostKey identifies the daemon; the proxy checks its fingerprint.
	HostKey ssh.Signer
	// AuthorizedKeys are the only keys a client may authenticate with.
	AuthorizedKeys []ssh.PublicKey
	// Env is the environment every session starts from: the instance's own.
	Env []string
	// Dir is where sessions start (the instance's directory); "" is the daemon's own.
	Dir string
	// Shell runs commands and interactive shells; "" finds bash, else sh.
	Shell string
	// Ports are the instance's ports, which direct-tcpip may reach.
	Ports Ports
	// MaxConnections bounds the connections served at once; more are refused.
	MaxConnections int
	// HandshakeTimeout bounds a connection's key exchange and authentication.
	HandshakeTimeout time.Duration
	Log              *zap.Logger
}

// Server is a daemon: Serve accepts connections until Close.
type Server struct {
	cfg   Config
	ssh   *ssh.ServerConfig
	serve tcpserve.Server
}

// New checks cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.HostKey == nil {
		return nil, errors.New("sshd: no host key")
	}
	if len(cfg.AuthorizedKeys) == 0 {
		return nil, errors.New("sshd: no authorized key")
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.Shell == "" {
		cfg.Shell = findShell()
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	s := &Server{cfg: cfg}
	s.serve = tcpserve.Server{Max: cfg.MaxConnections, Refusal: "bbs sshd: too many connections, try again later",
		HandshakeTimeout: cfg.HandshakeTimeout, Handle: s.handle, Log: cfg.Log}
	s.ssh = &ssh.ServerConfig{
		PublicKeyCallback: s.authorize,
		MaxAuthTries:      3,
		ServerVersion:     "SSH-2.0-bbs-sshd",
	}
	s.ssh.AddHostKey(cfg.HostKey)
	return s, nil
}

// authorize accepts exactly the authorized keys. Public keys are not secrets, so a plain
// comparison leaks nothing.
func (s *Server) authorize(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	for _, k := range s.cfg.AuthorizedKeys {
		if k.Type() == key.Type() && bytes.Equal(k.Marshal(), key.Marshal()) {
			return &ssh.Permissions{}, nil
		}
	}
	return nil, fmt.Errorf("key %s is not authorized", ssh.FingerprintSHA256(key))
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error { return s.serve.Serve(ln) }

// Close stops accepting, closes every connection (which ends their sessions' processes) and
// waits for them.
func (s *Server) Close() error { return s.serve.Close() }

// handle runs one connection: the handshake within HandshakeTimeout, then its channels.
func (s *Server) handle(nc net.Conn) {
	log := s.cfg.Log.With(zap.String("remote", nc.RemoteAddr().String()))
	conn, chans, reqs, err := ssh.NewServerConn(nc, s.ssh)
	if err != nil {
		log.Info("handshake failed", zap.Error(err))
		return
	}
	nc.SetDeadline(time.Time{})
	defer conn.Close()
	log.Info("connection authenticated")
	go refuseGlobalRequests(reqs)
	var sessions sync.WaitGroup
	for nch := range chans {
		switch nch.ChannelType() {
		case "session":
			sessions.Add(1)
			go func() { defer sessions.Done(); s.session(nch, log) }()
		case "direct-tcpip":
			sessions.Add(1)
			go func() { defer sessions.Done(); s.forward(nch, log) }()
		default:
			nch.Reject(ssh.UnknownChannelType, "bbs sshd: unsupported channel type "+fmt.Sprintf("%q", nch.ChannelType()))
		}
	}
	// The connection is gone: its channels are closed, which ends their processes.
	sessions.Wait()
	log.Info("connection closed")
}

// refuseGlobalRequests answers every global request no: remote forwarding (tcpip-forward)
// is not offered, and a no to keepalive@openssh.com still proves the connection alive.
func refuseGlobalRequests(reqs <-chan *ssh.Request) {
	for r := range reqs {
		if r.WantReply {
			r.Reply(false, nil)
		}
	}
}
