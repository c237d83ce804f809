package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
)

// temporalServerBin is the real Temporal server `make cluster` runs (bin/temporal-server,
// which `make test` builds first); without one the test fails (skips in -short mode).
func temporalServerBin(t *testing.T) string {
	t.Helper()
	bin, err := temporaldev.FindServerBin()
	if err != nil {
		if testing.Short() {
			t.Skipf("-short: skipping a test that needs the Temporal server: %v", err)
		}
		t.Fatalf("this test needs the Temporal server: %v", err)
	}
	return bin
}

// pidOf reads a child's pid file under the cluster's data directory.
func pidOf(t *testing.T, dataDir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "run", name+".pid"))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	return pid
}

// TestClusterKeepsServingThroughKills is `make cluster` as an operator tries it: the real
// Temporal server on PostgreSQL, two API replicas behind the front, two workers, three cells
// and the router come up from one command; an LRP desired through the front runs on the
// cells; a rolling update runs to completion on the real Temporal server although one API
// replica and one worker are killed (SIGKILL) in the middle of it — the front keeps answering,
// the router keeps serving every request, no index goes unserved, and the supervisor restarts
// both. Every connection between the processes is mutual TLS, and every listener refuses a
// client without the cluster's client certificate. Ctrl-C stops every process; a second run
// resumes with the data (and the certificates) kept.
func TestClusterKeepsServingThroughKills(t *testing.T) {
	tbin := temporalServerBin(t)
	const n = 4
	dataDir := t.TempDir()
	apiPort, protocolPort, uiPort, routerPort, tPort, pgPort := freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t)
	base, metricsBase := freeport.Block(t, 64), freeport.Block(t, 32)
	args := []string{"cluster", "--data-dir", dataDir, "--temporal-server-bin", tbin, "--metrics-port-base", fmt.Sprint(metricsBase),
		"--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--bbs-listen", fmt.Sprintf("127.0.0.1:%d", protocolPort),
		"--port-base", fmt.Sprint(base), "--pg-port", fmt.Sprint(pgPort),
		// The cells' instance ports from a base of their own, not the default another
		// cluster on the machine may hold (see the upgrade test).
		"--instance-port-base", fmt.Sprint(freeport.Spread(t, 3, 1000, 64)),
		"--temporal-port", fmt.Sprint(tPort), "--temporal-ui-port", fmt.Sprint(uiPort),
		"--router-listen", fmt.Sprintf("127.0.0.1:%d", routerPort), "--router-admin-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))}
	begun := time.Now()
	p := start(t, nil, args...)
	t.Cleanup(func() { p.cmd.Process.Signal(syscall.SIGINT); <-p.done })
	p.waitOutput(t, "Ctrl-C stops everything", 3*time.Minute)
	t.Logf("bbs cluster up in %s", time.Since(begun).Round(100*time.Millisecond))
	out := p.out.String()
	for _, want := range []string{"BBS cluster is up", "go.temporal.io/server 1.29.1", "api-1 https://", "api-2 https://",
		"Mutual TLS    on between all processes", "curl --cacert " + filepath.Join(dataDir, "certs", "ca.crt"),
		"worker-1", "worker-2", "cell-1 in zone z1", "cell-2 in zone z2", "cell-3 in zone z1",
		fmt.Sprintf("http://localhost:%d", uiPort)} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner does not say %q:\n%s", want, out)
		}
	}
	clients := newClusterClients(t, filepath.Join(dataDir, "certs"))
	c := client{t: t, base: fmt.Sprintf("https://127.0.0.1:%d", apiPort), failover: true,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: clients.good}}}
	c.waitAvailable(p, 30*time.Second)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", uiPort))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Temporal Web UI: %v %v", resp, err)
	}
	resp.Body.Close()
	waitForPoller(t, fmt.Sprintf("127.0.0.1:%d", tPort), clients.good)
	t.Run("every listener requires mutual TLS", func(t *testing.T) {
		requireMutualTLS(t, clients, clusterListeners(c, apiPort, protocolPort, base, tPort, 2, 3))
	})

	d := &devStack{p: p, api: c, routerPort: routerPort, dataDir: dataDir}
	logOnFailure(t, d, "web", dataDir)
	c.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "4 RUNNING on web", 60*time.Second, func() bool { return d.allOn("web", "web", n) })
	cells := map[string]bool{}
	for _, a := range d.instances("web") {
		cells[a.CellID] = true
	}
	if len(cells) < 2 {
		t.Errorf("4 instances on %d cell(s): %v", len(cells), cells)
	}
	d.waitFor(t, "the router to route web.example.com", 20*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", routerPort), nil)
		req.Host = "web.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})

	traffic := d.drive("web.example.com", 2)
	s := d.sample("web", n)
	// v2 takes a second to start, so that the kills land in the middle of the rollout.
	v2 := demoDefinition("v2", "v2")
	v2["action"] = obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "sleep 1; exec " + demoBin}}}
	c.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": v2}}, nil)
	d.waitFor(t, "the rollout to update index 0", 60*time.Second, func() bool { return d.rollout("web").UpdatedInstances >= 1 })
	apiPID, workerPID := pidOf(t, dataDir, "api-1"), pidOf(t, dataDir, "worker-1")
	for _, pid := range []int{apiPID, workerPID} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	killed := time.Now()
	if r := d.rollout("web"); r.State != "active" {
		t.Logf("the rollout was %s by the time both were killed", r.State)
	}
	d.waitFor(t, "the rollout to complete on v2", 2*time.Minute, func() bool {
		return d.rollout("web").State == "completed" && d.allOn("web", "v2", n)
	})
	t.Logf("rollout completed %s after the kills", time.Since(killed).Round(100*time.Millisecond))
	s.finish(t, n, "rollout through the kills")
	traffic.finish(t, "rollout through the kills")
	for _, name := range []string{"api-1", "worker-1"} {
		p.waitOutput(t, name+" exited: signal: killed; restarting", 10*time.Second)
		p.waitOutput(t, name+" restarted", 30*time.Second)
	}
	if pid := pidOf(t, dataDir, "api-1"); pid == apiPID {
		t.Errorf("api-1 has its old pid %d after the restart", pid)
	}
	weightedThroughTheCluster(t, d, c)

	p.stop(t, os.Interrupt, 2*time.Minute)
	for _, port := range []int{apiPort, routerPort, tPort, uiPort, pgPort, base + 1, base + 11} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			t.Errorf("port %d still answers after Ctrl-C", port)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dataDir, "run", "*.pid")); len(left) > 0 {
		t.Errorf("pid files left after Ctrl-C: %v", left)
	}

	p = start(t, nil, args...)
	p.waitOutput(t, "Ctrl-C stops everything", 3*time.Minute)
	c.waitAvailable(p, 30*time.Second)
	d.p = p
	d.waitFor(t, "web on v3 after the restart", 60*time.Second, func() bool { return d.allOn("web", "v3", n) })
	p.stop(t, os.Interrupt, 2*time.Minute)
}

// weightedThroughTheCluster holds a canary of v3 at 50 % in the production shape — the
// router following and reporting through bbs lb's front, with mutual TLS — and checks what a
// user meets there: a preview of v3, a user kept on the definition that first answered, and
// the promotion that lets the user go.
func weightedThroughTheCluster(t *testing.T, d *devStack, c client) {
	t.Helper()
	c.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v3", "v3"),
		"strategy": obj{"canary": obj{"steps": []obj{{"weight": 50, "promote": "manual"}}}}}}, nil)
	d.waitFor(t, "the 50 % step of v3, acknowledged by the router", 60*time.Second, func() bool {
		r := d.trafficOf("web")
		return r.Phase == "awaiting_promotion" && r.Traffic["v3"] == 50
	})
	get := func(header http.Header) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = "web.example.com"
		for k, v := range header {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for i := 0; i < 10; i++ {
		if res := get(http.Header{"X-Lrp-Preview": {"v3"}}); res.StatusCode != 200 || res.Header.Get("X-LRP-Definition") != "v3" {
			t.Fatalf("a preview of v3 through the cluster: %d by %q", res.StatusCode, res.Header.Get("X-LRP-Definition"))
		}
	}
	first := get(nil)
	var sticky *http.Cookie
	for _, ck := range first.Cookies() {
		if ck.Name == "bbs_definition" {
			sticky = ck
		}
	}
	if sticky == nil || sticky.Value != first.Header.Get("X-LRP-Definition") {
		t.Fatalf("a weighted answer by %q set no cookie of its definition: %v", first.Header.Get("X-LRP-Definition"), first.Header["Set-Cookie"])
	}
	for i := 0; i < 20; i++ {
		if res := get(http.Header{"Cookie": {sticky.String()}}); res.Header.Get("X-LRP-Definition") != sticky.Value {
			t.Fatalf("request %d with the cookie of %s went to %s", i, sticky.Value, res.Header.Get("X-LRP-Definition"))
		}
	}
	c.mustPost("/v1/rollouts/promote", obj{"process_guid": "web"}, nil)
	d.waitFor(t, "v3 promoted to every index", 90*time.Second, func() bool {
		return d.trafficOf("web").State == "completed" && d.allOn("web", "v3", 4)
	})
	released := false
	for _, ck := range get(http.Header{"Cookie": {sticky.String()}}).Cookies() {
		released = released || (ck.Name == "bbs_definition" && ck.MaxAge < 0)
	}
	if !released {
		t.Error("after the promotion the router did not clear the sticky cookie")
	}
}

// logOnFailure logs, if t has failed by its cleanup, what a failed wait on a cluster leaves
// to explain it: guid's instances and the last lines of each process's log in dataDir.
func logOnFailure(t *testing.T, d *devStack, guid, dataDir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, a := range d.instances(guid) {
			t.Logf("%s/%d: %s %s on %s (%s) crashes %d %q retiring %v", guid, a.Index, a.State, a.DefinitionID, a.CellID, a.Presence, a.CrashCount, a.CrashReason, a.Retiring)
		}
		logs, _ := filepath.Glob(filepath.Join(dataDir, "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("the last lines of %s:\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
	})
}
