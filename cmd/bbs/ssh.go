package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/sshd"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// Environment variables that carry the ssh key material and password (each also as
// NAME_FILE naming a file that holds it): never flags, which `ps` shows.
const (
	envSSHDHostKey       = "SSHD_HOST_KEY"
	envSSHDAuthorizedKey = "SSHD_AUTHORIZED_KEY"
	envProxyHostKey      = "BBS_SSH_PROXY_HOST_KEY"
	envProxyPassword     = "BBS_SSH_PROXY_PASSWORD"
)

// runSSHDCommand runs the ssh daemon inside an instance, as an LRP's codependent action
// beside the app.
func runSSHDCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sshd", flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on (default: $CF_INSTANCE_IP and the host port the cell maps --port to, from $CF_INSTANCE_PORTS)")
	port := fs.Uint("port", 2222, "the container port of the LRP's diego-ssh route")
	maxConns := fs.Int("max-connections", sshd.DefaultMaxConnections, "connections served at once")
	handshake := fs.Duration("handshake-timeout", sshd.DefaultHandshakeTimeout, "time allowed for a connection's handshake")
	logLevel := logLevelFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bbs sshd [flags]\n\nThe host key (PEM) comes from $%[1]s or the file $%[1]s_FILE, the authorized key\n"+
			"(authorized_keys lines) from $%[2]s or $%[2]s_FILE.\n\n", envSSHDHostKey, envSSHDAuthorizedKey)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	hostKey, err := signerFromEnv(envSSHDHostKey)
	if err != nil {
		return err
	}
	authorized, err := authorizedKeysFromEnv(envSSHDAuthorizedKey)
	if err != nil {
		return err
	}
	if *port == 0 || *port > 65535 {
		return errors.New("--port must be between 1 and 65535")
	}
	address := envOr("CF_INSTANCE_IP", "127.0.0.1")
	ports, err := sshd.ParseInstancePorts(address, os.Getenv("CF_INSTANCE_PORTS"))
	if err != nil {
		return err
	}
	if *listen == "" {
		*listen = net.JoinHostPort(address, strconv.Itoa(int(ports.HostPort(uint32(*port)))))
	}
	dir, _ := os.Getwd()
	d, err := system.StartSSHD(ctx, system.SSHDConfig{Listen: *listen, Daemon: sshd.Config{
		HostKey: hostKey, AuthorizedKeys: authorized, Env: sessionEnv(), Dir: dir, Ports: ports,
		MaxConnections: *maxConns, HandshakeTimeout: *handshake, Log: log,
	}})
	if err != nil {
		return err
	}
	log.Info("sshd listening", zap.String("address", d.Addr), zap.Uint("container_port", *port))
	<-ctx.Done()
	return d.Stop()
}

// sessionEnv is the instance's environment without the daemon's own key material.
func sessionEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.TrimSuffix(name, "_FILE") {
		case envSSHDHostKey, envSSHDAuthorizedKey:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runSSHProxyCommand runs the ssh proxy.
func runSSHProxyCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ssh-proxy", flag.ContinueOnError)
	listen := fs.String("listen", envOr("BBS_SSH_PROXY_LISTEN_ADDR", "127.0.0.1:2222"), "address ssh users connect to [BBS_SSH_PROXY_LISTEN_ADDR]")
	public := fs.Bool("public", false, "allow --listen beyond loopback")
	apiURL := fs.String("api-url", envOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	maxConns := fs.Int("max-connections", sshproxy.DefaultMaxConnections, "connections served at once")
	handshake := fs.Duration("handshake-timeout", sshproxy.DefaultHandshakeTimeout, "time allowed for a user's handshake and password")
	logLevel := logLevelFlag(fs)
	metricsOpts := registerMetrics(fs, sshProxyMetricsAddr, nil)
	var peerTLS clientTLSFlags
	peerTLS.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bbs ssh-proxy [flags]\n\nThe diego authenticator's password comes from $%[1]s or the file $%[1]s_FILE, the\n"+
			"proxy's host key (PEM) from $%[2]s or $%[2]s_FILE.\n\n", envProxyPassword, envProxyHostKey)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, false)
	if err != nil {
		return err
	}
	defer log.Sync()
	_, stopMetrics, err := metricsOpts.start(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	hostKey, err := signerFromEnv(envProxyHostKey)
	if err != nil {
		return err
	}
	password, err := secretFromEnv(envProxyPassword)
	if err != nil {
		return err
	}
	if password == "" {
		return fmt.Errorf("%s (or %s_FILE) is not set", envProxyPassword, envProxyPassword)
	}
	apiTLS, err := peerTLS.config()
	if err != nil {
		return err
	}
	p, err := system.StartSSHProxy(ctx, system.SSHProxyConfig{Listen: *listen, Public: *public, Proxy: sshproxy.Config{
		HostKey: hostKey, Password: []byte(password), BBS: bbsclient.New(*apiURL, apiTLS),
		MaxConnections: *maxConns, HandshakeTimeout: *handshake, Log: log.Named("ssh-proxy"),
	}})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return p.Stop()
}

// signerFromEnv reads a PEM private key from $name or $name_FILE. Its errors never quote
// the key.
func signerFromEnv(name string) (ssh.Signer, error) {
	pem, err := secretFromEnv(name)
	if err != nil {
		return nil, err
	}
	if pem == "" {
		return nil, fmt.Errorf("%s (or %s_FILE) is not set", name, name)
	}
	s, err := ssh.ParsePrivateKey([]byte(pem))
	if err != nil {
		return nil, fmt.Errorf("%s is not a PEM private key without a passphrase", name)
	}
	return s, nil
}

// authorizedKeysFromEnv reads authorized_keys lines from $name or $name_FILE.
func authorizedKeysFromEnv(name string) ([]ssh.PublicKey, error) {
	text, err := secretFromEnv(name)
	if err != nil {
		return nil, err
	}
	var keys []ssh.PublicKey
	rest := []byte(text)
	for len(strings.TrimSpace(string(rest))) > 0 {
		k, _, _, r, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			return nil, fmt.Errorf("%s: not an authorized_keys line: %w", name, err)
		}
		keys, rest = append(keys, k), r
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s (or %s_FILE) is not set", name, name)
	}
	return keys, nil
}
