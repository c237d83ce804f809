package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/updatable-lrps/bbs/model"
)

// HasHealthCheck reports whether a definition says how to monitor its instances: a monitor
// action or a check definition with at least one check. Backends use it for
// Instance.HasMonitor so that every backend applies seed 002's rules alike.
func HasHealthCheck(def model.LRPDefinition) bool {
	return def.Monitor != nil || (def.CheckDefinition != nil && len(def.CheckDefinition.Checks) > 0)
}

// HasReadinessCheck reports whether a definition has readiness checks, which decide whether
// its RUNNING instances are routable.
func HasReadinessCheck(def model.LRPDefinition) bool {
	return def.CheckDefinition != nil && len(def.CheckDefinition.ReadinessChecks) > 0
}

// lifecycle drives one container from INITIALIZING to COMPLETED and then shuts its instance
// down. Health checks run on it, paced by a timer; the only other goroutine a container may
// have is its readiness checks' (watchReadiness), for a definition that has them.
func (e *Executor) lifecycle(ctx context.Context, c *container) {
	defer e.wg.Done()
	defer close(c.done)
	inst, err := e.backend.Start(ctx, e.startSpec(c))
	if err != nil {
		// When Stop caused the failure, the container is already COMPLETED as stopped and
		// this does nothing.
		e.complete(c, crashed(err.Error()))
		return
	}
	e.supervise(ctx, c, inst)
}

// supervise takes a container from its instance's start (or adoption) to COMPLETED, and
// then shuts the instance down.
func (e *Executor) supervise(ctx context.Context, c *container, inst Instance) {
	log := e.log.With(zap.String("guid", c.Guid), zap.String("process_guid", c.Key.ProcessGUID),
		zap.Int32("index", c.Key.Index))
	// Whatever ends the container, the instance must not outlive it.
	defer inst.Stop(e.cfg.StopGracePeriod)
	if !e.transition(c, StateCreated) {
		return
	}

	if c.spec.Task != nil {
		// A task runs once: it is RUNNING as soon as its action started, and its exit ends it.
		if e.transition(c, StateRunning) {
			e.watchTask(c, inst)
		}
		return
	}
	hasMonitor := inst.HasMonitor()
	if !hasMonitor {
		// Seed 002: without a monitor the instance is healthy as soon as its action runs.
		if e.running(ctx, c, inst) {
			e.watchAction(c, inst)
		}
		return
	}
	e.monitor(ctx, c, inst, log)
}

// running moves an LRP's container to RUNNING — not ready, when its definition has readiness
// checks — and starts checking its readiness. False when the container completed first.
func (e *Executor) running(ctx context.Context, c *container, inst Instance) bool {
	readiness := HasReadinessCheck(c.spec.Definition)
	e.mu.Lock()
	if c.State == StateCompleted {
		e.mu.Unlock()
		return false
	}
	c.NotReady = readiness
	e.setState(c, StateRunning)
	e.mu.Unlock()
	if readiness {
		e.wg.Add(1)
		go e.watchReadiness(ctx, c, inst)
	}
	return true
}

// watchReadiness runs the readiness checks every ReadinessInterval for as long as the
// container runs, and records each change of their outcome (an event, for the cell to
// report it at once). A check that hangs is bounded by the interval; one that races the
// instance's stop is dropped by setReady.
func (e *Executor) watchReadiness(ctx context.Context, c *container, inst Instance) {
	defer e.wg.Done()
	tick := time.NewTicker(e.cfg.ReadinessInterval)
	defer tick.Stop()
	for {
		checkCtx, cancel := context.WithTimeout(ctx, e.cfg.ReadinessInterval)
		err := inst.CheckReadiness(checkCtx)
		cancel()
		if !e.setReady(c, err == nil) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.stop:
			return
		case <-c.done:
			return
		case <-tick.C:
		}
	}
}

// setReady records the readiness checks' outcome of a RUNNING container, publishing an event
// when it changed. False once the container no longer runs.
func (e *Executor) setReady(c *container, ready bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.State != StateRunning {
		return false
	}
	if c.NotReady == ready {
		c.NotReady = !ready
		e.publishLocked(Event{Container: c.snapshot()})
	}
	return true
}

// watchAction waits for an unmonitored instance's action: any exit is a crash, even with
// status 0, and its reason quotes the instance's last line of output, which usually says why.
func (e *Executor) watchAction(c *container, inst Instance) {
	select {
	case <-c.stop:
	case <-inst.Done():
		if err := inst.Err(); err != nil {
			e.complete(c, crashedWithOutput(inst, err.Error()))
		} else {
			e.complete(c, crashedWithOutput(inst, "action exited (status 0)"))
		}
	}
}

// watchTask waits for a task's action and completes the container with its outcome: a
// failure with the exit's reason, or a success with the result file's contents.
func (e *Executor) watchTask(c *container, inst Instance) {
	select {
	case <-c.stop:
		return
	case <-inst.Done():
	}
	if err := inst.Err(); err != nil {
		e.complete(c, crashed(err.Error()))
		return
	}
	file := c.spec.Task.ResultFile
	if file == "" {
		e.complete(c, Result{})
		return
	}
	rr, ok := inst.(ResultReader)
	if !ok {
		e.complete(c, crashed("this cell's executor cannot read result files"))
		return
	}
	data, truncated, err := rr.ReadResultFile(file, model.MaxTaskResultBytes)
	switch {
	case err != nil:
		e.complete(c, crashed(fmt.Sprintf("failed to read result file %s: %v", file, err)))
	case truncated:
		e.complete(c, crashed(fmt.Sprintf("result file %s is larger than %d bytes", file, model.MaxTaskResultBytes)))
	default:
		e.complete(c, Result{TaskResult: string(data)})
	}
}

// monitor polls the health check: every MonitorInterval until it first passes (then RUNNING),
// every HealthyMonitorInterval after that. It returns once the container has completed.
func (e *Executor) monitor(ctx context.Context, c *container, inst Instance, log *zap.Logger) {
	startTimeout := e.cfg.DefaultStartTimeout
	if ms := c.spec.Definition.StartTimeoutMs; ms > 0 {
		startTimeout = time.Duration(ms) * time.Millisecond
	}
	// The start timeout counts from CREATED, when the action has started: setup time (such
	// as a slow download in Diego) is not the app's fault.
	deadline := time.Now().Add(startTimeout)
	deadlineTimer := time.NewTimer(startTimeout)
	defer deadlineTimer.Stop()
	deadlineC := deadlineTimer.C
	pollTimer := time.NewTimer(e.cfg.MonitorInterval)
	defer pollTimer.Stop()
	timedOut := fmt.Sprintf("instance did not become healthy within %s", formatDuration(startTimeout))

	healthy := false
	actionDone := inst.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-actionDone:
			if err := inst.Err(); err != nil {
				e.complete(c, crashedWithOutput(inst, err.Error()))
				return
			}
			// Seed 002: an action that exits successfully daemonized; keep monitoring.
			log.Info("action exited successfully; monitoring it as a daemon")
			actionDone = nil
		case <-deadlineC:
			e.complete(c, crashedWithOutput(inst, timedOut))
			return
		case <-pollTimer.C:
			checkCtx, cancel := ctx, context.CancelFunc(func() {})
			if !healthy {
				// A check that hangs must not outlast the start timeout.
				checkCtx, cancel = context.WithDeadline(ctx, deadline)
			}
			err := inst.Check(checkCtx)
			cancel()
			if ctx.Err() != nil {
				return // stopped while checking
			}
			if err == nil {
				if !healthy {
					healthy = true
					deadlineTimer.Stop()
					deadlineC = nil
					if !e.running(ctx, c, inst) {
						return
					}
				}
				pollTimer.Reset(e.cfg.HealthyMonitorInterval)
				continue
			}
			// A check usually fails because the action died; its exit says more.
			if exitErr, exited := exitReason(inst, actionDone); exited && exitErr != nil {
				e.complete(c, crashedWithOutput(inst, exitErr.Error()))
				return
			}
			if healthy {
				// The deferred Stop of supervise ends the instance; the reason says so, as
				// the failed check alone would not tell that a live process was stopped.
				e.complete(c, crashedWithOutput(inst, "health check failed, instance stopped: "+err.Error()))
				return
			}
			if !time.Now().Before(deadline) {
				e.complete(c, crashedWithOutput(inst, timedOut))
				return
			}
			log.Debug("not healthy yet", zap.Error(err))
			pollTimer.Reset(e.cfg.MonitorInterval)
		}
	}
}

// exitReason reports, without waiting, whether the action has exited and how.
func exitReason(inst Instance, done <-chan struct{}) (error, bool) {
	if done == nil {
		return nil, false
	}
	select {
	case <-done:
		return inst.Err(), true
	default:
		return nil, false
	}
}

func crashed(reason string) Result { return Result{Failed: true, FailureReason: reason} }

// formatDuration prints whole seconds as "60s" rather than Go's "1m0s", to match the crash
// reasons operators know from Diego.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// startSpec builds what the backend needs, including the environment Diego gives instances.
func (e *Executor) startSpec(c *container) StartSpec {
	def := c.spec.Definition
	env := make([]model.EnvironmentVariable, 0, len(def.Env)+10) // the definition's, then up to 10 of Diego's
	env = append(env, def.Env...)
	add := func(name, value string) {
		env = append(env, model.EnvironmentVariable{Name: name, Value: value})
	}
	addr := e.cfg.Address
	type portJSON struct {
		External uint32 `json:"external"`
		Internal uint32 `json:"internal"`
	}
	portsJSON := []portJSON{}
	for _, p := range c.Ports {
		portsJSON = append(portsJSON, portJSON{External: p.HostPort, Internal: p.ContainerPort})
	}
	if len(c.Ports) > 0 {
		// Local processes share the host's network, so the app must listen on the host port.
		add("PORT", strconv.FormatUint(uint64(c.Ports[0].HostPort), 10))
	}
	add("CF_INSTANCE_INDEX", strconv.Itoa(int(c.Key.Index)))
	add("CF_INSTANCE_GUID", c.Guid)
	add("CF_INSTANCE_IP", addr)
	add("CF_INSTANCE_INTERNAL_IP", addr)
	if len(c.Ports) > 0 {
		first := strconv.FormatUint(uint64(c.Ports[0].HostPort), 10)
		add("CF_INSTANCE_PORT", first)
		add("CF_INSTANCE_ADDR", addr+":"+first)
	}
	b, _ := json.Marshal(portsJSON) // cannot fail for this type
	add("CF_INSTANCE_PORTS", string(b))
	add("INSTANCE_INDEX", strconv.Itoa(int(c.Key.Index)))
	add("INSTANCE_GUID", c.Guid)
	return StartSpec{
		Guid:       c.Guid,
		Key:        c.Key,
		TaskGUID:   c.TaskGUID,
		Definition: def,
		Address:    addr,
		Ports:      append([]model.PortMapping(nil), c.Ports...),
		Env:        env,
		Log:        e.cfg.Log,
	}
}
