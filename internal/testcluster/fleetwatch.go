package testcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// FleetWatch samples every LRP whose guid starts with a prefix, one statement over the whole
// fleet every 25 ms, and keeps the first violations of the rollouts' invariant: n indices,
// each with a RUNNING instance that is not retiring. WatchGroup adds a rollout group's
// budgets to each sample.
type FleetWatch struct {
	// BackendPID is the PostgreSQL backend that answers the samples: its CPU is the
	// sampling's, which a benchmark leaves out of the system's.
	BackendPID int

	t       testing.TB
	db      *sqlx.DB
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples int
	seen    map[string]bool // LRPs present in some sample
	bad     []string
	first   string // the first LRP seen violating
	group   *groupBudget
}

// groupBudget is a group's budgets as a FleetWatch checks them, and the most it saw in use.
type groupBudget struct {
	id                    string
	maxLRPs, maxPerCell   int
	peakLRPs, peakPerCell int
}

// WatchFleet starts sampling the LRPs of prefix, each of n instances.
func (c *Cluster) WatchFleet(prefix string, n int) *FleetWatch {
	c.t.Helper()
	return WatchFleet(c.t, c.Store.DB(), prefix, n)
}

// WatchFleet starts sampling the LRPs of prefix in the BBS database db, each of n
// instances: that of a cluster of this package, or of one in processes of its own (a
// benchmark of `bbs cluster`).
func WatchFleet(t testing.TB, db *sqlx.DB, prefix string, n int) *FleetWatch {
	t.Helper()
	w := &FleetWatch{t: t, db: db, stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}}
	// One connection of its own, so that its backend's CPU is the sampling's alone.
	conn, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.GetContext(context.Background(), &w.BackendPID, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer conn.Close()
		ctx := context.Background()
		for {
			var rows []struct {
				GUID   string `db:"process_guid"`
				Served int    `db:"served"`
			}
			err := conn.SelectContext(ctx, &rows, `SELECT process_guid,
    count(DISTINCT instance_index) FILTER (WHERE state = 'RUNNING' AND NOT retiring AND presence = 'ORDINARY') AS served
FROM actual_lrps WHERE process_guid LIKE $1 GROUP BY process_guid`, prefix+"%")
			w.mu.Lock()
			g := w.group
			w.mu.Unlock()
			var lrps, perCell int
			if err == nil && g != nil {
				err = conn.QueryRowxContext(ctx, `SELECT
    (SELECT count(*) FROM rollouts WHERE group_id = $1 AND state IN ('active', 'paused', 'canceling')),
    (SELECT COALESCE(max(n), 0) FROM (SELECT count(*) AS n FROM rollouts r
        JOIN actual_lrps a ON a.process_guid = r.process_guid AND a.definition_id = r.to_definition_id
            AND a.state = 'CLAIMED' AND a.presence = 'ORDINARY'
        WHERE r.group_id = $1 AND r.state IN ('active', 'paused', 'canceling') GROUP BY a.cell_id) per_cell)`, g.id).Scan(&lrps, &perCell)
			}
			w.record(rows, err, g, lrps, perCell, n)
			if err != nil {
				return
			}
			select {
			case <-w.stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *FleetWatch) record(rows []struct {
	GUID   string `db:"process_guid"`
	Served int    `db:"served"`
}, err error, g *groupBudget, lrps, perCell, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.bad = append(w.bad, "sample failed: "+err.Error())
		return
	}
	w.samples++
	for _, r := range rows {
		w.seen[r.GUID] = true
		if r.Served < n && len(w.bad) < 10 {
			w.bad = append(w.bad, fmt.Sprintf("sample %d: %s serves %d of %d indices", w.samples, r.GUID, r.Served, n))
			if w.first == "" {
				w.first = r.GUID
			}
		}
	}
	if g == nil {
		return
	}
	g.peakLRPs, g.peakPerCell = max(g.peakLRPs, lrps), max(g.peakPerCell, perCell)
	if lrps > g.maxLRPs && len(w.bad) < 10 {
		w.bad = append(w.bad, fmt.Sprintf("sample %d: %d members of group %s rolling, more than max_concurrent_lrps %d", w.samples, lrps, g.id, g.maxLRPs))
	}
	if g.maxPerCell > 0 && perCell > g.maxPerCell && len(w.bad) < 10 {
		w.bad = append(w.bad, fmt.Sprintf("sample %d: %d new instances of group %s starting on one cell, more than max_concurrent_per_cell %d", w.samples, perCell, g.id, g.maxPerCell))
	}
}

// WatchGroup checks, in every sample from now on, that group's members rolling and new
// instances starting on any one cell stay within maxLRPs and maxPerCell (0: unbounded).
func (w *FleetWatch) WatchGroup(group string, maxLRPs, maxPerCell int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.group = &groupBudget{id: group, maxLRPs: maxLRPs, maxPerCell: maxPerCell}
}

// GroupPeaks are the most members rolling, and new instances starting on one cell, seen.
func (w *FleetWatch) GroupPeaks() (lrps, perCell int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.group == nil {
		return 0, 0
	}
	return w.group.peakLRPs, w.group.peakPerCell
}

// History is the instance and rollout events of LRP guid, oldest first, for a violation's
// report.
func (w *FleetWatch) History(guid string) string {
	var rows []struct {
		At   time.Time `db:"created_at"`
		Name string    `db:"name"`
		Data string    `db:"data"`
	}
	err := w.db.SelectContext(context.Background(), &rows, `SELECT created_at, name, data::text AS data FROM events
WHERE data::text LIKE '%' || $1 || '%' ORDER BY id`, `"`+guid+`"`)
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&out, "%s %s %s\n", r.At.Format("15:04:05.000000"), r.Name, r.Data)
	}
	return out.String()
}

// Finish stops sampling, fails the test on any violation or on an LRP never sampled, and
// returns the number of samples.
func (w *FleetWatch) Finish(lrps int) int {
	w.t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bad) > 0 {
		w.t.Fatalf("the invariant broke:\n%s\nthe first LRP's instance events:\n%s", strings.Join(w.bad, "\n"), w.History(w.first))
	}
	if len(w.seen) != lrps || w.samples < 10 {
		w.t.Fatalf("%d samples saw %d of %d LRPs", w.samples, len(w.seen), lrps)
	}
	return w.samples
}
