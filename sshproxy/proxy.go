// Package sshproxy is the SSH proxy in front of the LRPs' instances (Diego's ssh-proxy with
// its two authenticators): a user `diego:<process_guid>/<index>` with the proxy's password,
// or a user `cf:<app_guid>/<index>` with a one-time code from UAA that Cloud Controller
// lets into the app, is connected to the SSH daemon (package sshd) in the instance at that
// index, through the LRP's `diego-ssh` route, and every channel and request is relayed both
// ways. Failed logins are limited per source address and per user; every session ends in
// one audit log line.
//
// The proxy knows definitions (seed 001): during a rollout an index may have two instances,
// and the proxy picks one deterministically (SelectInstance) and reaches it through its own
// definition's port mapping. A session lives as long as its instance's daemon: a rollout of
// other indices does not touch it, and a retired instance's session ends when the instance
// stops, after the drain.
package sshproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
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

// Config is what a proxy is made of. The password, the UAA client's secret and the host key
// come from the environment or files (never flags) and are never logged.
type Config struct {
	HostKey ssh.Signer
	// Password turns the diego authenticator on (empty: off).
	Password []byte
	// CF turns the cf authenticator on (nil: off). At least one authenticator is on.
	CF  *CFAuth
	BBS BBS
	// MaxConnections bounds the connections served at once; more are refused.
	MaxConnections int
	// HandshakeTimeout bounds a connection's handshake and authentication; DialTimeout the
	// connection to the instance's daemon, handshake included.
	HandshakeTimeout, DialTimeout time.Duration
	// MaxFailedLogins from one address or for one user within FailedLoginsWindow make the
	// proxy refuse their logins until the oldest of them is that old (0: the defaults).
	MaxFailedLogins    int
	FailedLoginsWindow time.Duration
	// Now is the limiter's clock (nil: time.Now).
	Now func() time.Time
	Log *zap.Logger
}

// Proxy serves ssh users until Close.
type Proxy struct {
	cfg      Config
	auths    []authenticator
	limiter  *limiter
	serve    tcpserve.Server
	requests atomic.Uint64
	closing  atomic.Bool
}

// New checks cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.HostKey == nil {
		return nil, errors.New("ssh proxy: no host key")
	}
	if cfg.BBS == nil {
		return nil, errors.New("ssh proxy: no BBS")
	}
	var auths []authenticator
	if len(cfg.Password) > 0 {
		auths = append(auths, newDiegoAuthenticator(cfg.Password))
		cfg.Password = nil
	}
	if cfg.CF != nil {
		a, err := newCFAuthenticator(*cfg.CF)
		if err != nil {
			return nil, err
		}
		auths = append(auths, a)
	}
	if len(auths) == 0 {
		return nil, errors.New("ssh proxy: no authenticator: give the diego authenticator a password or turn the cf authenticator on")
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
	p := &Proxy{cfg: cfg, auths: auths, limiter: newLimiter(cfg.MaxFailedLogins, cfg.FailedLoginsWindow, cfg.Now)}
	p.serve = tcpserve.Server{Max: cfg.MaxConnections, Refusal: "bbs ssh-proxy: too many connections, try again later",
		HandshakeTimeout: cfg.HandshakeTimeout, Handle: p.handle, Log: cfg.Log}
	return p, nil
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (p *Proxy) Serve(ln net.Listener) error { return p.serve.Serve(ln) }

// Close stops accepting and ends every session.
func (p *Proxy) Close() error {
	p.closing.Store(true)
	return p.serve.Close()
}

// handle authenticates one user, connects them to their instance and relays until either
// side ends; then it writes the session's audit line.
func (p *Proxy) handle(nc net.Conn) {
	id := fmt.Sprintf("%x", p.requests.Add(1))
	log := p.cfg.Log.With(zap.String("connection", id), zap.String("remote", nc.RemoteAddr().String()))
	var upstream *upstream
	cfg := &ssh.ServerConfig{
		MaxAuthTries:  3,
		ServerVersion: "SSH-2.0-bbs-ssh-proxy",
		PasswordCallback: func(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
			up, err := p.authenticate(meta, password)
			if err != nil {
				if errors.Is(err, errWrongPassword) {
					log.Info("wrong password", zap.String("user", meta.User()))
				} else {
					log.Info("refused", zap.String("user", meta.User()), zap.Error(err))
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
	inst := upstream.target.Instance
	log.Info("session started", zap.String("user", conn.User()), zap.String("instance_guid", inst.InstanceGUID),
		zap.String("definition_id", inst.DefinitionID), zap.String("cell_id", inst.CellID), zap.String("address", upstream.target.Address))
	a := audit{start: time.Now()}
	endedBy := relay(conn, chans, reqs, upstream.conn, upstream.chans, upstream.reqs, &a.toInstance, &a.fromInstance)
	if p.closing.Load() {
		endedBy = "proxy stopped"
	}
	a.log(log, conn.User(), upstream, endedBy)
}

// authenticate settles a login under the failed-login limit: the limit is checked before
// anything else (a limited client's code is not even exchanged, so not burnt), and the
// login counts as a failure only when its credentials or its right to the app were refused.
func (p *Proxy) authenticate(meta ssh.ConnMetadata, password []byte) (*upstream, error) {
	addrKey, userKey := limitKeys(meta.RemoteAddr(), meta.User())
	end, refusal := p.limiter.begin(addrKey, userKey)
	if refusal != nil {
		return nil, refusal
	}
	up, err := p.connect(meta.User(), password)
	end(isFailedLogin(err))
	return up, err
}

// connect logs the user in with their authenticator and connects to their instance.
func (p *Proxy) connect(user string, password []byte) (*upstream, error) {
	a, err := p.authenticatorFor(user)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), loginTimeout)
	defer cancel()
	l, err := a.login(ctx, user, password)
	if err != nil {
		return nil, err
	}
	ctx, cancel = context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	target, err := Resolve(ctx, p.cfg.BBS, l.ProcessGUID, l.Index)
	if err != nil {
		return nil, err
	}
	up, err := dial(ctx, target, p.cfg.DialTimeout)
	if err != nil {
		return nil, err
	}
	up.login = l
	return up, nil
}

// authenticatorFor picks the authenticator by the user name's prefix; a name of neither
// form is a failed login.
func (p *Proxy) authenticatorFor(user string) (authenticator, error) {
	var forms []string
	for _, a := range p.auths {
		if strings.HasPrefix(user, strings.SplitAfter(a.form(), ":")[0]) {
			return a, nil
		}
		forms = append(forms, a.form())
	}
	for _, prefix := range []string{diegoPrefix, cfPrefix} {
		if strings.HasPrefix(user, prefix) {
			return nil, refuseLogin("user %s: this proxy does not log in %s users; log in as %s", quote(user),
				strings.TrimSuffix(prefix, ":"), strings.Join(forms, " or "))
		}
	}
	return nil, refuseLogin("user %s is not of the form %s", quote(user), strings.Join(forms, " or "))
}

// upstream is the proxy's connection to an instance's daemon.
type upstream struct {
	login  *login
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
