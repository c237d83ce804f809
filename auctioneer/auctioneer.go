// Package auctioneer places UNCLAIMED instances on cells: it gathers what waits and what
// each cell holds, runs the auction (package auction), hands each cell its work, and records
// why what did not fit could not be placed. One auctioneer leads at a time (a PostgreSQL
// advisory lock); it wakes on every store notification and at least every second.
package auctioneer

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/auction"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Store is what placement needs of the database.
type Store interface {
	PendingPlacements(ctx context.Context, limit int) ([]db.PendingInstance, error)
	CellLoads(ctx context.Context, guids []string) ([]db.CellLoad, error)
	Definitions(ctx context.Context, keys []db.DefinitionKey) (map[db.DefinitionKey]model.LRPDefinition, error)
	FailActualLRP(ctx context.Context, key model.ActualLRPKey, placementError string, tag *model.ModificationTag) (*model.ActualLRP, error)
	TryLeadership(ctx context.Context, name string) (*db.Leadership, bool, error)
}

// Notifications is what placement needs of the store's notifier (*db.Notifier), which
// reports its own connection trouble.
type Notifications interface {
	Subscribe(ctx context.Context, channel string) *db.Subscription
}

// Cells hands work to cell agents.
type Cells interface {
	Perform(ctx context.Context, repURL string, work []cellapi.Work) ([]cellapi.Rejection, error)
}

// Options tune placement; zero values take the defaults.
type Options struct {
	// Interval is the longest wait between rounds; default 1 s.
	Interval time.Duration
	// Resend is how long work handed to a cell may stay unclaimed before it is placed again
	// (BBS's stale UNCLAIMED); default 30 s.
	Resend time.Duration
	// RetryFailed is how often an instance that did not fit is tried again; default 5 s.
	RetryFailed time.Duration
	// Batch is the most instances one round places; default 10,000.
	Batch int
	// BatchWindow is how long a round waits after a notification for more; default 10 ms.
	BatchWindow time.Duration
}

// Auctioneer runs placement rounds while it leads.
type Auctioneer struct {
	store Store
	notes Notifications
	cells Cells
	opts  Options
	log   *zap.Logger

	sent   map[slot]attempt // handed to a cell
	failed map[slot]time.Time
}

type slot struct {
	guid, def string
	index     int32
}

type attempt struct {
	at  time.Time
	tag model.ModificationTag
}

// New builds an auctioneer that wakes on notes (the store's notifier,
// db.Store.Notifications) and at least every Interval.
func New(store Store, notes Notifications, cells Cells, opts Options, log *zap.Logger) *Auctioneer {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Resend <= 0 {
		opts.Resend = 30 * time.Second
	}
	if opts.RetryFailed <= 0 {
		opts.RetryFailed = 5 * time.Second
	}
	if opts.Batch <= 0 {
		opts.Batch = 10000
	}
	if opts.BatchWindow <= 0 {
		opts.BatchWindow = 10 * time.Millisecond
	}
	return &Auctioneer{store: store, notes: notes, cells: cells, opts: opts, log: log.Named("auctioneer"),
		sent: map[slot]attempt{}, failed: map[slot]time.Time{}}
}

// Run places instances until ctx ends, leading when it can.
func (a *Auctioneer) Run(ctx context.Context) error {
	sub := a.notes.Subscribe(ctx, db.EventsChannel)
	defer sub.Close()
	var lead *db.Leadership
	defer func() {
		if lead != nil {
			lead.Release()
		}
	}()
	for {
		if lead == nil {
			l, ok, err := a.store.TryLeadership(ctx, "auctioneer")
			if err != nil && ctx.Err() == nil {
				a.log.Warn("leader lock", zap.Error(err))
			}
			if ok {
				lead = l
				a.log.Info("leading placement")
			}
		}
		if lead != nil {
			if err := a.Round(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("placement round", zap.Error(err))
				if !lead.Alive(ctx) {
					lead.Release()
					lead = nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
			if sub.Resynced() {
				// The notifier lost its connection (and logged why): the next round reads
				// everything that waits, which is all a missed notification could have said.
				a.log.Info("notifications resynced after a lost connection")
			}
			// Many changes arrive together (a rollout step, a batch of claims): gather them
			// for a moment so that one round places all they made waiting. The subscription
			// holds at most one pending wake-up, which this round covers.
			time.Sleep(a.opts.BatchWindow)
			select {
			case <-sub.C:
			default:
			}
		case <-time.After(a.opts.Interval):
		}
	}
}

// Round places what waits now, once.
func (a *Auctioneer) Round(ctx context.Context) error {
	pending, err := a.store.PendingPlacements(ctx, a.opts.Batch)
	if err != nil {
		return err
	}
	now := time.Now()
	waiting := make(map[slot]db.PendingInstance, len(pending))
	var work []auction.Work
	for _, p := range pending {
		s := slot{p.Key.ProcessGUID, p.Key.DefinitionID, p.Key.Index}
		waiting[s] = p
		if at, ok := a.sent[s]; ok && at.tag == p.ModificationTag && now.Sub(at.at) < a.opts.Resend {
			continue // a cell is claiming it
		}
		if at, ok := a.failed[s]; ok && now.Sub(at) < a.opts.RetryFailed {
			continue
		}
		work = append(work, auction.Work{Key: p.Key, MemoryMB: p.MemoryMB, DiskMB: p.DiskMB, PlacementTags: p.PlacementTags})
	}
	a.forgetPlaced(waiting)
	if len(work) == 0 {
		return nil
	}
	guids := make([]string, 0, len(work))
	seen := map[string]bool{}
	for _, w := range work {
		if !seen[w.Key.ProcessGUID] {
			seen[w.Key.ProcessGUID] = true
			guids = append(guids, w.Key.ProcessGUID)
		}
	}
	loads, err := a.store.CellLoads(ctx, guids)
	if err != nil {
		return err
	}
	cells := make([]auction.Cell, 0, len(loads))
	repURL := map[string]string{}
	for _, l := range loads {
		if l.Cell.Evacuating {
			continue
		}
		c := auction.Cell{ID: l.Cell.CellID, Zone: l.Cell.Zone, Capacity: l.Cell.Capacity, PlacementTags: l.Cell.PlacementTags,
			Held: auction.Usage(l.Held)}
		for _, h := range l.Instances {
			c.Instances = append(c.Instances, auction.Instance{ProcessGUID: h.ProcessGUID, MemoryMB: h.MemoryMB, DiskMB: h.DiskMB, Starting: h.Starting})
		}
		cells = append(cells, c)
		repURL[c.ID] = l.Cell.RepAddress
	}
	result := auction.Place(cells, work)
	for _, f := range result.Failed {
		a.fail(ctx, waiting, f.Work.Key, f.Reason)
	}
	if len(result.Placed) == 0 {
		return nil
	}
	return a.handOut(ctx, result.Placed, repURL, waiting)
}

// handOut sends each cell its share, with the definitions to run, and notes what was sent.
func (a *Auctioneer) handOut(ctx context.Context, placed []auction.Placement, repURL map[string]string, waiting map[slot]db.PendingInstance) error {
	keys := make([]db.DefinitionKey, 0, len(placed))
	seen := map[db.DefinitionKey]bool{}
	for _, p := range placed {
		k := db.DefinitionKey{ProcessGUID: p.Work.Key.ProcessGUID, DefinitionID: p.Work.Key.DefinitionID}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	defs, err := a.store.Definitions(ctx, keys)
	if err != nil {
		return err
	}
	byCell := map[string][]cellapi.Work{}
	now := time.Now()
	for _, p := range placed {
		def, ok := defs[db.DefinitionKey{ProcessGUID: p.Work.Key.ProcessGUID, DefinitionID: p.Work.Key.DefinitionID}]
		if !ok {
			continue // the LRP went away meanwhile
		}
		byCell[p.CellID] = append(byCell[p.CellID], cellapi.Work{Key: p.Work.Key, Definition: def})
		s := slot{p.Work.Key.ProcessGUID, p.Work.Key.DefinitionID, p.Work.Key.Index}
		a.sent[s] = attempt{at: now, tag: waiting[s].ModificationTag}
		delete(a.failed, s)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for cellID, work := range byCell {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rejected, err := a.cells.Perform(ctx, repURL[cellID], work)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				a.log.Warn("hand out work", zap.String("cell_id", cellID), zap.Int("instances", len(work)), zap.Error(err))
				for _, w := range work {
					delete(a.sent, slot{w.Key.ProcessGUID, w.Key.DefinitionID, w.Key.Index})
				}
				return
			}
			for _, r := range rejected {
				s := slot{r.Key.ProcessGUID, r.Key.DefinitionID, r.Key.Index}
				delete(a.sent, s)
				if !strings.HasPrefix(r.Reason, "claim failed") {
					a.failed[s] = time.Now()
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// fail records why an instance could not be placed, once per reason.
func (a *Auctioneer) fail(ctx context.Context, waiting map[slot]db.PendingInstance, key model.ActualLRPKey, reason string) {
	s := slot{key.ProcessGUID, key.DefinitionID, key.Index}
	a.failed[s] = time.Now()
	p := waiting[s]
	if p.PlacementError == reason {
		return
	}
	tag := p.ModificationTag
	if _, err := a.store.FailActualLRP(ctx, key, reason, &tag); err != nil && !model.IsType(err, model.ErrResourceConflict) {
		a.log.Warn("record placement error", zap.String("process_guid", key.ProcessGUID), zap.Error(err))
	}
}

// forgetPlaced drops bookkeeping for instances no longer waiting.
func (a *Auctioneer) forgetPlaced(waiting map[slot]db.PendingInstance) {
	for s := range a.sent {
		if _, ok := waiting[s]; !ok {
			delete(a.sent, s)
		}
	}
	for s := range a.failed {
		if _, ok := waiting[s]; !ok {
			delete(a.failed, s)
		}
	}
}
