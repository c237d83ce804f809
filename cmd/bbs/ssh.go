package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/devstack"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/sshd"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// runSSHDCommand runs the ssh daemon inside an instance, as an LRP's codependent action
// beside the app.
func runSSHDCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("sshd")
	fs := cmd.Flags
	listen := fs.String("listen", "", "address to listen on (default: $CF_INSTANCE_IP and the host port the cell maps --port to, from $CF_INSTANCE_PORTS)")
	port := fs.Uint("port", 2222, "the container port of the LRP's diego-ssh route")
	maxConns := fs.Int("max-connections", sshd.DefaultMaxConnections, "connections served at once")
	handshake := fs.Duration("handshake-timeout", sshd.DefaultHandshakeTimeout, "time allowed for a connection's handshake")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bbs sshd [flags]\n\nThe host key (PEM) comes from $%[1]s or the file $%[1]s_FILE, the authorized key\n"+
			"(authorized_keys lines) from $%[2]s or $%[2]s_FILE.\n\n", boot.EnvSSHDHostKey, boot.EnvSSHDAuthorizedKey)
		fs.PrintDefaults()
	}
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	log := p.Log
	hostKey, err := signerFromEnv(boot.EnvSSHDHostKey)
	if err != nil {
		return err
	}
	authorized, err := authorizedKeysFromEnv(boot.EnvSSHDAuthorizedKey)
	if err != nil {
		return err
	}
	if *port == 0 || *port > 65535 {
		return errors.New("--port must be between 1 and 65535")
	}
	address := boot.EnvOr("CF_INSTANCE_IP", "127.0.0.1")
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
		case boot.EnvSSHDHostKey, boot.EnvSSHDAuthorizedKey:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runSSHProxyCommand runs the ssh proxy with its diego authenticator, its cf
// authenticator, or both.
func runSSHProxyCommand(ctx context.Context, args []string) error {
	cmd := boot.NewCommand("ssh-proxy")
	fs := cmd.Flags
	listen := fs.String("listen", boot.EnvOr("BBS_SSH_PROXY_LISTEN_ADDR", "127.0.0.1:2222"), "address ssh users connect to [BBS_SSH_PROXY_LISTEN_ADDR]")
	public := fs.Bool("public", false, "allow --listen beyond loopback")
	apiURL := fs.String("api-url", boot.EnvOr("BBS_API_URL", "http://127.0.0.1:8889"), "the BBS API [BBS_API_URL]")
	maxConns := fs.Int("max-connections", sshproxy.DefaultMaxConnections, "connections served at once")
	handshake := fs.Duration("handshake-timeout", sshproxy.DefaultHandshakeTimeout, "time allowed for a user's handshake and password")
	diegoAuth := fs.Bool("enable-diego-auth", true, "log in users diego:<process_guid>/<index> with the proxy's password")
	var cf cfAuthFlags
	cf.register(fs)
	maxFailed := fs.Int("max-failed-logins", sshproxy.DefaultMaxFailedLogins, "failed logins from one address or for one user within --failed-login-window; then their logins are refused until it cools")
	failedWindow := fs.Duration("failed-login-window", sshproxy.DefaultFailedLoginsWindow, "the window --max-failed-logins counts in")
	cmd.Metrics(sshProxyMetricsAddr)
	cmd.PeerTLS()
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bbs ssh-proxy [flags]\n\nThe diego authenticator's password comes from $%[1]s or the file $%[1]s_FILE, the\n"+
			"cf authenticator's UAA client secret from $%[3]s or $%[3]s_FILE, the\n"+
			"proxy's host key (PEM) from $%[2]s or $%[2]s_FILE.\n\n", boot.EnvProxyPassword, boot.EnvProxyHostKey, boot.EnvProxyUAAClientSecret)
		fs.PrintDefaults()
	}
	p, err := cmd.Start(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close()
	hostKey, err := signerFromEnv(boot.EnvProxyHostKey)
	if err != nil {
		return err
	}
	cfg := sshproxy.Config{HostKey: hostKey, BBS: bbsclient.New(*apiURL, p.PeerTLS), MaxConnections: *maxConns,
		HandshakeTimeout: *handshake, MaxFailedLogins: *maxFailed, FailedLoginsWindow: *failedWindow, Log: p.Log.Named("ssh-proxy")}
	if *diegoAuth {
		password, err := boot.SecretFromEnv(boot.EnvProxyPassword)
		if err != nil {
			return err
		}
		if password == "" {
			return fmt.Errorf("%s (or %s_FILE) is not set (or turn the diego authenticator off: --enable-diego-auth=false)", boot.EnvProxyPassword, boot.EnvProxyPassword)
		}
		cfg.Password = []byte(password)
	}
	if cfg.CF, err = cf.auth(); err != nil {
		return err
	}
	if cfg.Password == nil && cfg.CF == nil {
		return errors.New("no authenticator: leave --enable-diego-auth on or turn --enable-cf-auth on")
	}
	proxy, err := system.StartSSHProxy(ctx, system.SSHProxyConfig{Listen: *listen, Public: *public, Proxy: cfg})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return proxy.Stop()
}

// cfAuthFlags are the cf authenticator's flags: where UAA and Cloud Controller are and the
// CA their certificates chain to. The client secret is no flag.
type cfAuthFlags struct {
	enable                    *bool
	tokenURL, clientID, ccURL *string
	caFile                    *string
}

func (f *cfAuthFlags) register(fs *flag.FlagSet) {
	f.enable = fs.Bool("enable-cf-auth", false, "log in users cf:<app_guid>/<index> with a one-time code from UAA (cf ssh)")
	f.tokenURL = fs.String("uaa-token-url", boot.EnvOr("BBS_SSH_PROXY_UAA_TOKEN_URL", ""), "UAA's token endpoint, e.g. https://uaa.example.com/oauth/token [BBS_SSH_PROXY_UAA_TOKEN_URL]")
	f.clientID = fs.String("uaa-client-id", boot.EnvOr("BBS_SSH_PROXY_UAA_CLIENT_ID", sshproxy.DefaultUAAClientID), "the proxy's UAA client, the one cf ssh-code asks a code for [BBS_SSH_PROXY_UAA_CLIENT_ID]")
	f.ccURL = fs.String("cc-internal-url", boot.EnvOr("BBS_SSH_PROXY_CC_URL", ""), "Cloud Controller's API that serves /internal/apps/<guid>/ssh_access/<index> [BBS_SSH_PROXY_CC_URL]")
	f.caFile = fs.String("cf-ca-file", boot.EnvOr("BBS_SSH_PROXY_CF_CA_FILE", ""), "CA certificates (PEM) of UAA's and Cloud Controller's https (default: the system's) [BBS_SSH_PROXY_CF_CA_FILE]")
}

// auth is the cf authenticator's configuration, nil when it is off.
func (f *cfAuthFlags) auth() (*sshproxy.CFAuth, error) {
	if !*f.enable {
		return nil, nil
	}
	secret, err := boot.SecretFromEnv(boot.EnvProxyUAAClientSecret)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, fmt.Errorf("--enable-cf-auth needs %s (or %s_FILE)", boot.EnvProxyUAAClientSecret, boot.EnvProxyUAAClientSecret)
	}
	if *f.tokenURL == "" || *f.ccURL == "" {
		return nil, errors.New("--enable-cf-auth needs --uaa-token-url and --cc-internal-url")
	}
	tlsCfg, err := (&boot.ClientTLS{CAFile: *f.caFile}).Config()
	if err != nil {
		return nil, fmt.Errorf("--cf-ca-file: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	return &sshproxy.CFAuth{UAATokenURL: *f.tokenURL, ClientID: *f.clientID, ClientSecret: secret, CCURL: *f.ccURL,
		HTTP: &http.Client{Transport: transport, Timeout: 10 * time.Second}}, nil
}

// runSSHCodeCommand prints a one-time code for the cf authenticator from the dev stack's
// stand-in UAA, as `cf ssh-code` prints one from a real UAA.
func runSSHCodeCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ssh-code", flag.ContinueOnError)
	dataDir := fs.String("data-dir", boot.EnvOr("BBS_DATA_DIR", ".data"), "the dev stack's data directory (make run's) [BBS_DATA_DIR]")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bbs ssh-code [flags]\n\nPrints a one-time code: the password of ssh -p 2222 cf:<app_guid>/<index>@127.0.0.1\n"+
			"against 'make run'. A code is good once, for 5 minutes.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	code, err := devstack.SSHCode(ctx, *dataDir)
	if err != nil {
		return err
	}
	fmt.Println(code)
	return nil
}

// signerFromEnv reads a PEM private key from $name or $name_FILE. Its errors never quote
// the key.
func signerFromEnv(name string) (ssh.Signer, error) {
	pem, err := boot.SecretFromEnv(name)
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
	text, err := boot.SecretFromEnv(name)
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
