package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// temporalPID is the pid of the Temporal dev server serving the stack's frontend port, found
// by its command line; 0 while there is none.
func (d *devStack) temporalPID() int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if slices.Contains(args, "start-dev") && slices.Index(args, "--port") >= 0 &&
			slices.Index(args, "--port")+1 < len(args) && args[slices.Index(args, "--port")+1] == strconv.Itoa(d.temporalPort) {
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !isZombie(stat) {
				return pid
			}
		}
	}
	return 0
}

// isZombie reads a /proc/<pid>/stat: a killed child stays a zombie until its parent reaps it.
func isZombie(stat []byte) bool {
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// postmasterPID is the pid in the data directory's postmaster.pid, 0 while there is none.
func (d *devStack) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(d.dataDir, "postgres", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// TestDevModeRestartsDeadChildren kills `bbs dev`'s Temporal dev server and then its
// PostgreSQL with SIGKILL, as a crash or the OOM killer would: each time the dev mode says
// so, starts it again on the same state (the SQLite file, the data directory), and the API,
// the worker and the cells carry on without a restart of their own — a rollout started after
// each restart completes, and an LRP desired after PostgreSQL's runs.
func TestDevModeRestartsDeadChildren(t *testing.T) {
	const n = 2
	d := startDev(t, "--convergence-interval", "3s")
	if !strings.Contains(d.p.out.String(), "restarted if they die") {
		t.Errorf("the banner does not say that PostgreSQL and Temporal are supervised:\n%s", d.p.out.String())
	}
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "web RUNNING", 30*time.Second, func() bool { return d.allOn("web", "web", n) })

	// The Temporal dev server.
	temporal := d.temporalPID()
	if temporal == 0 {
		t.Fatal("no Temporal dev server serves the stack's port")
	}
	if err := syscall.Kill(temporal, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the Temporal dev server (pid %d): %v", temporal, err)
	}
	d.waitFor(t, "a new Temporal dev server", 90*time.Second, func() bool {
		pid := d.temporalPID()
		return pid != 0 && pid != temporal
	})
	frontend := fmt.Sprintf("127.0.0.1:%d", d.temporalPort)
	d.waitFor(t, "the new server's frontend to answer", 60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", frontend, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	waitForPoller(t, frontend, nil)
	if out := d.p.out.String(); !strings.Contains(out, "Temporal dev server exited") || !strings.Contains(out, "restarting") {
		t.Errorf("the log does not say that the Temporal dev server died and is restarted:\n%s", out)
	}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v2", "v2")}}, nil)
	d.waitFor(t, "the rollout to v2 after Temporal's restart", 90*time.Second, func() bool {
		return d.rollout("web").State == "completed" && d.allOn("web", "v2", n)
	})

	// PostgreSQL: its postmaster, whose pid the data directory records.
	postmaster := d.postmasterPID()
	if postmaster == 0 {
		t.Fatal("no postmaster.pid in the dev data directory")
	}
	if err := syscall.Kill(postmaster, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the postmaster (pid %d): %v", postmaster, err)
	}
	d.waitFor(t, "a new postmaster", 90*time.Second, func() bool {
		pid := d.postmasterPID()
		return pid != 0 && pid != postmaster && syscall.Kill(pid, 0) == nil
	})
	d.waitFor(t, "the API to answer from the database again", 30*time.Second, func() bool {
		return d.api.post("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}, nil) == 200
	})
	if out := d.p.out.String(); !strings.Contains(out, "PostgreSQL exited") {
		t.Errorf("the log does not say that PostgreSQL died:\n%s", out)
	}
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("after", n)}, nil)
	d.waitFor(t, "an LRP desired after PostgreSQL's restart to run", 60*time.Second, func() bool { return d.allOn("after", "after", n) })
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v3", "v3")}}, nil)
	d.waitFor(t, "the rollout to v3 after PostgreSQL's restart", 90*time.Second, func() bool {
		return d.rollout("web").State == "completed" && d.allOn("web", "v3", n)
	})
	if strings.Contains(d.p.out.String(), "giving up") {
		t.Fatalf("the dev mode gave up on a child:\n%s", d.p.out.String())
	}
}
