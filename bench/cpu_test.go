package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// procCPU is what /proc/<pid>/stat says of one process.
type procCPU struct {
	ppid int
	// own is the process's user and system time; reaped that of the children it waited for
	// (a PostgreSQL backend that exited is counted there, in its postmaster's).
	own, reaped time.Duration
}

// treeCPU is the CPU time (user + system) of this process and every process below it — the
// PostgreSQL cluster and the Temporal dev server a benchmark starts, and everything they
// started — including the children they have reaped. The difference of two readings is the
// CPU a stretch of the run cost, whichever process spent it. (A DATABASE_URL server is not
// ours and is not counted.)
func treeCPU() time.Duration {
	procs := map[int]procCPU{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProcCPU(pid); ok {
			procs[pid] = p
		}
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var total time.Duration
	var walk func(pid int)
	walk = func(pid int) {
		p := procs[pid]
		total += p.own + p.reaped
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(os.Getpid())
	return total
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
	return procCPU{ppid: ppid, own: n(14) + n(15), reaped: n(16) + n(17)}, true
}
