package e2e

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
)

// TestUpgradeFromBase is Diego's upgrade-stability test for this BBS: `make cluster`'s shape
// runs the binaries of an earlier revision (BASE: the Makefile's UPGRADE_BASE, or
// BBS_UPGRADE_BASE), apps serve under traffic through two routers (as behind a load
// balancer), rollouts, a cancel, a rollback and tasks with callbacks are under way — and each
// process is replaced by the working tree's build, one at a time: the API replicas (the first
// applies the new migrations under the advisory lock while the old replica and the old
// workers go on serving on the new schema), the workers (which finish the workflows the old
// ones recorded), the cells (killed and restarted, adopting their instances), the routers
// and the front. It fails on any failed request through the routers, any moment an LRP had
// fewer indices served than desired, a rollout that does not end where its controls put it,
// a callback delivered other than exactly once, or a workflow history the new workers cannot
// replay. Then the way back: BASE's build against the new schema, which it must refuse,
// clearly, when BASE does not know it — or, when no migration lies between them, the same
// replacement downward. BBS_UPGRADE_FULL=1 (make upgrade-test) runs more apps and tasks.
func TestUpgradeFromBase(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the upgrade test builds BASE and runs a cluster through an upgrade (about a minute)")
	}
	tbin := temporalServerBin(t)
	root := repoRoot(t)
	baseRev := upgradeBase(t, root)
	begun := time.Now()
	oldBin, commit := baseBinary(t, root, baseRev)
	t.Logf("BASE %s (%s): its build ready in %s", baseRev, commit[:12], time.Since(begun).Round(100*time.Millisecond))
	apps, n, tasksPerPhase := 2, 3, 1
	if os.Getenv("BBS_UPGRADE_FULL") != "" {
		apps, n, tasksPerPhase = 4, 4, 4
	}

	u := startUpgradeCluster(t, tbin, oldBin)
	// A rollout that never ends is most often a history the new build cannot replay: say so.
	t.Cleanup(func() {
		if t.Failed() {
			historiesReplay(t, u.temporalAddr, u.clients.good)
		}
	})
	baseSchema, newSchema := latestMigrationAt(t, root, commit), latestMigrationAt(t, root, "")
	if at := u.schemaVersion(t); at != baseSchema {
		t.Fatalf("BASE's cluster has the schema at %d, want its own %d", at, baseSchema)
	}
	t.Logf("BASE's cluster up (schema %d; the working tree's is %d) after %s", baseSchema, newSchema, time.Since(begun).Round(100*time.Millisecond))

	// Apps under traffic, and what is under way when the upgrade begins.
	guids := make([]string, apps)
	for i := range guids {
		guids[i] = fmt.Sprintf("app-%c", 'a'+i)
		u.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP(guids[i], n)}, nil)
	}
	for _, g := range guids {
		u.waitFor(t, g+" RUNNING", 60*time.Second, func() bool { return u.allOn(g, g, n) })
		u.waitRoutedBy(t, g)
	}
	var loads []*load
	var samples []*sampler
	for _, g := range guids {
		loads = append(loads, driveThrough(u.routers, g+".example.com", 2))
		samples = append(samples, u.sample(g, n))
	}
	cc := newCCStandIn(t, u.devStack)
	var tasks []string
	desireTasks := func(phase string) {
		for i := range tasksPerPhase {
			guid := fmt.Sprintf("task-%s-%d", phase, i)
			tasks = append(tasks, guid)
			u.api.mustPost("/v1/tasks/desire", obj{"task": obj{"task_guid": guid, "domain": "cf-tasks",
				"rootfs": "preloaded:cflinuxfs4", "memory_mb": 16, "disk_mb": 16,
				"action":                  obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "sleep 1; echo done"}}},
				"completion_callback_url": fmt.Sprintf("%s/internal/v4/tasks/%s/completed", cc.URL, guid)}}, nil)
		}
	}
	desireTasks("base")

	// app-a: a canary held until promoted, which the new workers will have to take over from
	// the old ones' history: at 50 % of the traffic where BASE splits by weight (weights came
	// with migration 0020), else at one instance. app-b: an update canceled halfway. Any
	// further app: an update its first definition, activated again, supersedes halfway.
	a, b := guids[0], guids[1]
	step := obj{"instances": 1, "promote": "manual"}
	held := func(r trafficView) bool { return r.Phase == "awaiting_promotion" }
	if baseSchema >= 20 {
		step = obj{"weight": 50, "promote": "manual"}
		held = func(r trafficView) bool { return r.Phase == "awaiting_promotion" && r.Traffic["v2"] == 50 }
	}
	u.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": a, "update": obj{"definition": demoDefinition("v2", "v2"),
		"strategy": obj{"canary": obj{"steps": []obj{step}}}}}, nil)
	u.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": b, "update": obj{"definition": slowDefinition("v2")}}, nil)
	for _, g := range guids[2:] {
		u.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": g, "update": obj{"definition": slowDefinition("v2")}}, nil)
	}
	u.waitFor(t, fmt.Sprintf("%s's canary held at %v", a, step), 60*time.Second, func() bool { return held(u.trafficOf(a)) })
	u.waitFor(t, b+" to update an index", 30*time.Second, func() bool { return u.rollout(b).UpdatedInstances >= 1 })
	u.api.mustPost("/v1/desired_lrp/cancel_update", obj{"process_guid": b}, nil)
	for _, g := range guids[2:] {
		u.waitFor(t, g+" to update an index", 30*time.Second, func() bool { return u.rollout(g).UpdatedInstances >= 1 })
		u.api.mustPost("/v1/lrp_deployments/activate", obj{"process_guid": g, "definition_id": g}, nil)
	}

	// Upward, one process at a time, with what each step checks or starts once it is done.
	upgradeStarted := time.Now()
	copyFile(t, bbsBin, u.bin)
	u.replaceAll(t, map[string]func(){
		"api-1": func() {
			if at := u.schemaVersion(t); at != newSchema {
				t.Fatalf("after the first new API replica started, the schema is at %d, want %d", at, newSchema)
			}
			u.oldReplicaServes(t, 2)
			desireTasks("mixed")
		},
		// Rollouts the new API starts and the old workers walk: app-b, once its cancel ended,
		// to v3, then rolled back to its first definition while the workers are replaced.
		"api-2": func() {
			u.waitFor(t, b+"'s cancel to walk back", 60*time.Second, func() bool { return u.rollout(b).State == "canceled" && u.allOn(b, b, n) })
			u.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": b, "update": obj{"definition": demoDefinition("v3", "v3")}}, nil)
			u.waitFor(t, b+" on v3", 60*time.Second, func() bool { return u.rollout(b).State == "completed" && u.allOn(b, "v3", n) })
			u.api.mustPost("/v1/desired_lrp/rollback", obj{"process_guid": b, "definition_id": b}, nil)
		},
		"worker-2": func() {
			if r := u.trafficOf(a); r.Phase != "awaiting_promotion" {
				t.Fatalf("%s's canary is %s/%s once every worker is new, want still awaiting its promotion", a, r.State, r.Phase)
			}
			desireTasks("workers")
		},
	})
	t.Logf("every process replaced in %s", time.Since(upgradeStarted).Round(100*time.Millisecond))

	// Where every rollout must end.
	u.api.mustPost("/v1/rollouts/promote", obj{"process_guid": a}, nil)
	u.waitFor(t, a+" promoted to v2 by the new workers", 90*time.Second, func() bool {
		return u.rollout(a).State == "completed" && u.allOn(a, "v2", n)
	})
	u.waitFor(t, b+"'s rollback", 90*time.Second, func() bool {
		r := u.rollout(b)
		return r.State == "completed" && r.Kind == "rollback" && u.allOn(b, b, n)
	})
	for _, g := range guids[2:] {
		u.waitFor(t, g+" back on its first definition", 90*time.Second, func() bool {
			r := u.rollout(g)
			return r.State == "completed" && r.Kind == "activate" && u.allOn(g, g, n)
		})
	}
	desireTasks("new")
	for i, g := range guids {
		samples[i].finish(t, n, g+" through the upgrade")
		loads[i].finish(t, g+" through the upgrade")
	}
	u.callbacksExactlyOnce(t, cc, tasks)
	historiesReplay(t, u.temporalAddr, u.clients.good)
	t.Logf("upgrade checked in %s", time.Since(upgradeStarted).Round(100*time.Millisecond))

	// Downward.
	if baseSchema < newSchema {
		u.baseRefuses(t, oldBin, newSchema)
	} else {
		copyFile(t, oldBin, u.bin)
		s := u.sample(a, n)
		traffic := driveThrough(u.routers, a+".example.com", 2)
		u.replaceAll(t, nil)
		s.finish(t, n, a+" through the downgrade")
		traffic.finish(t, a+" through the downgrade")
	}
	u.p.stop(t, os.Interrupt, 2*time.Minute)
	t.Logf("the whole test took %s", time.Since(begun).Round(100*time.Millisecond))
}

// taskContainerGone is how a task fails when the agent of its cell is replaced while it
// runs: a new agent adopts the instances its predecessor left, not the tasks, whose outcome
// is an exit status only the agent that started them can see (executor/process/adopt.go).
const taskContainerGone = "task container no longer exists"

// slowDefinition is the demo app taking two seconds to start, so that its rollout is still
// walking while processes are replaced under it.
func slowDefinition(id string) obj {
	def := demoDefinition(id, id)
	def["action"] = obj{"run": obj{"path": "/bin/sh", "args": []string{"-c", "sleep 2; exec " + demoBin}}}
	return def
}

// upgradeCluster is BASE's `bbs cluster`, whose processes are started from bin: replacing
// the file and restarting a process upgrades it, as a package upgrade on a machine does.
// Beside the cluster's router runs a second, the test's own, the two taking the apps'
// traffic in turn as behind a load balancer.
type upgradeCluster struct {
	*devStack
	bin          string
	clients      clusterClients
	base         int // the cluster's --port-base
	temporalAddr string
	router2Port  int
	router2      *process
	router2Env   []string
	routers      *routerSet
}

func startUpgradeCluster(t *testing.T, tbin, oldBin string) *upgradeCluster {
	t.Helper()
	// BBS_UPGRADE_DATA_DIR keeps the cluster's data and every process's log for a look after
	// the test.
	dataDir := os.Getenv("BBS_UPGRADE_DATA_DIR")
	if dataDir == "" {
		dataDir = t.TempDir()
	} else if entries, _ := os.ReadDir(dataDir); len(entries) > 0 {
		t.Fatalf("BBS_UPGRADE_DATA_DIR=%s is not empty: the cluster would resume a schema BASE may not know", dataDir)
	} else if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &upgradeCluster{bin: filepath.Join(dataDir, "bbs")}
	copyFile(t, oldBin, u.bin)
	apiPort, routerPort, tPort := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	u.base = freeport.Block(t, 64)
	args := []string{"cluster", "--data-dir", filepath.Join(dataDir, "cluster"), "--temporal-server-bin", tbin,
		"--metrics-port-base", fmt.Sprint(freeport.Block(t, 32)),
		"--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--bbs-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"--port-base", fmt.Sprint(u.base), "--pg-port", fmt.Sprint(freeport.Port(t)),
		"--temporal-port", fmt.Sprint(tPort), "--temporal-ui-port", "0",
		// The cells' instance ports from a base of their own: at the default another
		// cluster on the machine (another test's) may hold them, and an instance that could
		// not bind its port but whose health check reached the other's would pass as
		// RUNNING.
		"--instance-port-base", fmt.Sprint(freeport.Spread(t, 3, 1000, 64)),
		"--router-listen", fmt.Sprintf("127.0.0.1:%d", routerPort), "--router-admin-listen", fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))}
	p := startBin(t, u.bin, nil, args...)
	t.Cleanup(func() { p.cmd.Process.Signal(syscall.SIGINT); <-p.done })
	p.waitOutput(t, "Ctrl-C stops everything", 3*time.Minute)
	u.clients = newClusterClients(t, filepath.Join(dataDir, "cluster", "certs"))
	c := client{t: t, base: fmt.Sprintf("https://127.0.0.1:%d", apiPort), failover: true,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: u.clients.good}}}
	c.waitAvailable(p, 30*time.Second)
	u.temporalAddr = fmt.Sprintf("127.0.0.1:%d", tPort)
	waitForPoller(t, u.temporalAddr, u.clients.good)
	u.devStack = &devStack{p: p, api: c, routerPort: routerPort, dataDir: filepath.Join(dataDir, "cluster")}

	// The second router: the cluster's router's configuration, on ports of its own.
	u.router2Port = freeport.Port(t)
	u.router2Env = append(environOf(t, pidOf(t, u.dataDir, "router")),
		fmt.Sprintf("BBS_ROUTER_LISTEN_ADDR=127.0.0.1:%d", u.router2Port),
		fmt.Sprintf("BBS_ROUTER_ADMIN_ADDR=127.0.0.1:%d", freeport.Port(t)),
		fmt.Sprintf("BBS_METRICS_LISTEN_ADDR=127.0.0.1:%d", freeport.Port(t)))
	u.router2 = startBin(t, u.bin, u.router2Env, "router")
	u.routers = newRouterSet(routerPort, u.router2Port)
	return u
}

// environOf is a process's environment (the settings `bbs cluster` gave a child).
func environOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}

// replace stops the cluster's child name with sig and waits until its supervisor has
// started it again from u.bin and it is at work: a replica answers as available, a worker
// polls, a cell agent has adopted the instances its predecessor left running (rather than
// the BBS starting them anew).
func (u *upgradeCluster) replace(t *testing.T, name string, sig syscall.Signal) {
	t.Helper()
	began := time.Now()
	pid := pidOf(t, u.dataDir, name)
	logFile := filepath.Join(u.dataDir, name+".log")
	before, err := os.Stat(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logged := func(line string) func() bool {
		return func() bool {
			log, err := os.ReadFile(logFile)
			return err == nil && bytes.Contains(log[before.Size():], []byte(line))
		}
	}
	var ready func() bool
	switch {
	case strings.HasPrefix(name, "worker-"):
		ready = logged("worker polling")
	case strings.HasPrefix(name, "cell-") && u.hasInstances(name):
		ready = logged("adopted an instance")
	}
	restarts := strings.Count(u.p.out.String(), name+" restarted")
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	u.waitFor(t, name+" restarted from the new file", 90*time.Second, func() bool {
		return strings.Count(u.p.out.String(), name+" restarted") > restarts
	})
	if now := pidOf(t, u.dataDir, name); now == pid {
		t.Fatalf("%s kept its pid %d", name, pid)
	}
	if rest, ok := strings.CutPrefix(name, "api-"); ok {
		var i int
		fmt.Sscan(rest, &i)
		u.replica(i).waitAvailable(u.p, 60*time.Second)
	}
	if ready != nil {
		u.waitFor(t, name+" at work", 60*time.Second, ready)
	}
	t.Logf("%s replaced in %s", name, time.Since(began).Round(100*time.Millisecond))
}

// replaceOrder is the order an upgrade replaces the processes in, Diego's: the API, then
// the workers, then the cells, then the routers (router-2 is the test's own) and the front.
var replaceOrder = []string{"api-1", "api-2", "worker-1", "worker-2", "cell-1", "cell-2", "cell-3", "router", "router-2", "lb"}

// replaceAll replaces every process in replaceOrder, running after[name] once name is at
// work. A cell agent is killed (SIGKILL: its instances outlive it, and SIGTERM would drain the
// cell), every other process stopped with SIGTERM; each router is drained from the traffic
// first.
func (u *upgradeCluster) replaceAll(t *testing.T, after map[string]func()) {
	t.Helper()
	for _, name := range replaceOrder {
		switch {
		case name == "router":
			u.replaceRouter(t, u.routerPort, func() { u.replace(t, name, syscall.SIGTERM) })
		case name == "router-2":
			u.replaceRouter(t, u.router2Port, func() { u.restartSecondRouter(t) })
		case strings.HasPrefix(name, "cell-"):
			u.replace(t, name, syscall.SIGKILL)
		default:
			u.replace(t, name, syscall.SIGTERM)
		}
		if f := after[name]; f != nil {
			f()
		}
	}
}

// replica is a client of API replica i alone, past the front.
func (u *upgradeCluster) replica(i int) client {
	return client{t: u.api.t, base: fmt.Sprintf("https://127.0.0.1:%d", u.base+10*(i-1)+1), http: u.api.http}
}

// oldReplicaServes checks that replica i, still BASE's, serves on the schema the new one
// migrated: reads, and a write.
func (u *upgradeCluster) oldReplicaServes(t *testing.T, i int) {
	t.Helper()
	r := u.replica(i)
	r.mustPost("/v1/actual_lrps/list", obj{}, nil)
	r.mustPost("/v1/desired_lrps/list", obj{}, nil)
	r.mustPost("/v1/rollouts/list", obj{}, nil)
	r.mustPost("/v1/tasks/list", obj{}, nil)
	r.mustPost("/v1/domains/upsert", obj{"domain": "cf-upgrade", "ttl": 0}, nil)
}

// schemaVersion is the BBS database's migration version.
func (u *upgradeCluster) schemaVersion(t *testing.T) int {
	t.Helper()
	url := ""
	for _, kv := range environOf(t, pidOf(t, u.dataDir, "worker-1")) {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			url = v
		}
	}
	conn, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v int
	if err := conn.QueryRow(`SELECT version FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitRoutedBy waits until both routers route guid's host.
func (u *upgradeCluster) waitRoutedBy(t *testing.T, guid string, ports ...int) {
	t.Helper()
	if len(ports) == 0 {
		ports = []int{u.routerPort, u.router2Port}
	}
	for _, port := range ports {
		u.waitFor(t, fmt.Sprintf("router :%d to route %s", port, guid), 30*time.Second, func() bool {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
			req.Host = guid + ".example.com"
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
	}
}

// replaceRouter takes the router at port out of the traffic, as a load balancer drains a
// router before it is replaced, replaces it, and puts it back once it routes every app.
func (u *upgradeCluster) replaceRouter(t *testing.T, port int, replace func()) {
	t.Helper()
	began := time.Now()
	u.routers.drain(port)
	replace()
	var lrps struct {
		DesiredLRPs []struct {
			ProcessGUID string `json:"process_guid"`
		} `json:"desired_lrps"`
	}
	u.api.mustPost("/v1/desired_lrps/list", obj{}, &lrps)
	for _, l := range lrps.DesiredLRPs {
		u.waitRoutedBy(t, l.ProcessGUID, port)
	}
	u.routers.restore(port)
	t.Logf("router :%d drained, replaced and back in the traffic in %s", port, time.Since(began).Round(100*time.Millisecond))
}

// restartSecondRouter replaces the test's own router with the build u.bin now holds.
func (u *upgradeCluster) restartSecondRouter(t *testing.T) {
	t.Helper()
	u.router2.stop(t, syscall.SIGTERM, 30*time.Second)
	u.router2 = startBin(t, u.bin, u.router2Env, "router")
}

// hasInstances reports whether any instance is on cell.
func (u *upgradeCluster) hasInstances(cell string) bool {
	var resp struct {
		ActualLRPs []instance `json:"actual_lrps"`
	}
	u.api.mustPost("/v1/actual_lrps/list", obj{"cell_id": cell}, &resp)
	return len(resp.ActualLRPs) > 0
}

// callbacksExactlyOnce waits until every task is deleted (its callback answered, so nothing
// can deliver it again) and checks each callback came once.
func (u *upgradeCluster) callbacksExactlyOnce(t *testing.T, cc *ccStandIn, tasks []string) {
	t.Helper()
	for _, guid := range tasks {
		u.waitFor(t, guid+"'s callback and deletion", 60*time.Second, func() bool {
			return u.api.post("/v1/tasks/get_by_task_guid", obj{"task_guid": guid}, nil) == http.StatusNotFound
		})
	}
	lost := 0
	for _, guid := range tasks {
		got := cc.got(guid)
		switch {
		case len(got) != 1:
			t.Errorf("task %s: %d callbacks %+v, want exactly one", guid, len(got), got)
		case got[0].Failed && got[0].FailureReason == taskContainerGone:
			lost++ // it ran on a cell whose agent was replaced: tasks are not adopted
		case got[0].Failed:
			t.Errorf("task %s failed: %s", guid, got[0].FailureReason)
		}
	}
	t.Logf("%d tasks, each called back once (%d of them failed, %q, their cell's agent replaced under them)", len(tasks), lost, taskContainerGone)
}

// baseRefuses runs BASE's API against the schema the new build migrated: it must refuse to
// start, saying the schema's version.
func (u *upgradeCluster) baseRefuses(t *testing.T, oldBin string, schema int) {
	t.Helper()
	env := append(environOf(t, pidOf(t, u.dataDir, "api-1")),
		fmt.Sprintf("BBS_LISTEN_ADDR=127.0.0.1:%d", freeport.Port(t)),
		fmt.Sprintf("BBS_PROTOCOL_LISTEN_ADDR=127.0.0.1:%d", freeport.Port(t)),
		fmt.Sprintf("BBS_METRICS_LISTEN_ADDR=127.0.0.1:%d", freeport.Port(t)))
	p := startBin(t, oldBin, env, "api")
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("BASE's API still runs on schema %d after a minute:\n%s", schema, p.out.String())
	}
	out := p.out.String()
	clear := strings.Contains(out, fmt.Sprintf("at version %d, newer than this build's", schema))
	known := strings.Contains(out, fmt.Sprintf("no migration found for version %d", schema))
	if p.err == nil || !(clear || known) {
		t.Fatalf("BASE's API on schema %d: exit %v, want a refusal naming the version:\n%s", schema, p.err, out)
	}
	t.Logf("BASE refuses the schema %d (exit %v): %s", schema, p.err, lastLines(out, 1))
}
