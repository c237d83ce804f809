// Package auctioneer places UNCLAIMED instances and PENDING tasks on cells: it gathers what
// waits and what each cell holds, runs the auction (package auction), hands each cell its
// work, and records why what did not fit could not be placed (a task is rejected, and failed
// once rejected too often, as BBS does). One auctioneer leads at a time (a PostgreSQL
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
	"golang.org/x/sync/errgroup"
)

// Store is what placement needs of the database.
type Store interface {
	PendingPlacements(ctx context.Context, limit int) ([]db.PendingInstance, error)
	Cells(ctx context.Context) ([]model.CellPresence, error)
	CellUsages(ctx context.Context) (map[string]db.CellUsage, error)
	HeldInstances(ctx context.Context, guids []string) (map[string][]db.HeldInstance, error)
	Definitions(ctx context.Context, keys []db.DefinitionKey) (map[db.DefinitionKey]model.LRPDefinition, error)
	FailActualLRP(ctx context.Context, key model.ActualLRPKey, placementError string, tag *model.ModificationTag) (*model.ActualLRP, error)
	PendingTasks(ctx context.Context, limit int) ([]db.PendingTask, error)
	TaskDefinitions(ctx context.Context, guids []string) (map[string]model.Task, error)
	RejectTask(ctx context.Context, guid, reason string, maxRetries int) (*db.TaskChange, error)
	TryLeadership(ctx context.Context, name string) (*db.Leadership, bool, error)
}

// Notifications is what placement needs of the store's notifier (*db.Notifier), which
// reports its own connection trouble.
type Notifications interface {
	Subscribe(ctx context.Context, channel string) *db.Subscription
}

// Cells hands work to cell agents.
type Cells interface {
	Perform(ctx context.Context, repURL string, work cellapi.PerformRequest) (*cellapi.PerformResponse, error)
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
	// Resync is how often what the cells hold is summed over the whole fleet again; in
	// between, placement counts what it hands out (fleetUsage). Default 5 s.
	Resync time.Duration
	// MaxTaskRetries is how often a task may be rejected (it fit no cell, or its cell refused
	// it) before it fails with the reason (BBS's max_task_retries); default 3.
	MaxTaskRetries int
}

// DefaultMaxTaskRetries is BBS's max_task_retries.
const DefaultMaxTaskRetries = model.DefaultMaxTaskRetries

// Auctioneer runs placement rounds while it leads.
type Auctioneer struct {
	store Store
	notes Notifications
	cells Cells
	opts  Options
	log   *zap.Logger

	sent   map[slot]attempt // handed to a cell
	usage  fleetUsage
	failed map[slot]time.Time
	// busy says the last round found more than one piece of work due: work is arriving in
	// bursts, and the next wake-up waits BatchWindow to gather it.
	busy bool
}

// slot names one piece of work: an instance, or (task set) a task.
type slot struct {
	guid, def string
	index     int32
	task      string
}

func instanceSlot(k model.ActualLRPKey) slot {
	return slot{guid: k.ProcessGUID, def: k.DefinitionID, index: k.Index}
}

// attempt is a hand-out: when, and the version of the work handed out (an instance's tag, a
// task's update time), so that work that changed since is placed again at once.
type attempt struct {
	at      time.Time
	tag     model.ModificationTag
	updated int64
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
	if opts.Resync <= 0 {
		opts.Resync = 5 * time.Second
	}
	if opts.MaxTaskRetries <= 0 {
		opts.MaxTaskRetries = DefaultMaxTaskRetries
	}
	return &Auctioneer{store: store, notes: notes, cells: cells, opts: opts, log: log.Named("auctioneer"),
		sent: map[slot]attempt{}, failed: map[slot]time.Time{}}
}

// LeaderLock is the name of the leader lock (db.Store.TryLeadership) whose holder places:
// db.LeaderLockKey(LeaderLock) finds it in pg_locks.
const LeaderLock = "auctioneer"

// Run places instances until ctx ends, leading when it can.
func (a *Auctioneer) Run(ctx context.Context) error {
	sub := a.notes.Subscribe(ctx, db.PlacementChannel)
	defer sub.Close()
	var lead *db.Leadership
	defer func() {
		if lead != nil {
			lead.Release()
		}
	}()
	for {
		if lead == nil {
			l, ok, err := a.store.TryLeadership(ctx, LeaderLock)
			if err != nil && ctx.Err() == nil {
				a.log.Warn("leader lock", zap.Error(err))
			}
			if ok {
				lead = l
				a.usage.invalidate() // another leader may have placed meanwhile
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
			// Under load work arrives in bursts (a thousand rollouts' steps, a scale-up):
			// gather it for a moment so that one round places all of it. A lone piece of work
			// (one rollout's next index) is placed at once. The subscription holds at most
			// one pending wake-up, which this round covers.
			if a.busy {
				time.Sleep(a.opts.BatchWindow)
				select {
				case <-sub.C:
				default:
				}
			}
		case <-time.After(a.opts.Interval):
		}
	}
}

// Round places what waits now, once. Its reads go in two waves of queries run together
// (what waits; then the cells, what they hold of the LRPs to place and what to hand out)
// rather than five in turn: a lone rollout's next index waits on the round, whose reads were
// still about a third of the time from its desire to its claim (3 of 9 ms, timed). The
// cells are read after the work, never before: work is then never placed on a view of the
// cells older than itself (read together, an LRP desired just after its cells came up was
// placed as if only the first of them were there).
func (a *Auctioneer) Round(ctx context.Context) error {
	a.busy = false // until this round finds a burst
	var pending []db.PendingInstance
	var tasks []db.PendingTask
	err := together(ctx,
		func(ctx context.Context) (err error) {
			pending, err = a.store.PendingPlacements(ctx, a.opts.Batch)
			return
		},
		func(ctx context.Context) (err error) { tasks, err = a.store.PendingTasks(ctx, a.opts.Batch); return })
	if err != nil {
		return err
	}
	now := time.Now()
	w := waiting{instances: make(map[slot]db.PendingInstance, len(pending)), tasks: make(map[slot]db.PendingTask, len(tasks))}
	var work []auction.Work
	for _, p := range pending {
		s := instanceSlot(p.Key)
		w.instances[s] = p
		if a.due(s, attempt{tag: p.ModificationTag}, now) {
			work = append(work, auction.Work{Key: p.Key, MemoryMB: p.MemoryMB, DiskMB: p.DiskMB, PlacementTags: p.PlacementTags})
		}
	}
	for _, t := range tasks {
		s := slot{task: t.TaskGUID}
		w.tasks[s] = t
		if a.due(s, attempt{updated: t.UpdatedAt}, now) {
			work = append(work, auction.Work{TaskGUID: t.TaskGUID, MemoryMB: t.MemoryMB, DiskMB: t.DiskMB, PlacementTags: t.PlacementTags})
		}
	}
	a.forgetPlaced(w)
	a.busy = len(work) > 1
	if len(work) == 0 {
		return nil
	}
	r, err := a.read(ctx, work, now)
	if err != nil {
		return err
	}
	cells, repURL := a.offers(r.presences, r.held)
	result := auction.Place(cells, work)
	if len(result.Failed) > 0 && !r.fresh {
		// Cells may have freed what the kept sums still count: before anything is recorded
		// as not fitting, the auction runs again on sums read afresh.
		byCell, err := a.store.CellUsages(ctx)
		if err != nil {
			return err
		}
		a.usage.reset(byCell, now)
		cells, repURL = a.offers(r.presences, r.held)
		result = auction.Place(cells, work)
	}
	for _, f := range result.Failed {
		if f.Work.TaskGUID != "" {
			if len(cells) > 0 {
				// With no cell at all there is nothing to reject the task for: it waits.
				a.rejectTask(ctx, f.Work.TaskGUID, f.Reason)
			}
			continue
		}
		a.fail(ctx, w, f.Work.Key, f.Reason)
	}
	if len(result.Placed) == 0 {
		return nil
	}
	return a.handOut(ctx, result.Placed, repURL, w, r)
}

// roundReads is what a round reads once it knows its work: the cells, what they hold of the
// LRPs to place, and what to hand out should the work be placed.
type roundReads struct {
	presences []model.CellPresence
	held      map[string][]db.HeldInstance
	defs      map[db.DefinitionKey]model.LRPDefinition
	taskDefs  map[string]model.Task
	fresh     bool // the fleet's sums were read in full for this round
}

// read reads, together, what the round needs to place work: the cells, the instances they
// hold of its LRPs, the fleet's sums when due, and the definitions of the work (all of it, though
// some may not fit: the definitions are what a cell needs and are read in the same wave).
func (a *Auctioneer) read(ctx context.Context, work []auction.Work, now time.Time) (roundReads, error) {
	var guids, taskGUIDs []string
	var keys []db.DefinitionKey
	seenGUID, seenKey := map[string]bool{}, map[db.DefinitionKey]bool{}
	for _, w := range work {
		if w.TaskGUID != "" {
			taskGUIDs = append(taskGUIDs, w.TaskGUID)
			continue
		}
		if !seenGUID[w.Key.ProcessGUID] {
			seenGUID[w.Key.ProcessGUID] = true
			guids = append(guids, w.Key.ProcessGUID)
		}
		if k := (db.DefinitionKey{ProcessGUID: w.Key.ProcessGUID, DefinitionID: w.Key.DefinitionID}); !seenKey[k] {
			seenKey[k] = true
			keys = append(keys, k)
		}
	}
	r := roundReads{fresh: a.usage.due(now, a.opts.Resync)}
	var usages map[string]db.CellUsage
	reads := []func(context.Context) error{
		func(ctx context.Context) (err error) { r.presences, err = a.store.Cells(ctx); return },
		func(ctx context.Context) (err error) { r.held, err = a.store.HeldInstances(ctx, guids); return },
	}
	if r.fresh {
		reads = append(reads, func(ctx context.Context) (err error) { usages, err = a.store.CellUsages(ctx); return })
	}
	if len(keys) > 0 {
		reads = append(reads, func(ctx context.Context) (err error) { r.defs, err = a.store.Definitions(ctx, keys); return })
	}
	if len(taskGUIDs) > 0 {
		reads = append(reads, func(ctx context.Context) (err error) {
			r.taskDefs, err = a.store.TaskDefinitions(ctx, taskGUIDs)
			return
		})
	}
	if err := together(ctx, reads...); err != nil {
		return roundReads{}, err
	}
	if r.fresh {
		a.usage.reset(usages, now)
	}
	return r, nil
}

// together runs the reads at once, each on its own connection, and returns the first error.
func together(ctx context.Context, reads ...func(context.Context) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, read := range reads {
		g.Go(func() error { return read(ctx) })
	}
	return g.Wait()
}

// offers are the cells work may go to, with what they hold (the instances of the LRPs being
// placed one by one, the rest summed), and their addresses.
func (a *Auctioneer) offers(presences []model.CellPresence, held map[string][]db.HeldInstance) ([]auction.Cell, map[string]string) {
	cells := make([]auction.Cell, 0, len(presences))
	repURL := map[string]string{}
	for _, p := range presences {
		if p.Evacuating {
			continue
		}
		c := auction.Cell{ID: p.CellID, Zone: p.Zone, Capacity: p.Capacity, PlacementTags: p.PlacementTags,
			Held: a.usage.held(p.CellID, held[p.CellID])}
		for _, h := range held[p.CellID] {
			c.Instances = append(c.Instances, auction.Instance{ProcessGUID: h.ProcessGUID, MemoryMB: h.MemoryMB, DiskMB: h.DiskMB, Starting: h.Starting})
		}
		cells = append(cells, c)
		repURL[c.ID] = p.RepAddress
	}
	return cells, repURL
}

// waiting is what a round found waiting, by slot.
type waiting struct {
	instances map[slot]db.PendingInstance
	tasks     map[slot]db.PendingTask
}

func (w waiting) has(s slot) bool {
	if s.task != "" {
		_, ok := w.tasks[s]
		return ok
	}
	_, ok := w.instances[s]
	return ok
}

// due says whether the work in slot s, now at version v, should be placed this round: not
// while a cell is starting what was handed out (unless it changed since, or Resend passed),
// nor soon after it fit nowhere.
func (a *Auctioneer) due(s slot, v attempt, now time.Time) bool {
	if at, ok := a.sent[s]; ok && at.tag == v.tag && at.updated == v.updated && now.Sub(at.at) < a.opts.Resend {
		return false
	}
	if at, ok := a.failed[s]; ok && now.Sub(at) < a.opts.RetryFailed {
		return false
	}
	return true
}

// handOut sends each cell its share, with the definitions to run (read with the round's
// second wave), and notes what was sent.
func (a *Auctioneer) handOut(ctx context.Context, placed []auction.Placement, repURL map[string]string, w waiting, r roundReads) error {
	defs, taskDefs := r.defs, r.taskDefs
	byCell := map[string]*cellapi.PerformRequest{}
	handed := map[slot]auction.Work{} // what went out, to take back what comes back
	now := time.Now()
	for _, p := range placed {
		req := byCell[p.CellID]
		if req == nil {
			req = &cellapi.PerformRequest{}
			byCell[p.CellID] = req
		}
		if guid := p.Work.TaskGUID; guid != "" {
			t, ok := taskDefs[guid]
			if !ok || t.State != model.TaskPending {
				continue // cancelled or gone meanwhile
			}
			req.Tasks = append(req.Tasks, cellapi.TaskWork{TaskGUID: guid, Domain: t.Domain, Definition: t.TaskDefinition})
			s := slot{task: guid}
			handed[s] = p.Work
			a.usage.add(p.CellID, p.Work, 1)
			a.sent[s] = attempt{at: now, updated: w.tasks[s].UpdatedAt}
			delete(a.failed, s)
			continue
		}
		def, ok := defs[db.DefinitionKey{ProcessGUID: p.Work.Key.ProcessGUID, DefinitionID: p.Work.Key.DefinitionID}]
		if !ok {
			continue // the LRP went away meanwhile
		}
		req.LRPs = append(req.LRPs, cellapi.Work{Key: p.Work.Key, Definition: def})
		s := instanceSlot(p.Work.Key)
		handed[s] = p.Work
		a.usage.add(p.CellID, p.Work, 1)
		a.sent[s] = attempt{at: now, tag: w.instances[s].ModificationTag}
		delete(a.failed, s)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for cellID, req := range byCell {
		if len(req.LRPs) == 0 && len(req.Tasks) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := a.cells.Perform(ctx, repURL[cellID], *req)
			if err == nil {
				// Rejected tasks are recorded outside the lock: each is a store write.
				for _, r := range resp.RejectedTasks {
					a.recordRejection(ctx, r.TaskGUID, r.Reason)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				a.log.Warn("hand out work", zap.String("cell_id", cellID), zap.Int("instances", len(req.LRPs)),
					zap.Int("tasks", len(req.Tasks)), zap.Error(err))
				for _, w := range req.LRPs {
					a.takeBack(cellID, instanceSlot(w.Key), handed)
				}
				for _, t := range req.Tasks {
					a.takeBack(cellID, slot{task: t.TaskGUID}, handed)
				}
				return
			}
			for _, r := range resp.Rejected {
				s := instanceSlot(r.Key)
				a.takeBack(cellID, s, handed)
				if !strings.HasPrefix(r.Reason, "claim failed") {
					a.failed[s] = time.Now()
				}
			}
			for _, r := range resp.RejectedTasks {
				s := slot{task: r.TaskGUID}
				a.takeBack(cellID, s, handed)
				a.failed[s] = time.Now()
			}
		}()
	}
	wg.Wait()
	return nil
}

// takeBack forgets that the work in s went to cellID: the cell did not take it. The caller
// holds handOut's lock.
func (a *Auctioneer) takeBack(cellID string, s slot, handed map[slot]auction.Work) {
	delete(a.sent, s)
	if w, ok := handed[s]; ok {
		a.usage.add(cellID, w, -1)
	}
}

// fail records why an instance could not be placed, once per reason.
func (a *Auctioneer) fail(ctx context.Context, w waiting, key model.ActualLRPKey, reason string) {
	s := instanceSlot(key)
	a.failed[s] = time.Now()
	p := w.instances[s]
	if p.PlacementError == reason {
		return
	}
	tag := p.ModificationTag
	if _, err := a.store.FailActualLRP(ctx, key, reason, &tag); err != nil && !model.IsType(err, model.ErrResourceConflict) {
		a.log.Warn("record placement error", zap.String("process_guid", key.ProcessGUID), zap.Error(err))
	}
}

// rejectTask records that a task could not be placed or was refused by its cell: it waits
// RetryFailed before the next try, and fails once rejected MaxTaskRetries times.
func (a *Auctioneer) rejectTask(ctx context.Context, guid, reason string) {
	a.failed[slot{task: guid}] = time.Now()
	a.recordRejection(ctx, guid, reason)
}

// recordRejection is rejectTask's store write, safe to call from several goroutines.
func (a *Auctioneer) recordRejection(ctx context.Context, guid, reason string) {
	ch, err := a.store.RejectTask(ctx, guid, reason, a.opts.MaxTaskRetries)
	switch {
	case err != nil && !model.IsType(err, model.ErrResourceNotFound) && !model.IsType(err, model.ErrInvalidRequest):
		a.log.Warn("reject task", zap.String("task_guid", guid), zap.Error(err))
	case err == nil && ch.After.State == model.TaskCompleted:
		a.log.Info("task failed: rejected too often", zap.String("task_guid", guid), zap.String("reason", reason))
	}
}

// forgetPlaced drops bookkeeping for work no longer waiting.
func (a *Auctioneer) forgetPlaced(w waiting) {
	for s := range a.sent {
		if !w.has(s) {
			delete(a.sent, s)
		}
	}
	for s := range a.failed {
		if !w.has(s) {
			delete(a.failed, s)
		}
	}
}
