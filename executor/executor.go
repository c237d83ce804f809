package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/updatable-lrps/bbs/model"
)

// Errors returned by the Executor; callers compare with errors.Is.
var (
	// ErrContainerExists is returned by Reserve for a guid the executor already holds.
	ErrContainerExists = errors.New("container already exists")
	// ErrContainerNotFound is returned for a guid the executor does not hold.
	ErrContainerNotFound = errors.New("container not found")
	// ErrInvalidState is returned by Run for a container that is no longer RESERVED.
	ErrInvalidState = errors.New("container is not in a state that allows this")
	// ErrNoFreePorts is returned by Reserve when the port range cannot supply enough ports.
	ErrNoFreePorts = errors.New("no free host ports")
	// ErrClosed is returned once Close has been called.
	ErrClosed = errors.New("executor is closed")
)

// Config tunes an Executor; zero fields take the defaults named on each field.
type Config struct {
	// Address is the host address instances listen on; default "127.0.0.1".
	Address string
	// PortRangeStart and PortRangeEnd bound the host ports handed out; default 61000–61999.
	PortRangeStart, PortRangeEnd uint32
	// SkipPortProbe turns off the check that a port can really be bound before it is handed
	// out. Simulated backends listen on nothing, so probing would only cost time.
	SkipPortProbe bool
	// MonitorInterval is how often the health check runs until the instance is healthy;
	// default 500ms (seed 002).
	MonitorInterval time.Duration
	// HealthyMonitorInterval is how often it runs once the instance is RUNNING; default 30s.
	HealthyMonitorInterval time.Duration
	// ReadinessInterval is how often a RUNNING instance's readiness checks run, when its
	// definition has any; default 1s, so that routers learn of an unready instance quickly.
	ReadinessInterval time.Duration
	// StopGracePeriod is the time between the polite signal and the forced kill; default 10s.
	StopGracePeriod time.Duration
	// DefaultStartTimeout bounds the time to become healthy when the definition's
	// start_timeout_ms is 0; default 60s.
	DefaultStartTimeout time.Duration
	// Log receives the instances' output; nil discards it.
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.Address == "" {
		c.Address = "127.0.0.1"
	}
	if c.PortRangeStart == 0 && c.PortRangeEnd == 0 {
		c.PortRangeStart, c.PortRangeEnd = 61000, 61999
	}
	if c.PortRangeEnd < c.PortRangeStart {
		c.PortRangeEnd = c.PortRangeStart
	}
	if c.MonitorInterval <= 0 {
		c.MonitorInterval = 500 * time.Millisecond
	}
	if c.ReadinessInterval <= 0 {
		c.ReadinessInterval = time.Second
	}
	if c.HealthyMonitorInterval <= 0 {
		c.HealthyMonitorInterval = 30 * time.Second
	}
	if c.StopGracePeriod <= 0 {
		c.StopGracePeriod = 10 * time.Second
	}
	if c.DefaultStartTimeout <= 0 {
		c.DefaultStartTimeout = 60 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	} else {
		// Backends write from many goroutines and the caller's writer (a bytes.Buffer in
		// tests, a file in production) need not be safe for that.
		c.Log = &lockedWriter{w: c.Log}
	}
	return c
}

// SubscriberBuffer is how many events a subscriber may fall behind before events are dropped
// for it. Dropping is safe because the cell also polls Containers (seed 003: events are only
// an optimisation), and it keeps one slow reader from stalling every container.
const SubscriberBuffer = 1024

// Executor manages the containers of one cell: it reserves ports, starts instances through a
// Backend, watches their health and reports every transition.
type Executor struct {
	backend Backend
	cfg     Config
	log     *zap.Logger

	mu         sync.Mutex
	containers map[string]*container
	usedPorts  map[uint32]bool
	nextPort   uint32
	subs       map[int]chan Event
	nextSub    int
	closed     bool

	dropped atomic.Uint64
	wg      sync.WaitGroup
}

// container is the executor's record of one container; the embedded Container is guarded by
// Executor.mu.
type container struct {
	Container
	spec   RunSpec
	hasRun bool
	// stop is closed, and cancel called, when the container is told to stop, so that a
	// lifecycle blocked in Start or in a health check gives up at once.
	stop   chan struct{}
	cancel context.CancelFunc
	// done is closed once everything the container started has exited.
	done chan struct{}
}

// New returns an Executor that starts instances through b, having adopted those that an
// earlier executor on the same backend left running (Adopter).
func New(b Backend, cfg Config, log *zap.Logger) *Executor {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	e := &Executor{
		backend:    b,
		cfg:        cfg,
		log:        log,
		containers: make(map[string]*container),
		usedPorts:  make(map[uint32]bool),
		nextPort:   cfg.PortRangeStart,
		subs:       make(map[int]chan Event),
	}
	if a, ok := b.(Adopter); ok {
		e.adopt(a)
	}
	return e
}

// Reserve registers a RESERVED container for spec and allocates one free host port per port of
// its definition.
func (e *Executor) Reserve(spec RunSpec) (Container, error) {
	if spec.Guid == "" {
		return Container{}, fmt.Errorf("reserve: instance guid is required")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Container{}, ErrClosed
	}
	if _, ok := e.containers[spec.Guid]; ok {
		return Container{}, fmt.Errorf("reserve %s: %w", spec.Guid, ErrContainerExists)
	}
	hostPorts, err := e.allocPorts(len(spec.Definition.Ports))
	if err != nil {
		return Container{}, fmt.Errorf("reserve %s: %w", spec.Guid, err)
	}
	var ports []model.PortMapping
	for i, p := range spec.Definition.Ports {
		ports = append(ports, model.PortMapping{ContainerPort: p, HostPort: hostPorts[i]})
	}
	c := &container{
		Container: Container{
			Guid:     spec.Guid,
			Key:      spec.Key,
			TaskGUID: spec.taskGUID(),
			State:    StateReserved,
			MemoryMB: spec.Definition.MemoryMB,
			DiskMB:   spec.Definition.DiskMB,
			Address:  e.cfg.Address,
			Ports:    ports,
			Since:    time.Now(),
		},
		spec: spec,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	e.containers[spec.Guid] = c
	return c.snapshot(), nil
}

// Run starts a RESERVED container in the background: INITIALIZING, then CREATED once the
// backend has started it, then RUNNING once it is healthy. It returns at once.
func (e *Executor) Run(guid string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	c, ok := e.containers[guid]
	if !ok {
		return fmt.Errorf("run %s: %w", guid, ErrContainerNotFound)
	}
	if c.State != StateReserved {
		return fmt.Errorf("run %s in state %s: %w", guid, c.State, ErrInvalidState)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.hasRun, c.cancel = true, cancel
	e.setState(c, StateInitializing)
	e.wg.Add(1)
	go e.lifecycle(ctx, c)
	return nil
}

// Stop asks a container to stop. It becomes COMPLETED with Result{Stopped: true} at once, so a
// stop is never mistaken for a crash, and its instance is shut down in the background (Delete
// waits for that). Stopping a COMPLETED container does nothing.
func (e *Executor) Stop(guid string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[guid]
	if !ok {
		return fmt.Errorf("stop %s: %w", guid, ErrContainerNotFound)
	}
	e.stopLocked(c)
	return nil
}

func (e *Executor) stopLocked(c *container) {
	if c.State == StateCompleted {
		return
	}
	e.completeLocked(c, Result{Stopped: true})
	close(c.stop)
	if c.cancel != nil {
		c.cancel()
	}
	if !c.hasRun {
		// No lifecycle goroutine exists to close done.
		close(c.done)
	}
}

// Delete stops the container if needed, waits until its instance has exited, frees its ports
// and forgets it.
func (e *Executor) Delete(guid string) error {
	e.mu.Lock()
	c, ok := e.containers[guid]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("delete %s: %w", guid, ErrContainerNotFound)
	}
	e.stopLocked(c)
	e.mu.Unlock()

	<-c.done

	e.mu.Lock()
	defer e.mu.Unlock()
	// A concurrent Delete may have finished first, and a new container may even have been
	// reserved under the same guid since; only the record we stopped is ours to remove.
	if e.containers[guid] == c {
		for _, p := range c.Ports {
			delete(e.usedPorts, p.HostPort)
		}
		delete(e.containers, guid)
	}
	return nil
}

// Containers returns a snapshot of every container, sorted by guid.
func (e *Executor) Containers() []Container {
	e.mu.Lock()
	out := make([]Container, 0, len(e.containers))
	for _, c := range e.containers {
		out = append(out, c.snapshot())
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Guid < out[j].Guid })
	return out
}

// Reserved is what the containers hold in all: memory, disk and their count. Cheaper than
// summing Containers (no snapshots, no sort): a cell asks on every hand-out of work.
func (e *Executor) Reserved() (memoryMB, diskMB, containers int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.containers {
		memoryMB += c.MemoryMB
		diskMB += c.DiskMB
	}
	return memoryMB, diskMB, int32(len(e.containers))
}

// Get returns a snapshot of one container.
func (e *Executor) Get(guid string) (Container, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[guid]
	if !ok {
		return Container{}, false
	}
	return c.snapshot(), true
}

// Subscribe returns a channel that receives an Event for every entry into RUNNING or
// COMPLETED, and a function that ends the subscription and closes the channel. A subscriber
// that falls SubscriberBuffer events behind loses events (counted by DroppedEvents) rather
// than stalling the executor; the cell's polling covers what it missed.
func (e *Executor) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, SubscriberBuffer)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		close(ch)
		return ch, func() {}
	}
	id := e.nextSub
	e.nextSub++
	e.subs[id] = ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			// Close has already closed it when it is no longer registered.
			if sub, ok := e.subs[id]; ok {
				delete(e.subs, id)
				close(sub)
			}
		})
	}
}

// DroppedEvents reports how many events were dropped because a subscriber was too slow.
func (e *Executor) DroppedEvents() uint64 { return e.dropped.Load() }

// Close stops every container, waits until their instances have exited and closes every
// subscription. Containers stay listed (COMPLETED) so a final poll still sees them.
func (e *Executor) Close() {
	e.mu.Lock()
	e.closed = true
	for _, c := range e.containers {
		e.stopLocked(c)
	}
	e.mu.Unlock()

	e.wg.Wait()

	e.mu.Lock()
	defer e.mu.Unlock()
	for id, ch := range e.subs {
		delete(e.subs, id)
		close(ch)
	}
}

// setState moves c to state s; the caller holds e.mu and has checked the transition.
func (e *Executor) setState(c *container, s State) {
	c.State = s
	c.Since = time.Now()
	if s == StateRunning || s == StateCompleted {
		e.publishLocked(Event{Container: c.snapshot()})
	}
}

// transition moves c to s unless it has already completed (a Stop won the race).
func (e *Executor) transition(c *container, s State) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.State == StateCompleted {
		return false
	}
	e.setState(c, s)
	return true
}

// complete records how c ended unless it has already completed.
func (e *Executor) complete(c *container, r Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.completeLocked(c, r)
}

func (e *Executor) completeLocked(c *container, r Result) {
	if c.State == StateCompleted {
		return
	}
	c.Result = r
	if r.Failed {
		e.log.Info("container crashed", zap.String("guid", c.Guid),
			zap.String("process_guid", c.Key.ProcessGUID), zap.String("reason", r.FailureReason))
	}
	e.setState(c, StateCompleted)
}

// publishLocked sends ev to every subscriber without blocking; the caller holds e.mu, which
// keeps each subscriber's events in the order the transitions happened.
func (e *Executor) publishLocked(ev Event) {
	for _, ch := range e.subs {
		select {
		case ch <- ev:
		default:
			e.dropped.Add(1)
		}
	}
}

func (c *container) snapshot() Container {
	out := c.Container
	out.Ports = append([]model.PortMapping(nil), c.Ports...)
	return out
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
