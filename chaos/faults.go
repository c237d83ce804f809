package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
)

// postgres names the cluster's PostgreSQL among its processes (its pid is its postmaster's).
const postgres = "postgres"

// Fault is one way a process of the cluster dies. `bbs cluster` restarts it, as a
// supervisor (systemd, Kubernetes, BOSH's monit) would.
type Fault struct {
	// Name is the fault's column in the table: api, leader, cell, temporal, postgres.
	Name string
	// Tests says what surviving it proves, for the documentation.
	Tests string
	// victim names the process to hit, by its name in `bbs cluster` (api-1, worker-2, ...).
	victim func(ctx context.Context, c *Cluster, apps []string) (string, error)
	// signal is what hits it: SIGKILL, or SIGQUIT for PostgreSQL, which is what
	// `pg_ctl stop -m immediate` sends (every backend quits at once, no checkpoint; the next
	// start runs crash recovery).
	signal syscall.Signal
}

// Faults are the faults the matrix combines, in its order.
var Faults = []Fault{
	{Name: "api", Tests: "the front fails over; requests in flight on the replica are retried by their clients; the router's event stream resubscribes",
		victim: alternate("api-1", "api-2"), signal: syscall.SIGKILL},
	{Name: "leader", Tests: "the worker holding the placement lock: the lock goes with its session, the other worker takes placement over; its rollout activities are retried elsewhere after their heartbeat timeout",
		victim: placementLeader, signal: syscall.SIGKILL},
	{Name: "cell", Tests: "the cell with the most instances of the apps: its instances keep running and serving, the restarted cell agent adopts them (nothing lost, nothing doubled, no orphan)",
		victim: busiestCell, signal: syscall.SIGKILL},
	{Name: "temporal", Tests: "the whole Temporal server (frontend, history, matching, worker): workflows resume from their histories once it is back; the API answers Unavailable for what needs it meanwhile",
		victim: named("temporal"), signal: syscall.SIGKILL},
	{Name: "postgres", Tests: "PostgreSQL, immediate shutdown then start (crash recovery): every process rides through the lost connections; the API answers Unavailable meanwhile; Temporal's persistence too",
		victim: named(postgres), signal: syscall.SIGQUIT},
}

// FaultByName finds a fault of Faults.
func FaultByName(name string) (Fault, error) {
	for _, f := range Faults {
		if f.Name == name {
			return f, nil
		}
	}
	return Fault{}, fmt.Errorf("no fault %q", name)
}

func named(name string) func(context.Context, *Cluster, []string) (string, error) {
	return func(context.Context, *Cluster, []string) (string, error) { return name, nil }
}

// alternate hits each of names in turn, so that a matrix kills every replica.
func alternate(names ...string) func(context.Context, *Cluster, []string) (string, error) {
	n := 0
	return func(context.Context, *Cluster, []string) (string, error) {
		n++
		return names[(n-1)%len(names)], nil
	}
}

// busiestCell is the cell that runs the most instances of apps (of any LRP when apps is
// empty).
func busiestCell(ctx context.Context, c *Cluster, apps []string) (string, error) {
	all, err := c.allInstances(ctx)
	if err != nil {
		return "", err
	}
	count := map[string]int{}
	for _, a := range all {
		if a.CellID != "" && (len(apps) == 0 || slices.Contains(apps, a.ProcessGUID)) {
			count[a.CellID]++
		}
	}
	best := ""
	for _, cell := range c.Cells {
		if best == "" || count[cell] > count[best] {
			best = cell
		}
	}
	if count[best] == 0 {
		return "", fmt.Errorf("no cell runs any of %v", apps)
	}
	return best, nil
}

// Hit is a fault that was injected.
type Hit struct {
	Fault   Fault
	Process string
	PID     int
	At      time.Time
	// restartsBefore counts the supervisor's "restarted" lines for the process before the hit.
	restartsBefore int
}

// Inject hits the fault's victim.
func (c *Cluster) Inject(ctx context.Context, f Fault, apps []string) (*Hit, error) {
	name, err := f.victim(ctx, c, apps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	pid, err := c.PID(name)
	if err != nil {
		return nil, err
	}
	h := &Hit{Fault: f, Process: name, PID: pid, At: time.Now(), restartsBefore: c.restarts(name)}
	if err := syscall.Kill(pid, f.signal); err != nil {
		return nil, fmt.Errorf("%s: kill %d (%s): %w", f.Name, pid, name, err)
	}
	c.logf("%s: sent %s to %s (pid %d)", f.Name, f.signal, name, pid)
	return h, nil
}

// WaitRestarted waits until the supervisor says it has restarted the hit process, and
// returns how long after the hit that was.
func (c *Cluster) WaitRestarted(ctx context.Context, h *Hit) (time.Duration, error) {
	for c.restarts(h.Process) <= h.restartsBefore {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s (pid %d) was not restarted: %w", h.Process, h.PID, ctx.Err())
		case <-c.done:
			return 0, fmt.Errorf("bbs cluster exited: %v", c.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return time.Since(h.At), nil
}

// restarts counts the supervisor's log lines saying that the process restarted.
func (c *Cluster) restarts(name string) int {
	return strings.Count(c.Output(), supervisorName(name)+" restarted")
}

// supervisorName is how `bbs cluster`'s log calls a process.
func supervisorName(name string) string {
	switch name {
	case postgres:
		return "PostgreSQL"
	case "temporal":
		return "Temporal server"
	}
	return name
}
