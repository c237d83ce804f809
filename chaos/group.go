package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Each trial also rolls one change across the fleet apps as a rollout group — two waves,
// at most two members rolling and one new instance starting on any one cell, in a rollout
// window of its own that is closed when the group is created and opened a moment later —
// while the faults hit: every member must complete, the group too, and a watch of the
// group's budgets must never see either exceeded.

// fleetApps are the group's members, beside the matrix's apps, under the same traffic.
var fleetApps = []string{"fleet-a", "fleet-b", "fleet-c"}

// The group's budgets.
const (
	fleetMaxLRPs    = 2
	fleetMaxPerCell = 1
)

// desireFleet desires the fleet apps on their first definition and samples them.
func (m *Matrix) desireFleet(ctx context.Context) (map[string]string, error) {
	want := map[string]string{}
	for _, app := range fleetApps {
		def := webDefinition(m.demo, app+"-v0", "v0")
		if err := write(ctx, func(ctx context.Context) error { return m.c.BBS.DesireLRP(ctx, webLRP(app, appSize, def)) }, model.ErrResourceExists); err != nil {
			return nil, fmt.Errorf("desire %s: %w", app, err)
		}
		m.sampler.Watch(app, appSize)
		want[app] = def.DefinitionID
	}
	return want, nil
}

// startGroup creates trial k's group, whose members each end completed on the group's
// definition (its id); it adds them to want.
func (m *Matrix) startGroup(ctx context.Context, k int, want map[string]expected) (string, error) {
	id := fmt.Sprintf("wave-%d-%d", k, time.Now().Unix()%1_000_000)
	if err := m.upsertWindow(ctx, id, closedSpans()); err != nil {
		return id, err
	}
	spec := model.RolloutGroupSpec{GroupID: id, Selector: model.RolloutGroupSelector{ProcessGUIDs: fleetApps},
		Patch: model.DefinitionPatch{Env: []model.EnvironmentVariable{{Name: "DEMO_VERSION", Value: id}}},
		Waves: []model.RolloutWave{{Percent: 34}, {Percent: 100}}, MaxConcurrentLRPs: fleetMaxLRPs, MaxConcurrentPerCell: fleetMaxPerCell,
		Window: id}
	err := write(ctx, func(ctx context.Context) error {
		_, err := m.c.BBS.CreateRolloutGroup(ctx, spec)
		return err
	}, model.ErrResourceExists)
	if err != nil {
		return id, fmt.Errorf("create rollout group %s: %w", id, err)
	}
	for _, app := range fleetApps {
		want[app] = expected{model.RolloutCompleted, id, id}
	}
	// The window opens while the faults hit (they follow the starts at once).
	go func() {
		time.Sleep(2 * time.Second)
		if err := m.upsertWindow(ctx, id, openSpans()); err != nil {
			m.logf("open window %s: %v", id, err)
		}
	}()
	return id, nil
}

// upsertWindow writes the window id with spans, retried through the faults.
func (m *Matrix) upsertWindow(ctx context.Context, id string, spans []model.WindowSpan) error {
	err := write(ctx, func(ctx context.Context) error {
		_, _, err := m.c.BBS.UpsertRolloutWindow(ctx, model.RolloutWindow{Name: id, Schedule: spans})
		return err
	})
	if err != nil {
		return fmt.Errorf("upsert rollout window %s: %w", id, err)
	}
	return nil
}

var allDays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// closedSpans are not open today or tomorrow; openSpans are open at every instant.
func closedSpans() []model.WindowSpan {
	day := allDays[time.Now().UTC().AddDate(0, 0, 3).Weekday()]
	return []model.WindowSpan{{Days: []string{day}, Start: "10:00", End: "11:00", TimeZone: "UTC"}}
}

func openSpans() []model.WindowSpan {
	return []model.WindowSpan{{Days: allDays, Start: "00:00", End: "23:59", TimeZone: "UTC"},
		{Days: allDays, Start: "23:59", End: "00:00", TimeZone: "UTC"}}
}

// groupWatch reads a group every 100 ms through the API and keeps the most of each budget
// it saw in use.
type groupWatch struct {
	stop           chan struct{}
	done           chan struct{}
	mu             sync.Mutex
	lrps, perCell  int
	reads, refused int
	last           *model.RolloutGroup
}

func (m *Matrix) watchGroup(id string) *groupWatch {
	w := &groupWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			g, err := m.c.BBS.RolloutGroup(ctx, id)
			cancel()
			w.mu.Lock()
			if err != nil {
				w.refused++ // an API replica the faults took down: the next read goes on
			} else {
				w.reads++
				w.lrps, w.perCell, w.last = max(w.lrps, g.Budgets.LRPsInUse), max(w.perCell, g.Budgets.PerCellMaxInUse), g
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

// finish stops the watch once the group has ended (or within has passed) and adds a
// problem for a budget exceeded, a group not completed, or a watch that saw nothing.
func (w *groupWatch) finish(ctx context.Context, m *Matrix, id string, o *Outcome, within time.Duration) {
	err := until(ctx, within, 200*time.Millisecond, func(ctx context.Context) (string, error) {
		g, err := m.c.BBS.RolloutGroup(ctx, id)
		if err != nil {
			return err.Error(), nil
		}
		if g.State != model.GroupCompleted {
			return fmt.Sprintf("rollout group %s is %s (%s)", id, g.State, g.Reason), nil
		}
		return "", nil
	})
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		o.problem("%v", err)
	}
	if w.lrps > fleetMaxLRPs || w.perCell > fleetMaxPerCell {
		o.problem("rollout group %s exceeded its budgets: %d members rolling (max %d), %d new instances starting on one cell (max %d)",
			id, w.lrps, fleetMaxLRPs, w.perCell, fleetMaxPerCell)
	}
	if w.reads == 0 {
		o.problem("rollout group %s was never read (%d reads refused)", id, w.refused)
	}
	m.logf("rollout group %s: at most %d members rolling, %d new instances starting on one cell, over %d reads", id, w.lrps, w.perCell, w.reads)
}
