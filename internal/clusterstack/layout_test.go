package clusterstack

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func testLayout() layout {
	return layout{
		cfg: Config{Listen: "127.0.0.1:8889", ProtocolListen: "127.0.0.1:8890", PortBase: 17000, APIReplicas: 2,
			Zones: 2, InstancePortBase: 61000, CellExecutor: "sim", RouterAddr: "127.0.0.1:8080", RouterAdminAddr: "127.0.0.1:8081",
			MetricsPortBase: 9890, LogLevel: "debug"},
		dir: "/data", certs: clusterCerts{dir: "/certs"}, dbURL: "postgres://db", temporalAddr: "127.0.0.1:7233", namespace: "default",
	}
}

// Every process presents the client certificate; those that listen require one.
func TestEnvironmentIsMutualTLS(t *testing.T) {
	l := testLayout()
	peer := map[string]string{"BBS_PEER_CA_FILE": "/certs/ca.crt", "BBS_CLIENT_CERT_FILE": "/certs/client.crt", "BBS_CLIENT_KEY_FILE": "/certs/client.key"}
	server := map[string]string{"BBS_TLS_CERT_FILE": "/certs/server.crt", "BBS_TLS_KEY_FILE": "/certs/server.key", "BBS_TLS_CLIENT_CA_FILE": "/certs/ca.crt"}
	temporal := map[string]string{"TEMPORAL_TLS_CA": "/certs/ca.crt", "TEMPORAL_TLS_CERT": "/certs/client.crt", "TEMPORAL_TLS_KEY": "/certs/client.key"}
	for name, c := range map[string]struct {
		env  map[string]string
		want []map[string]string
	}{
		"api":    {l.apiEnv(1), []map[string]string{peer, server, temporal}},
		"lb":     {l.lbEnv(), []map[string]string{peer, server}},
		"worker": {l.workerEnv(1), []map[string]string{peer, temporal}},
		"router": {l.routerEnv(), []map[string]string{peer}},
		"cell":   {l.cellEnv(1), []map[string]string{peer, server}},
	} {
		for _, want := range c.want {
			for k, v := range want {
				if c.env[k] != v {
					t.Errorf("%s: %s=%q, want %q", name, k, c.env[k], v)
				}
			}
		}
		if c.env["BBS_LOG_LEVEL"] != "debug" {
			t.Errorf("%s: log level %q", name, c.env["BBS_LOG_LEVEL"])
		}
		if name != "api" && name != "lb" && name != "cell" && c.env["BBS_TLS_KEY_FILE"] != "" {
			t.Errorf("%s listens with TLS it has no listener for", name)
		}
	}
}

// The addresses are those the flags' usage and deploy/prometheus-cluster.yml say.
func TestAddresses(t *testing.T) {
	l := testLayout()
	api := l.apiEnv(2)
	if api["BBS_LISTEN_ADDR"] != "127.0.0.1:17011" || api["BBS_PROTOCOL_LISTEN_ADDR"] != "127.0.0.1:17012" ||
		api["BBS_METRICS_LISTEN_ADDR"] != "127.0.0.1:9912" || api["DATABASE_URL"] != "postgres://db" || api["TEMPORAL_ADDRESS"] != "127.0.0.1:7233" {
		t.Errorf("api-2: %v", api)
	}
	lb := l.lbEnv()
	if lb["BBS_LB_BACKENDS"] != "127.0.0.1:17001,127.0.0.1:17011" || lb["BBS_LB_PROTOCOL_BACKENDS"] != "127.0.0.1:17002,127.0.0.1:17012" ||
		lb["BBS_LB_LISTEN_ADDR"] != "127.0.0.1:8889" || lb["BBS_METRICS_LISTEN_ADDR"] != "127.0.0.1:9890" {
		t.Errorf("lb: %v", lb)
	}
	if w := l.workerEnv(2); w["BBS_METRICS_LISTEN_ADDR"] != "127.0.0.1:9892" {
		t.Errorf("worker-2: %v", w)
	}
	cell := l.cellEnv(3)
	if cell["BBS_CELL_ID"] != "cell-3" || cell["BBS_CELL_ZONE"] != "z1" || cell["BBS_CELL_PORT_RANGE"] != "63000-63999" ||
		cell["BBS_CELL_WORK_DIR"] != "/data/cells/cell-3" || cell["BBS_API_URL"] != "https://127.0.0.1:8889" ||
		cell["BBS_METRICS_LISTEN_ADDR"] != "127.0.0.1:9903" || cell["BBS_CELL_EXECUTOR"] != "sim" {
		t.Errorf("cell-3: %v", cell)
	}
	if r := l.routerEnv(); r["BBS_API_URL"] != "https://127.0.0.1:8889" || r["BBS_ROUTER_ADMIN_ADDR"] != "127.0.0.1:8081" {
		t.Errorf("router: %v", r)
	}
}

// The workers get a convergence interval only when one is asked for.
func TestWorkerConvergenceInterval(t *testing.T) {
	l := testLayout()
	if _, ok := l.workerEnv(1)["BBS_CONVERGENCE_INTERVAL"]; ok {
		t.Error("an interval without --convergence-interval")
	}
	l.cfg.ConvergenceInterval = 5 * time.Second
	if got := l.workerEnv(1)["BBS_CONVERGENCE_INTERVAL"]; got != "5s" {
		t.Errorf("interval %q", got)
	}
}

// The cells get a capacity only when one is asked for, else `bbs cell`'s own default.
func TestCellCapacity(t *testing.T) {
	l := testLayout()
	for _, name := range []string{"BBS_CELL_MEMORY_MB", "BBS_CELL_DISK_MB", "BBS_CELL_CONTAINERS"} {
		if v, ok := l.cellEnv(1)[name]; ok {
			t.Errorf("%s=%s without a capacity flag", name, v)
		}
	}
	l.cfg.CellMemoryMB, l.cfg.CellDiskMB, l.cfg.CellContainers = 32768, 65536, 2000
	env := l.cellEnv(2)
	if env["BBS_CELL_MEMORY_MB"] != "32768" || env["BBS_CELL_DISK_MB"] != "65536" || env["BBS_CELL_CONTAINERS"] != "2000" {
		t.Errorf("cell-2: %v", env)
	}
}

// A child gets exactly what the cluster decides: none of our own BBS_, DATABASE_URL,
// TEMPORAL_ or SSHD_ settings pass through.
func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "BBS_LOG_LEVEL=warn", "DATABASE_URL_FILE=/x", "TEMPORAL_ADDRESS=x", "SSHD_HOST_KEY=k", "HOME=/h"},
		map[string]string{"BBS_LOG_LEVEL": "info"})
	slices.Sort(got)
	if want := []string{"BBS_LOG_LEVEL=info", "HOME=/h", "PATH=/bin"}; !slices.Equal(got, want) {
		t.Errorf("childEnv = %v, want %v", got, want)
	}
}

func TestMergeLaterWins(t *testing.T) {
	got := merge(map[string]string{"a": "1", "b": "1"}, map[string]string{"b": "2"})
	if len(got) != 2 || got["a"] != "1" || got["b"] != "2" {
		t.Errorf("merge = %v", got)
	}
}

// The certificates are named in the layout deploy/gen-certs.sh writes.
func TestCertificateLayout(t *testing.T) {
	c := clusterCerts{dir: "/certs"}
	if got := strings.Join(c.temporalUIArgs(), " "); got != "--tls-ca /certs/ca.crt --tls-cert /certs/client.crt --tls-key /certs/client.key" {
		t.Errorf("UI args %q", got)
	}
	if tls := c.temporalServerTLS(); !strings.Contains(tls, `certFile: "/certs/client.crt"`) || strings.Count(tls, "requireClientAuth: true") != 2 {
		t.Errorf("server TLS:\n%s", tls)
	}
}
