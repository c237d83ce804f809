package cell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Config describes a cell.
type Config struct {
	ID            string
	Zone          string
	Capacity      model.CellCapacity
	PlacementTags []string
	// ListenAddr is where the cell's own API listens (loopback by default: it runs commands).
	ListenAddr string
	// Listener, when set, is used instead of ListenAddr (e.g. a mutual-TLS listener), and
	// AdvertiseScheme ("http" or "https") is how others reach it.
	Listener        net.Listener
	AdvertiseScheme string
	// AdvertiseURL overrides the announced address (a listener on 0.0.0.0 is not reachable
	// under that name).
	AdvertiseURL string
	// HeartbeatInterval and PresenceTTL keep the cell's presence fresh; defaults 3 s and 10 s.
	HeartbeatInterval, PresenceTTL time.Duration
	// PollInterval is how often every container is reconciled with the BBS; default 5 s.
	PollInterval time.Duration
	// EvacuationTimeout bounds a drain; default 10 min. EvacuationPoll is how often a
	// draining cell checks on its replacements; default 500 ms.
	EvacuationTimeout, EvacuationPoll time.Duration
	// StopDrain is how long a stop request waits before the instance is signalled: the BBS
	// marked it retiring when it asked for the stop, and routers deregister it meanwhile, so
	// no new request reaches it once it begins to shut down. Default 2 s; negative: none.
	StopDrain time.Duration
}

func (c Config) withDefaults() Config {
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1:0"
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 3 * time.Second
	}
	if c.PresenceTTL <= 0 {
		c.PresenceTTL = 10 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.EvacuationTimeout <= 0 {
		c.EvacuationTimeout = 10 * time.Minute
	}
	if c.EvacuationPoll <= 0 {
		c.EvacuationPoll = 500 * time.Millisecond
	}
	if c.StopDrain == 0 {
		c.StopDrain = 2 * time.Second
	}
	return c
}

// BBS is what the cell needs of the BBS API.
type BBS interface {
	Heartbeat(ctx context.Context, cell model.CellPresence, ttl time.Duration) error
	RemoveCell(ctx context.Context, cellID string) error
	ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error)
	ClaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error)
	StartActualLRP(ctx context.Context, req bbsclient.InstanceRequest) (*model.ActualLRP, error)
	ClaimActualLRPs(ctx context.Context, reports []bbsclient.InstanceRequest) ([]bbsclient.BatchResult, error)
	StartActualLRPs(ctx context.Context, reports []bbsclient.InstanceRequest) ([]bbsclient.BatchResult, error)
	CrashActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, reason string) (*model.ActualLRP, error)
	UnclaimActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (*model.ActualLRP, error)
	RemoveActualLRP(ctx context.Context, key model.ActualLRPKey, ik *model.ActualLRPInstanceKey) error
	ClaimStop(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) (stop bool, err error)
	EvacuateRunningActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey, net model.ActualLRPNetInfo) (bool, error)
	RemoveEvacuatingActualLRP(ctx context.Context, key model.ActualLRPKey, ik model.ActualLRPInstanceKey) error
	TaskBBS
}

var _ BBS = (*bbsclient.Client)(nil)

// Agent is a running cell.
type Agent struct {
	cfg   Config
	bbs   BBS
	tasks TaskBBS
	exec  *executor.Executor
	log   *zap.Logger

	repURL     string
	draining   atomic.Bool
	drainStart chan struct{}
	drainOnce  sync.Once

	// mu serialises reconciliation and admission, so that a poll and an event never act on
	// the same container at once, and capacity checks see every reservation.
	mu sync.Mutex

	// stops are the containers draining to a stop (stopAfterDrain), and whether another
	// request came for one meanwhile.
	stopMu sync.Mutex
	stops  map[string]*pendingStop
}

// New builds a cell agent around an executor.
func New(cfg Config, bbs BBS, exec *executor.Executor, log *zap.Logger) *Agent {
	cfg = cfg.withDefaults()
	return &Agent{cfg: cfg, bbs: bbs, tasks: bbs, exec: exec, log: log.Named("cell").With(zap.String("cell_id", cfg.ID)),
		drainStart: make(chan struct{})}
}

// RepURL is the address of the cell's API, known once Run has started listening.
func (a *Agent) RepURL() string { return a.repURL }

// Drain makes the cell evacuate; Run returns once it has.
func (a *Agent) Drain() { a.drainOnce.Do(func() { close(a.drainStart) }) }

// Run serves the cell until ctx ends (a quick stop: containers stopped, presence withdrawn)
// or a drain completes. ready, when non-nil, receives the rep URL once the cell is announced.
func (a *Agent) Run(ctx context.Context, ready func(repURL string)) error {
	ln := a.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.cfg.ListenAddr); err != nil {
			return err
		}
	}
	scheme := a.cfg.AdvertiseScheme
	if scheme == "" {
		scheme = "http"
	}
	a.repURL = scheme + "://" + ln.Addr().String()
	if a.cfg.AdvertiseURL != "" {
		a.repURL = strings.TrimRight(a.cfg.AdvertiseURL, "/")
	}
	srv := &http.Server{Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	if err := a.announce(ctx); err != nil {
		return fmt.Errorf("announce cell: %w", err)
	}
	a.log.Info("cell up", zap.String("rep", a.repURL), zap.String("zone", a.cfg.Zone))
	if ready != nil {
		ready(a.repURL)
	}

	loops, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){a.heartbeatLoop, a.pollLoop, a.eventLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(loops) }()
	}
	defer wg.Wait()

	select {
	case <-ctx.Done():
		a.log.Info("stopping: containers stop, presence withdrawn")
		stopLoops()
		wg.Wait()
		a.exec.Close()
		rmCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return a.bbs.RemoveCell(rmCtx, a.cfg.ID)
	case <-a.drainStart:
		err := a.evacuate(ctx)
		stopLoops()
		wg.Wait()
		a.exec.Close()
		rmCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return errors.Join(err, a.bbs.RemoveCell(rmCtx, a.cfg.ID))
	}
}

func (a *Agent) presence() model.CellPresence {
	return model.CellPresence{
		CellID: a.cfg.ID, Zone: a.cfg.Zone, RepAddress: a.repURL, Capacity: a.cfg.Capacity,
		PlacementTags: a.cfg.PlacementTags, Evacuating: a.draining.Load(),
	}
}

func (a *Agent) heartbeat(ctx context.Context) error {
	return a.bbs.Heartbeat(ctx, a.presence(), a.cfg.PresenceTTL)
}

func (a *Agent) heartbeatLoop(ctx context.Context) {
	a.every(ctx, a.cfg.HeartbeatInterval, "heartbeat", a.heartbeat)
}

func (a *Agent) pollLoop(ctx context.Context) {
	a.every(ctx, a.cfg.PollInterval, "reconcile", a.reconcileAll)
}

// every runs fn each interval until ctx ends, logging its failures under what.
func (a *Agent) every(ctx context.Context, interval time.Duration, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn(what, zap.Error(err))
			}
		}
	}
}

// maxEventBatch is the most container events one reconciliation pass takes.
const maxEventBatch = 500

// eventLoop reconciles the containers that changed. Events that arrive together (a batch of
// work starting) are reconciled in one pass, and their starts reported in one batch.
func (a *Agent) eventLoop(ctx context.Context) {
	events, cancel := a.exec.Subscribe()
	defer cancel()
	for {
		var guids []string
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			guids = append(guids, e.Container.Guid)
		}
	more:
		for len(guids) < maxEventBatch {
			select {
			case e, ok := <-events:
				if !ok {
					break more
				}
				guids = append(guids, e.Container.Guid)
			default:
				break more
			}
		}
		if err := a.reconcileContainers(ctx, guids); err != nil && ctx.Err() == nil {
			a.log.Warn("reconcile on events", zap.Int("containers", len(guids)), zap.Error(err))
		}
	}
}

// Available is the capacity left after every container the cell holds: what placement
// offers it and what its capacity metrics report.
func (a *Agent) Available() model.CellCapacity {
	left := a.cfg.Capacity
	memoryMB, diskMB, containers := a.exec.Reserved()
	left.MemoryMB -= memoryMB
	left.DiskMB -= diskMB
	left.Containers -= containers
	return left
}
