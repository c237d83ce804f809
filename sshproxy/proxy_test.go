package sshproxy

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/sshd"
	"go.uber.org/zap/zaptest"
	"golang.org/x/crypto/ssh"
)

const password = "s3cret-proxy-password"

type stack struct {
	proxyAddr string
	proxyKey  ssh.Signer
	daemon    *sshd.Server
	bbs       *fakeBBS
}

// startStack runs a daemon (as an instance would) and a proxy whose BBS knows one LRP "web"
// whose index 0 is that daemon; routeFor makes the LRP's diego-ssh route, and each option
// changes the proxy's configuration (the diego authenticator with the password, by default).
func startStack(t *testing.T, routeFor func(host ssh.PublicKey, pemKey string) Route, options ...func(*Config)) *stack {
	t.Helper()
	host, _ := newKey(t)
	auth, pemKey := newKey(t)
	daemon, err := sshd.New(sshd.Config{HostKey: host, AuthorizedKeys: []ssh.PublicKey{auth.PublicKey()},
		Env: []string{"PATH=" + os.Getenv("PATH"), "CF_INSTANCE_INDEX=0"}, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go daemon.Serve(dln)
	t.Cleanup(func() { daemon.Close() })
	dport := uint32(dln.Addr().(*net.TCPAddr).Port)

	route := routeJSON(t, routeFor(host.PublicKey(), pemKey))
	bbs := &fakeBBS{
		deps: []model.LRPDeployment{deployment(t, model.Routes{RouteName: route}, map[string][]uint32{"v2": {8080, 2222}})},
		instances: []model.ActualLRP{instance("i0", "v2", 0, model.StateRunning, false,
			model.PortMapping{ContainerPort: 8080, HostPort: 1}, model.PortMapping{ContainerPort: 2222, HostPort: dport})},
	}
	proxyKey, _ := newKey(t)
	cfg := Config{HostKey: proxyKey, Password: []byte(password), BBS: bbs, Log: zaptest.NewLogger(t)}
	for _, o := range options {
		o(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(pln)
	t.Cleanup(func() { p.Close() })
	return &stack{proxyAddr: pln.Addr().String(), proxyKey: proxyKey, daemon: daemon, bbs: bbs}
}

func goodRoute(host ssh.PublicKey, pemKey string) Route {
	return Route{ContainerPort: 2222, HostFingerprint: Fingerprint(host), PrivateKey: pemKey}
}

// dial logs in as user with pw and returns the client and the banners it was shown.
func (s *stack) dial(user, pw string) (*ssh.Client, string, error) {
	var mu sync.Mutex
	var banners strings.Builder
	c, err := ssh.Dial("tcp", s.proxyAddr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.Password(pw)},
		HostKeyCallback: ssh.FixedHostKey(s.proxyKey.PublicKey()),
		BannerCallback:  func(m string) error { mu.Lock(); banners.WriteString(m); mu.Unlock(); return nil },
	})
	mu.Lock()
	defer mu.Unlock()
	return c, banners.String(), err
}

func TestProxyRelaysToTheInstance(t *testing.T) {
	s := startStack(t, goodRoute)
	c, _, err := s.dial("diego:web/0", password)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Setenv("FROM_CLIENT", "yes")
	out, err := sess.Output("echo index=$CF_INSTANCE_INDEX client=$FROM_CLIENT; exit 0")
	if err != nil || string(out) != "index=0 client=yes\n" {
		t.Fatalf("exec through the proxy: %q %v", out, err)
	}
	// A refusal of the daemon comes back as it is.
	if _, err := c.Dial("tcp", "example.com:80"); err == nil || !strings.Contains(err.Error(), "only this instance's own ports") {
		t.Fatalf("forward to elsewhere: %v", err)
	}
	// The instance stops: the session ends with it.
	sess2, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess2.Start("sleep 60"); err != nil {
		t.Fatal(err)
	}
	s.daemon.Close()
	if err := sess2.Wait(); err == nil {
		t.Fatal("the session outlived its instance")
	}
	if err := c.Wait(); err == nil {
		t.Fatal("the connection outlived its instance")
	}
}

func TestProxyRefusesWithAReason(t *testing.T) {
	s := startStack(t, goodRoute)
	s.bbs.instances = append(s.bbs.instances, instance("i1", "v2", 1, model.StateCrashed, false))
	for _, tc := range []struct{ user, pw, want string }{
		{"diego:web/0", "wrong", "bbs ssh-proxy: permission denied"},
		{"diego:web/0", password[:len(password)-1], "bbs ssh-proxy: permission denied"},
		{"root", password, "is not of the form diego:<process_guid>/<index>"},
		{"diego:nope/0", password, `there is no LRP with process guid "nope"`},
		{"diego:web/1", password, `LRP "web", index 1: no RUNNING instance (CRASHED)`},
		{"diego:web/" + strconv.Itoa(3), password, "index 3 is out of range"},
	} {
		c, banner, err := s.dial(tc.user, tc.pw)
		if err == nil {
			c.Close()
			t.Fatalf("%s with %q logged in", tc.user, tc.pw)
		}
		if !strings.Contains(banner, tc.want) {
			t.Errorf("%s: banner %q, want %q", tc.user, banner, tc.want)
		}
		if strings.Contains(banner, password) {
			t.Errorf("the banner shows the password")
		}
	}
}

func TestProxyRefusesADaemonWithAnotherHostKey(t *testing.T) {
	impostor, _ := newKey(t)
	s := startStack(t, func(_ ssh.PublicKey, pemKey string) Route {
		return Route{ContainerPort: 2222, HostFingerprint: Fingerprint(impostor.PublicKey()), PrivateKey: pemKey}
	})
	_, banner, err := s.dial("diego:web/0", password)
	if err == nil || !strings.Contains(banner, "does not have the host key its LRP's diego-ssh route names") {
		t.Fatalf("login to a daemon with another host key: %v, banner %q", err, banner)
	}
}

func TestProxyNeedsAKeyTheDaemonAuthorizes(t *testing.T) {
	_, otherPEM := newKey(t)
	s := startStack(t, func(host ssh.PublicKey, _ string) Route {
		return Route{ContainerPort: 2222, HostFingerprint: Fingerprint(host), PrivateKey: otherPEM}
	})
	_, banner, err := s.dial("diego:web/0", password)
	if err == nil || !strings.Contains(banner, "cannot open an ssh connection to instance i0") {
		t.Fatalf("login with a key the daemon does not know: %v, banner %q", err, banner)
	}
}
