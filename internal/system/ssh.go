package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/updatable-lrps/bbs/sshd"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
)

// SSHProxyConfig is what the ssh proxy process is made of.
type SSHProxyConfig struct {
	// Listen is the proxy's address; an address beyond loopback needs Public, because
	// whoever knows the password reaches every instance with a diego-ssh route.
	Listen string
	Public bool
	Proxy  sshproxy.Config
}

// SSHProxy is a running ssh proxy.
type SSHProxy struct {
	// Addr is where users connect.
	Addr  string
	proxy *sshproxy.Proxy
	done  chan struct{}
}

// StartSSHProxy serves ssh users on cfg.Listen.
func StartSSHProxy(_ context.Context, cfg SSHProxyConfig) (*SSHProxy, error) {
	p, err := sshproxy.New(cfg.Proxy)
	if err != nil {
		return nil, err
	}
	ln, err := listenSSH(cfg.Listen, cfg.Public, "--public")
	if err != nil {
		return nil, err
	}
	s := &SSHProxy{Addr: ln.Addr().String(), proxy: p, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := p.Serve(ln); err != nil {
			cfg.Proxy.Log.Error("ssh proxy stopped serving", zap.Error(err))
		}
	}()
	cfg.Proxy.Log.Info("ssh proxy listening", zap.String("address", s.Addr))
	return s, nil
}

// Stop ends every session and stops serving.
func (s *SSHProxy) Stop() error {
	err := s.proxy.Close()
	<-s.done
	return err
}

// listenSSH opens an SSH listener. SSH brings its own encryption and authentication, so
// unlike Listen it needs no TLS beyond loopback, only the operator's explicit consent.
func listenSSH(addr string, public bool, flagName string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && !public {
		return nil, errors.New("refusing to listen on " + addr + " beyond loopback without " + flagName)
	}
	return net.Listen("tcp", addr)
}

// SSHDConfig is what the in-instance ssh daemon is made of.
type SSHDConfig struct {
	// Listen is the daemon's address: where the instance's container port for ssh is
	// reached (its own address, where the app's ports listen too, chosen by the cell).
	Listen string
	Daemon sshd.Config
}

// SSHD is a running daemon.
type SSHD struct {
	Addr   string
	daemon *sshd.Server
	done   chan struct{}
}

// StartSSHD serves the daemon on cfg.Listen.
func StartSSHD(_ context.Context, cfg SSHDConfig) (*SSHD, error) {
	d, err := sshd.New(cfg.Daemon)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	s := &SSHD{Addr: ln.Addr().String(), daemon: d, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := d.Serve(ln); err != nil && cfg.Daemon.Log != nil {
			cfg.Daemon.Log.Error("sshd stopped serving", zap.Error(err))
		}
	}()
	return s, nil
}

// Stop closes every session, ending their processes, and stops serving.
func (s *SSHD) Stop() error {
	err := s.daemon.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
	return err
}
