// Package sshproxy is the SSH proxy in front of the LRPs' instances (Diego's ssh-proxy with
// its diego authenticator): a user `diego:<process_guid>/<index>` with the proxy's password
// is connected to the SSH daemon (package sshd) in the instance at that index, through the
// LRP's `diego-ssh` route, and every channel and request is relayed both ways.
//
// The proxy knows definitions (seed 001): during a rollout an index may have two instances,
// and the proxy picks one deterministically (SelectInstance) and reaches it through its own
// definition's port mapping. A session lives as long as its instance's daemon: a rollout of
// other indices does not touch it, and a retired instance's session ends when the instance
// stops, after the drain.
package sshproxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/updatable-lrps/bbs/internal/tcpserve"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// Defaults of Config's limits. A person types the password within the handshake, so it is
// long, as OpenSSH's LoginGraceTime is.
const (
	DefaultMaxConnections   = 256
	DefaultHandshakeTimeout = time.Minute
	DefaultDialTimeout      = 10 * time.Second
)

// Config is what a proxy is made of. The password and host key come from the environment
// or files (never flags) and are never logged.
type Config struct {
	HostKey  ssh.Signer
	Password []byte
	BBS      BBS
	// MaxConnections bounds the connections served at once; more are refused.
	MaxConnections int
	// HandshakeTimeout bounds a connection's handshake and authentication; DialTimeout the
	// connection to the instance's daemon, handshake included.
	HandshakeTimeout, DialTimeout time.Duration
	Log                           *zap.Logger
}

// Proxy serves ssh users until Close.
type Proxy struct {
	cfg      Config
	password [sha256.Size]byte
	serve    tcpserve.Server
	requests atomic.Uint64
}

// New checks cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.HostKey == nil {
		return nil, errors.New("ssh proxy: no host key")
	}
	if len(cfg.Password) == 0 {
		return nil, errors.New("ssh proxy: no password for the diego authenticator")
	}
	if cfg.BBS == nil {
		return nil, errors.New("ssh proxy: no BBS")
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	// Comparing digests keeps the comparison constant-time in the password's length too.
	p := &Proxy{cfg: cfg, password: sha256.Sum256(cfg.Password)}
	cfg.Password = nil
	p.serve = tcpserve.Server{Max: cfg.MaxConnections, Refusal: "bbs ssh-proxy: too many connections, try again later",
		HandshakeTimeout: cfg.HandshakeTimeout, Handle: p.handle, Log: cfg.Log}
	return p, nil
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (p *Proxy) Serve(ln net.Listener) error { return p.serve.Serve(ln) }

// Close stops accepting and ends every session.
func (p *Proxy) Close() error { return p.serve.Close() }

// handle authenticates one user, connects them to their instance and relays until either
// side ends.
func (p *Proxy) handle(nc net.Conn) {
	id := fmt.Sprintf("%x", p.requests.Add(1))
	log := p.cfg.Log.With(zap.String("connection", id), zap.String("remote", nc.RemoteAddr().String()))
	var upstream *upstream
	cfg := &ssh.ServerConfig{
		MaxAuthTries:  3,
		ServerVersion: "SSH-2.0-bbs-ssh-proxy",
		PasswordCallback: func(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
			up, err := p.authenticate(meta, password, log)
			if err != nil {
				if !errors.Is(err, errWrongPassword) {
					log.Info("refused", zap.String("user", meta.User()), zap.Error(err))
				} else {
					log.Info("wrong password", zap.String("user", meta.User()))
				}
				return nil, &ssh.BannerError{Err: err, Message: bannerFor(err, id)}
			}
			if upstream != nil {
				upstream.conn.Close()
			}
			upstream = up
			return &ssh.Permissions{}, nil
		},
	}
	cfg.AddHostKey(p.cfg.HostKey)
	conn, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		if upstream != nil {
			upstream.conn.Close()
		}
		log.Debug("handshake ended", zap.Error(err))
		return
	}
	nc.SetDeadline(time.Time{})
	log.Info("session started", zap.String("user", conn.User()),
		zap.String("instance_guid", upstream.target.Instance.InstanceGUID),
		zap.String("definition_id", upstream.target.Instance.DefinitionID),
		zap.String("cell_id", upstream.target.Instance.CellID), zap.String("address", upstream.target.Address))
	relay(conn, chans, reqs, upstream.conn, upstream.chans, upstream.reqs)
	log.Info("session ended", zap.String("user", conn.User()))
}

// authenticate checks the user and the password (the password first, so that nothing about
// the LRPs is told to whoever does not know it) and connects to the user's instance.
func (p *Proxy) authenticate(meta ssh.ConnMetadata, password []byte, log *zap.Logger) (*upstream, error) {
	sum := sha256.Sum256(password)
	if subtle.ConstantTimeCompare(sum[:], p.password[:]) != 1 {
		return nil, errWrongPassword
	}
	guid, index, err := ParseUser(meta.User())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	target, err := Resolve(ctx, p.cfg.BBS, guid, index)
	if err != nil {
		return nil, err
	}
	return dial(ctx, target, p.cfg.DialTimeout)
}

// upstream is the proxy's connection to an instance's daemon.
type upstream struct {
	target *Target
	conn   ssh.Conn
	chans  <-chan ssh.NewChannel
	reqs   <-chan *ssh.Request
}

// dial connects to the target's daemon, verifying its host key against the route's
// fingerprint and authenticating with the route's key (or user and password).
func dial(ctx context.Context, t *Target, timeout time.Duration) (*upstream, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return nil, refuse("cannot reach instance %s at index %d: %v", t.Instance.InstanceGUID, t.Instance.Index, err)
	}
	nc.SetDeadline(time.Now().Add(timeout))
	cfg := &ssh.ClientConfig{
		User: t.Route.User,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			return t.fingerprint.check(key)
		},
		Timeout: timeout,
	}
	if t.Signer != nil {
		cfg.Auth = append(cfg.Auth, ssh.PublicKeys(t.Signer))
	}
	if t.Route.User != "" && t.Route.Password != "" {
		cfg.Auth = append(cfg.Auth, ssh.Password(t.Route.Password))
	}
	conn, chans, reqs, err := ssh.NewClientConn(nc, t.Address, cfg)
	if err != nil {
		nc.Close()
		if errors.Is(err, errFingerprintMismatch) {
			return nil, refuse("the daemon of instance %s does not have the host key its LRP's diego-ssh route names: refusing to connect", t.Instance.InstanceGUID)
		}
		return nil, refuse("cannot open an ssh connection to instance %s at index %d: %v", t.Instance.InstanceGUID, t.Instance.Index, err)
	}
	nc.SetDeadline(time.Time{})
	return &upstream{target: t, conn: conn, chans: chans, reqs: reqs}, nil
}
