package bench

import (
	"bytes"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// procCPU is what /proc/<pid>/stat says of one process.
type procCPU struct {
	ppid int
	comm string
	// own is the process's user and system time; reaped that of the children it waited for
	// (a PostgreSQL backend that exited is counted there, in its postmaster's).
	own, reaped time.Duration
}

// treeCPU is the CPU time (user + system) of this process and every process below it — the
// Temporal dev server a benchmark starts, and everything it started — and of the shared
// PostgreSQL cluster's postmaster and backends, including the children they have reaped. The difference of two readings is the
// CPU a stretch of the run cost, whichever process spent it. (A DATABASE_URL server is not
// ours and is not counted.)
func treeCPU() time.Duration {
	total, _ := treeCPUByChild()
	return total
}

// treeCPUByChild is treeCPU, and the part of it each of this process's direct children (by
// command name: postgres, temporal, ...) and this process itself ("bench") account for.
func treeCPUByChild() (time.Duration, map[string]time.Duration) {
	procs := readProcs()
	self := procs.self()
	by := map[string]time.Duration{"bench": self}
	total := self
	roots := procs.children[os.Getpid()]
	// pg_ctl detaches the postmaster: the shared cluster is not below us.
	if pg := dbtest.ServerPID(); pg != 0 && !procs.below(pg, os.Getpid()) {
		roots = append(roots, pg)
	}
	for _, c := range roots {
		t := procs.tree(c)
		by[procs.procs[c].comm] += t
		total += t
	}
	return total, by
}

// procTable is every process /proc shows, at one instant.
type procTable struct {
	procs    map[int]procCPU
	children map[int][]int
}

func readProcs() procTable {
	t := procTable{procs: map[int]procCPU{}, children: map[int][]int{}}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProcCPU(pid); ok {
			t.procs[pid] = p
		}
	}
	for pid, p := range t.procs {
		t.children[p.ppid] = append(t.children[p.ppid], pid)
	}
	return t
}

// tree is the CPU of pid and every process below it, with what each reaped.
func (t procTable) tree(pid int) time.Duration {
	p := t.procs[pid]
	sum := p.own + p.reaped
	for _, c := range t.children[pid] {
		sum += t.tree(c)
	}
	return sum
}

// self is this process's CPU, with what it reaped, without its children's that run.
func (t procTable) self() time.Duration {
	p := t.procs[os.Getpid()]
	return p.own + p.reaped
}

// below says whether pid runs below ancestor.
func (t procTable) below(pid, ancestor int) bool {
	for p, seen := t.procs[pid].ppid, 0; p > 1 && seen < 64; p, seen = t.procs[p].ppid, seen+1 {
		if p == ancestor {
			return true
		}
	}
	return false
}

// cpuSince is what each part of the tree spent since an earlier reading, for a log line.
func cpuSince(before map[string]time.Duration, steps int) string {
	_, now := treeCPUByChild()
	return cpuPerStep(before, now, steps)
}

// cpuPerStep is what each part spent between two readings, per step, for a log line.
func cpuPerStep(before, now map[string]time.Duration, steps int) string {
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(now)) {
		fmt.Fprintf(&sb, "%s %.3g ms  ", name, float64((now[name]-before[name]).Microseconds())/1000/float64(steps))
	}
	return sb.String()
}

func readProcCPU(pid int) (procCPU, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procCPU{}, false
	}
	// The command name, in parentheses, may hold spaces: the fields that follow start after
	// the last ')'. Then: state ppid ... utime(14) stime(15) cutime(16) cstime(17), counted
	// from the pid as field 1.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procCPU{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return procCPU{}, false
	}
	n := func(k int) time.Duration {
		v, _ := strconv.ParseInt(string(f[k-3]), 10, 64)
		return time.Duration(v) * time.Second / clockTicks
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	comm := ""
	if j := bytes.IndexByte(b, '('); j >= 0 && j < i {
		comm = string(b[j+1 : i])
	}
	return procCPU{ppid: ppid, comm: comm, own: n(14) + n(15), reaped: n(16) + n(17)}, true
}

// profileWindow profiles this process's CPU from now until the returned function is called,
// into the file BENCH_CPUPROFILE names (nothing when unset): the profile of the measured
// stretch alone, without the set-up around it.
func profileWindow(b *testing.B) func() {
	path := os.Getenv("BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		b.Logf("CPU profile of the measured stretch: %s", path)
	}
}

// backendCPU is the CPU the PostgreSQL backend answering w's samples has used: the
// sampling's, which the CPU per step leaves out. (It is the same machine's PostgreSQL in
// either shape of the system.)
func backendCPU(w *testcluster.FleetWatch) time.Duration {
	p, _ := readProcCPU(w.BackendPID)
	return p.own
}
