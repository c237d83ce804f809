package devstack

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// The ssh material is made once and kept: a second start logs in with the same password
// and presents the same host keys. Keys and password are readable by us alone.
func TestDevSSHIsKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ssh")
	first, err := loadDevSSH(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := loadDevSSH(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.password == "" || first.password != second.password ||
		string(first.proxyHostKey.PublicKey().Marshal()) != string(second.proxyHostKey.PublicKey().Marshal()) ||
		first.instancePEM != second.instancePEM || first.proxyPEM != second.proxyPEM {
		t.Error("the second load made new material")
	}
	for _, name := range []string{"proxy_host_key", "proxy_password", "instance_host_key", "instance_login_key"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", name, st.Mode().Perm())
		}
	}
}

// The demo LRP is composed as Cloud Controller composes an app with ssh: the daemon beside
// the app with the instances' host key and the proxy's public key, and a diego-ssh route
// with the fingerprint the proxy checks and the key it logs in with.
func TestWriteDemoLRP(t *testing.T) {
	d, err := loadDevSSH(filepath.Join(t.TempDir(), "ssh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.writeDemoLRP("/bin/bbs", "/bin/demoapp"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(d.DemoLRPFile())
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		DesiredLRP struct {
			Routes map[string]json.RawMessage `json:"routes"`
			Action struct {
				Codependent struct {
					Actions []struct {
						Run struct {
							Path string `json:"path"`
							Env  []struct{ Name, Value string }
						} `json:"run"`
					} `json:"actions"`
				} `json:"codependent"`
			} `json:"action"`
		} `json:"desired_lrp"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	var route sshproxy.Route
	if err := json.Unmarshal(req.DesiredLRP.Routes[sshproxy.RouteName], &route); err != nil {
		t.Fatal(err)
	}
	if route.ContainerPort != 2222 || route.HostFingerprint != sshproxy.Fingerprint(d.instanceHost.PublicKey()) || route.PrivateKey != d.proxyPEM {
		t.Errorf("route %+v", route)
	}
	actions := req.DesiredLRP.Action.Codependent.Actions
	if len(actions) != 2 || actions[0].Run.Path != "/bin/demoapp" || actions[1].Run.Path != "/bin/bbs" {
		t.Fatalf("actions %+v", actions)
	}
	env := map[string]string{}
	for _, e := range actions[1].Run.Env {
		env[e.Name] = e.Value
	}
	if env[boot.EnvSSHDHostKey] != d.instancePEM {
		t.Error("the daemon does not get the instances' host key")
	}
	if env[boot.EnvSSHDAuthorizedKey] != string(ssh.MarshalAuthorizedKey(d.proxyKey.PublicKey())) {
		t.Error("the daemon does not authorize the proxy's key")
	}
}

// The stand-in Cloud Controller logs each request, one line each, and answers 200.
func TestStandInCC(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cc.log")
	cc, err := startDevCC(file, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(cc.URL+"/internal/v4/apps/crashed", "application/json", strings.NewReader(`{"index":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cc.stop()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), ` POST /internal/v4/apps/crashed {"index":1}`+"\n") {
		t.Errorf("log %q", raw)
	}
}
