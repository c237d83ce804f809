package callbacks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"go.uber.org/zap"
)

// Store is what a pool needs of the database (*db.Store).
type Store interface {
	ClaimCallbacks(ctx context.Context, owner string, limit int, lease time.Duration) ([]db.CallbackClaim, error)
	RenewCallbackClaims(ctx context.Context, owner string, lease time.Duration) error
	ResolveCallbacks(ctx context.Context, owner string, guids []string) (int, error)
	ReleaseCallback(ctx context.Context, owner, guid string, r db.CallbackRelease) (bool, error)
	ReleaseCallbackClaims(ctx context.Context, owner string) error
}

// Wakeups wakes the pool when a task with a callback completes (*db.Notifier).
type Wakeups interface {
	Subscribe(ctx context.Context, channel string) *db.Subscription
}

// HandOver gives a callback whose receiver stays down to the patient path, a Temporal
// workflow (*workflows.TaskCallbackClient).
type HandOver interface {
	HandOverCallback(ctx context.Context, guid string, attempts int, lastError string) error
}

// Options tune a pool; zero values take the defaults.
type Options struct {
	// Size is how many callbacks are delivered at once (BBS's task_callback_workers);
	// default 1,000.
	Size int
	// Lease is how long a claim lasts unless renewed (every Lease/4): a killed worker's
	// callbacks are delivered by another pool at most this long after; default 20 s.
	Lease time.Duration
	// Attempts is how many attempts a receiver that cannot be reached gets from the pool,
	// FirstRetry apart and doubling, before the callback is handed over to Temporal;
	// defaults 3 and 200 ms.
	Attempts   int
	FirstRetry time.Duration
	// Poll is how often the pool looks for callbacks with no notification (one lost while
	// the listening connection was down, a back-off that ended); default 1 s.
	Poll time.Duration
	// HTTP sends the callbacks; nil means NewHTTPClient(Size).
	HTTP *http.Client
}

// Defaults of a pool.
const (
	DefaultSize       = 1000
	DefaultLease      = 20 * time.Second
	DefaultAttempts   = 3
	DefaultFirstRetry = 200 * time.Millisecond
	DefaultPoll       = time.Second
	// claimBatch bounds the claims of one transaction; resolveBatch the deletes of one.
	claimBatch   = 256
	resolveBatch = 500
)

func (o Options) withDefaults() Options {
	if o.Size <= 0 {
		o.Size = DefaultSize
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.FirstRetry <= 0 {
		o.FirstRetry = DefaultFirstRetry
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.HTTP == nil {
		o.HTTP = NewHTTPClient(o.Size)
	}
	return o
}

// Pool delivers completion callbacks from one worker process. Several pools (one per worker)
// share the work through their claims.
type Pool struct {
	store    Store
	wakeups  Wakeups
	handOver HandOver
	opts     Options
	owner    string
	log      *zap.Logger

	slots    chan struct{} // one per delivery under way
	wake     chan struct{} // a slot freed, or a back-off ended
	resolved chan string   // answered callbacks, for the resolver to delete
}

// NewPool builds a pool; Run delivers.
func NewPool(store Store, wakeups Wakeups, handOver HandOver, opts Options, log *zap.Logger) *Pool {
	opts = opts.withDefaults()
	return &Pool{store: store, wakeups: wakeups, handOver: handOver, opts: opts, owner: newOwner(), log: log.Named("callbacks"),
		slots: make(chan struct{}, opts.Size), wake: make(chan struct{}, 1), resolved: make(chan string, opts.Size)}
}

// newOwner names this pool in its claims: the host and process, and a random part, so that a
// restarted worker does not take its predecessor's claims for its own.
func newOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Owner is the name of the pool's claims.
func (p *Pool) Owner() string { return p.owner }

// Run delivers callbacks until ctx ends; then it waits for the deliveries under way, deletes
// the tasks they delivered, and releases its other claims for the other pools.
func (p *Pool) Run(ctx context.Context) {
	sub := p.wakeups.Subscribe(ctx, db.CallbacksChannel)
	defer sub.Close()
	var deliveries, helpers sync.WaitGroup
	resolverDone := make(chan struct{})
	go func() { defer close(resolverDone); p.resolve(ctx) }()
	helpers.Add(1)
	go func() { defer helpers.Done(); p.renew(ctx) }()
	poll := time.NewTicker(p.opts.Poll)
	defer poll.Stop()
	var failing bool
	for ctx.Err() == nil {
		if free := cap(p.slots) - len(p.slots); free > 0 {
			claims, err := p.store.ClaimCallbacks(ctx, p.owner, min(free, claimBatch), p.opts.Lease)
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					p.log.Warn("claim callbacks; trying again at the next poll", zap.Error(err))
				}
				failing = true
			case err == nil:
				failing = false
			}
			for _, c := range claims {
				p.slots <- struct{}{}
				deliveries.Add(1)
				go func() {
					defer deliveries.Done()
					p.deliver(ctx, c)
					<-p.slots
					p.signal()
				}()
			}
			if err == nil && len(claims) == min(free, claimBatch) {
				continue // more may be waiting
			}
		}
		select {
		case <-ctx.Done():
		case <-sub.C:
		case <-poll.C:
		case <-p.wake:
		}
	}
	deliveries.Wait()
	helpers.Wait()
	close(p.resolved)
	<-resolverDone
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.store.ReleaseCallbackClaims(stop, p.owner); err != nil {
		p.log.Warn("release callback claims; they expire on their own", zap.Error(err))
	}
}

// signal wakes the claim loop without blocking.
func (p *Pool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// deliver POSTs one claimed callback. An answer sends the task to the resolver; a receiver
// that cannot be reached gets the claim released with a back-off, or, after Attempts, the
// callback handed over to Temporal.
func (p *Pool) deliver(ctx context.Context, c db.CallbackClaim) {
	t := &c.Task
	ans := Post(ctx, p.opts.HTTP, t.CompletionCallbackURL, t.CallbackResponse())
	if !ans.Retry {
		switch {
		case ans.Status == 0:
			p.log.Error("callback cannot be sent; the task is resolved without it", zap.String("task_guid", t.TaskGUID), zap.Error(ans.Err))
		case ans.Err != nil:
			p.log.Warn("callback receiver refused the task's result; the task is resolved anyway",
				zap.String("task_guid", t.TaskGUID), zap.Int("status", ans.Status))
		}
		p.resolved <- t.TaskGUID
		return
	}
	if ctx.Err() != nil {
		return // stopping: the claim is released (or expires) and another pool delivers it
	}
	attempts := c.Attempts + 1
	release := db.CallbackRelease{LastError: ans.Err.Error(), HandOver: attempts >= p.opts.Attempts,
		RetryIn: p.opts.FirstRetry << (attempts - 1)}
	held, err := p.store.ReleaseCallback(ctx, p.owner, t.TaskGUID, release)
	if err != nil || !held {
		if err != nil {
			p.log.Warn("release a callback's claim; it expires on its own", zap.String("task_guid", t.TaskGUID), zap.Error(err))
		}
		return
	}
	if !release.HandOver {
		time.AfterFunc(release.RetryIn, p.signal)
		return
	}
	p.log.Info("callback receiver unavailable: handed over to Temporal, retried with back-off",
		zap.String("task_guid", t.TaskGUID), zap.Int("attempts", attempts), zap.Error(ans.Err))
	if err := p.handOver.HandOverCallback(ctx, t.TaskGUID, attempts, ans.Err.Error()); err != nil {
		p.log.Warn("start a callback's workflow; convergence starts it later", zap.String("task_guid", t.TaskGUID), zap.Error(err))
	}
}

// resolve deletes the tasks whose callbacks were answered, many in one transaction, until
// the pool closes p.resolved. A write that fails is tried again (the claims are renewed
// meanwhile, so no other pool delivers them) until the pool stops (ctx); after that each
// batch is tried once.
func (p *Pool) resolve(ctx context.Context) {
	for guid := range p.resolved {
		batch := []string{guid}
	drain:
		for len(batch) < resolveBatch {
			select {
			case g, ok := <-p.resolved:
				if !ok {
					break drain
				}
				batch = append(batch, g)
			default:
				break drain
			}
		}
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			write, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_, err := p.store.ResolveCallbacks(write, p.owner, batch)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				// Their claims expire, and another pool delivers them again: at least once.
				p.log.Error("stopping with delivered tasks not deleted", zap.Int("tasks", len(batch)), zap.Error(err))
				break
			}
			p.log.Warn("delete delivered tasks; trying again", zap.Int("tasks", len(batch)), zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// renew extends the pool's claims every quarter lease until ctx ends.
func (p *Pool) renew(ctx context.Context) {
	tick := time.NewTicker(p.opts.Lease / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := p.store.RenewCallbackClaims(ctx, p.owner, p.opts.Lease); err != nil && ctx.Err() == nil {
			p.log.Warn("renew callback claims", zap.Error(err))
		}
	}
}
