package devstack

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/sshproxy"
)

// devSSH is the dev stack's ssh material, made at the first start under <data>/ssh and kept:
// the proxy's host key and password, and the key pair a demo LRP's daemons and the proxy
// share (Cloud Controller makes one per app; the dev stack one for every LRP it suggests).
type devSSH struct {
	dir          string
	proxyHostKey ssh.Signer
	password     string
	instanceHost ssh.Signer
	instancePEM  string // the daemons' host key, PEM
	proxyPEM     string // the key the proxy logs in to daemons with, PEM
	proxyKey     ssh.Signer
}

// PasswordFile is where the proxy's password is kept (mode 0600).
func (d *devSSH) PasswordFile() string { return filepath.Join(d.dir, "proxy_password") }

// DemoLRPFile is a desire request for the demo app with ssh enabled.
func (d *devSSH) DemoLRPFile() string { return filepath.Join(d.dir, "demo-lrp.json") }

// loadDevSSH reads the dev stack's ssh material from dir, making what is missing.
func loadDevSSH(dir string) (*devSSH, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d := &devSSH{dir: dir}
	var err error
	var proxyHostPEM string
	if proxyHostPEM, err = keepFile(filepath.Join(dir, "proxy_host_key"), newPEMKey); err != nil {
		return nil, err
	}
	if d.password, err = keepFile(d.PasswordFile(), newPassword); err != nil {
		return nil, err
	}
	if d.instancePEM, err = keepFile(filepath.Join(dir, "instance_host_key"), newPEMKey); err != nil {
		return nil, err
	}
	if d.proxyPEM, err = keepFile(filepath.Join(dir, "instance_login_key"), newPEMKey); err != nil {
		return nil, err
	}
	for _, k := range []struct {
		pem string
		to  *ssh.Signer
	}{{proxyHostPEM, &d.proxyHostKey}, {d.instancePEM, &d.instanceHost}, {d.proxyPEM, &d.proxyKey}} {
		if *k.to, err = ssh.ParsePrivateKey([]byte(k.pem)); err != nil {
			return nil, fmt.Errorf("a key under %s is not a PEM private key: remove the directory to make new ones", dir)
		}
	}
	return d, nil
}

// keepFile returns the file's content, writing create's first (mode 0600) when it is missing.
func keepFile(path string, create func() (string, error)) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return string(b), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	v, err := create()
	if err != nil {
		return "", err
	}
	return v, os.WriteFile(path, []byte(v), 0o600)
}

// newPEMKey is a new ed25519 private key in OpenSSH's PEM format.
func newPEMKey() (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(block)), nil
}

// newPassword is a new random password (18 bytes, URL-safe base64).
func newPassword() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DemoAppGUID is the demo LRP's log_guid: the app guid Cloud Controller would have given it,
// which `cf ssh` users name (cf:<app_guid>/<index>).
const DemoAppGUID = "6f1c6e7e-3a53-4c7e-9b8e-2d6f3f0c9a11"

// writeDemoLRP writes a desire request for cmd/demoapp with ssh enabled, composed as Cloud
// Controller composes an app with ssh: the app and `bbs sshd` as codependent actions, the
// ssh port among the definition's ports, and a diego-ssh route naming the daemons' host
// key fingerprint and the key the proxy logs in with. The file holds keys: mode 0600.
func (d *devSSH) writeDemoLRP(bbsBin, demoBin string) error {
	route, err := json.Marshal(sshproxy.Route{ContainerPort: 2222,
		HostFingerprint: sshproxy.Fingerprint(d.instanceHost.PublicKey()), PrivateKey: d.proxyPEM})
	if err != nil {
		return err
	}
	type obj = map[string]any
	lrp := obj{"desired_lrp": obj{
		"process_guid": "demo", "log_guid": DemoAppGUID, "domain": "cf-apps", "instances": 3, "rootfs": "preloaded:cflinuxfs4",
		"memory_mb": 64, "disk_mb": 64, "ports": []int{8080, 2222},
		"env": []obj{{"name": "DEMO_VERSION", "value": "v1"}},
		"routes": obj{
			"cf-router":        []obj{{"hostnames": []string{"demo.example.com"}, "port": 8080}},
			sshproxy.RouteName: json.RawMessage(route),
		},
		"action": obj{"codependent": obj{"actions": []obj{
			{"run": obj{"path": demoBin}},
			{"run": obj{"path": bbsBin, "args": []string{"sshd", "--port", "2222"}, "env": []obj{
				{"name": boot.EnvSSHDHostKey, "value": d.instancePEM},
				{"name": boot.EnvSSHDAuthorizedKey, "value": string(ssh.MarshalAuthorizedKey(d.proxyKey.PublicKey()))},
			}}},
		}}},
		"check_definition": obj{"checks": []obj{{"http_check": obj{"port": 8080, "path": "/health"}}}},
	}}
	b, err := json.MarshalIndent(lrp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(d.DemoLRPFile(), b, 0o600)
}

// startSSHProxy starts the dev stack's ssh proxy (none when Config.SSHProxyAddr is empty)
// with the keys and password under <data>/ssh, and writes the demo LRP with ssh beside
// them. The banner's line names the password's file, not the password.
func (s *stack) startSSHProxy(ctx context.Context) error {
	if s.cfg.SSHProxyAddr == "" {
		s.banner.ssh = "not started (--ssh-proxy-listen is empty)"
		return nil
	}
	keys, err := loadDevSSH(filepath.Join(s.dir, "ssh"))
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	if err := keys.writeDemoLRP(self, filepath.Join(cwd, "bin", "demoapp")); err != nil {
		return err
	}
	bbs := bbsclient.New(s.api.URL(), nil)
	cf, err := startDevCF(keys.dir, processByLogGUID(bbs), s.log)
	if err != nil {
		return err
	}
	p, err := system.StartSSHProxy(ctx, system.SSHProxyConfig{Listen: s.cfg.SSHProxyAddr, Proxy: sshproxy.Config{
		HostKey: keys.proxyHostKey, Password: []byte(keys.password), CF: cf.proxyAuth(), BBS: bbs,
		Log: s.log.Named("ssh-proxy"),
	}})
	if err != nil {
		cf.stop()
		return err
	}
	s.onStop(func() {
		s.log.Info("stopping the ssh proxy")
		p.Stop()
		cf.stop()
	})
	s.banner.ssh = sshLine(p.Addr, s.shown("ssh"), s.cfg.DataDir)
	return nil
}

// sshLine is the banner's lines on logging in through the proxy at addr, with either
// authenticator.
func sshLine(addr, shownSSHDir, dataDir string) string {
	host, port, _ := net.SplitHostPort(addr)
	codeCmd := "bin/bbs ssh-code"
	if dataDir != ".data" {
		codeCmd += " --data-dir " + dataDir
	}
	return fmt.Sprintf(`ssh -p %s diego:<process_guid>/<index>@%s  (password in %s; an LRP with ssh: %s)
                ssh -p %s cf:<app_guid>/<index>@%s  (as cf ssh: the password is a one-time code from '%s'; the demo LRP's app guid is %s)`,
		port, host, filepath.Join(shownSSHDir, "proxy_password"), filepath.Join(shownSSHDir, "demo-lrp.json"),
		port, host, codeCmd, DemoAppGUID)
}
