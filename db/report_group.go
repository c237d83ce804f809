package db

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A thousand cells each claiming the one or two instances a placement round gave them, and
// each reporting its starts, make a thousand small transactions a round: each pays the
// statements' fixed cost (lock, write, events, notification) for a few rows. A reportGroup
// commits the batch reports that arrive while one is being written together, in the next
// transaction, so that the fixed cost is paid once per transaction instead of once per
// cell. Every report still follows its single write's rule in order, and every caller gets
// its own answers: a group that fails as a whole is retried caller by caller, so that one
// caller's trouble never becomes another's error.

// maxGroupReports bounds the instances one grouped transaction writes; a caller's own batch
// is never split.
const maxGroupReports = 2000

// groupTimeout bounds a grouped transaction: it runs for several callers, on a context of
// its own.
const groupTimeout = time.Minute

// reportGroup coalesces concurrent batch reports of one kind (claims or starts).
type reportGroup struct {
	mu      sync.Mutex
	queue   []*reportCall
	running bool         // a flush goroutine is writing
	commits atomic.Int64 // transactions tried, for tests
}

// reportCall is one caller's batch and, once done is closed, its answers.
type reportCall struct {
	ctx     context.Context
	reports []InstanceReport
	results []BatchResult
	err     error
	done    chan struct{}
}

// do writes reports with the next grouped transaction and returns their answers. commit
// writes one transaction's reports (in order) and answers each.
func (g *reportGroup) do(ctx context.Context, reports []InstanceReport, commit func(context.Context, []InstanceReport) ([]BatchResult, error)) ([]BatchResult, error) {
	c := &reportCall{ctx: ctx, reports: reports, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if !g.running {
		g.running = true
		go g.flush(commit)
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.results, c.err
	case <-ctx.Done():
		// The reports may still be written (as when a client leaves during a transaction);
		// the cell's next reconciliation reads what became of them.
		return nil, ctx.Err()
	}
}

// flush commits what waits, a group at a time, until nothing does.
func (g *reportGroup) flush(commit func(context.Context, []InstanceReport) ([]BatchResult, error)) {
	for {
		g.mu.Lock()
		group := g.take()
		if len(group) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.commitGroup(group, commit)
	}
}

// take removes the next group from the queue: the callers still waiting, up to
// maxGroupReports instances (at least one caller). The caller holds g.mu.
func (g *reportGroup) take() []*reportCall {
	var group []*reportCall
	n, i := 0, 0
	for ; i < len(g.queue); i++ {
		c := g.queue[i]
		if c.ctx.Err() != nil {
			c.err = c.ctx.Err()
			close(c.done)
			continue
		}
		if len(group) > 0 && n+len(c.reports) > maxGroupReports {
			break
		}
		group = append(group, c)
		n += len(c.reports)
	}
	g.queue = g.queue[i:]
	return group
}

func (g *reportGroup) commitGroup(group []*reportCall, commit func(context.Context, []InstanceReport) ([]BatchResult, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	defer func() {
		for _, c := range group {
			close(c.done)
		}
	}()
	if len(group) == 1 {
		c := group[0]
		g.commits.Add(1)
		c.results, c.err = commit(c.ctx, c.reports)
		return
	}
	var all []InstanceReport
	for _, c := range group {
		all = append(all, c.reports...)
	}
	g.commits.Add(1)
	results, err := commit(ctx, all)
	if err != nil {
		for _, c := range group {
			g.commits.Add(1)
			c.results, c.err = commit(c.ctx, c.reports)
		}
		return
	}
	for _, c := range group {
		c.results, results = results[:len(c.reports):len(c.reports)], results[len(c.reports):]
	}
}
