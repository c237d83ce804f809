package process_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestStopKillsTheShellAndItsChild(t *testing.T) {
	f := newFixture(t)
	// The shell does not exec: the sleep is its child, in its process group.
	in := f.mustStart("g1", def(sh("sleep 30 & echo $! > child.pid; echo $$ > sh.pid; wait")))
	dir := instanceDir(t, f, "g1")
	child, err := strconv.Atoi(readFileEventually(t, filepath.Join(dir, "child.pid")))
	if err != nil {
		t.Fatal(err)
	}
	shell, err := strconv.Atoi(readFileEventually(t, filepath.Join(dir, "sh.pid")))
	if err != nil {
		t.Fatal(err)
	}
	if !alive(child) || !alive(shell) {
		t.Fatal("processes not running before Stop")
	}
	in.Stop(5 * time.Second)
	if alive(child) || alive(shell) {
		t.Fatalf("left over after Stop: sleep alive=%v sh alive=%v", alive(child), alive(shell))
	}
	if running(in) {
		t.Fatal("Done not closed after Stop")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("instance directory still there: %v", err)
	}
	in.Stop(time.Second) // idempotent
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	f := newFixture(t)
	in := f.mustStart("g1", def(sh(`trap "" TERM; echo $$ > sh.pid; sleep 30; sleep 30`)))
	pid, err := strconv.Atoi(readFileEventually(t, filepath.Join(instanceDir(t, f, "g1"), "sh.pid")))
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	in.Stop(200 * time.Millisecond)
	if alive(pid) {
		t.Fatal("process ignoring SIGTERM survived Stop")
	}
	if time.Since(begin) > 10*time.Second {
		t.Fatal("Stop took far longer than its grace period")
	}
}

func TestStopReachesADaemonizedChild(t *testing.T) {
	f := newFixture(t)
	d := def(sh("sleep 30 & echo $! > child.pid"))
	d.Monitor = sh("true")
	in := f.mustStart("g1", d)
	if err := waitExit(t, in); err != nil {
		t.Fatalf("daemonizing action: err = %v", err)
	}
	child, err := strconv.Atoi(readFileEventually(t, filepath.Join(instanceDir(t, f, "g1"), "child.pid")))
	if err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatal("daemon not running")
	}
	in.Stop(5 * time.Second)
	if alive(child) {
		t.Fatal("daemonized child survived Stop")
	}
}
