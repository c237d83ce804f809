package cell

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// evacuate drains the cell (seed 003): no new work; containers not yet RUNNING are stopped
// and their instances re-placed at once; RUNNING ones keep serving as EVACUATING until their
// replacement runs elsewhere, or until the evacuation timeout. Tasks do not move: they
// finish, or are failed at the timeout.
func (a *Agent) evacuate(ctx context.Context) error {
	a.draining.Store(true)
	a.log.Info("evacuating")
	if err := a.heartbeat(ctx); err != nil {
		a.log.Warn("announce evacuation", zap.Error(err))
	}
	deadline := time.Now().Add(a.cfg.EvacuationTimeout)
	t := time.NewTicker(a.cfg.EvacuationPoll)
	defer t.Stop()
	for {
		remaining := a.evacuateOnce(ctx)
		if remaining == 0 {
			a.log.Info("evacuated")
			return nil
		}
		if time.Now().After(deadline) {
			a.log.Warn("evacuation timed out: stopping what is left", zap.Int("containers", remaining))
			instances, tasks := splitTasks(a.exec.Containers())
			a.failTasksOnEvacuation(ctx, tasks)
			for _, c := range instances {
				ik := a.instanceKey(&c)
				a.bbs.RemoveEvacuatingActualLRP(ctx, c.Key, ik)
				a.exec.Delete(c.Guid)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// evacuateOnce moves every container one step and returns how many are left.
func (a *Agent) evacuateOnce(ctx context.Context) int {
	containers, tasks := splitTasks(a.exec.Containers())
	// Tasks do not move: the cell waits for them to finish, and reports them as they do.
	left := 0
	for i := range tasks {
		if tasks[i].State == executor.StateCompleted {
			if err := a.reportTask(ctx, &tasks[i]); err == nil {
				continue
			}
		}
		left++
	}
	for i := range containers {
		c := &containers[i]
		ik := a.instanceKey(c)
		switch c.State {
		case executor.StateRunning:
			keep, err := a.bbs.EvacuateRunningActualLRP(ctx, c.Key, ik, netInfo(c))
			if err != nil {
				a.log.Warn("evacuate", zap.String("instance_guid", c.Guid), zap.Error(err))
				left++
				continue
			}
			if keep {
				left++
				continue
			}
			a.log.Info("replacement running: stopping evacuated instance",
				zap.String("process_guid", c.Key.ProcessGUID), zap.Int32("index", c.Key.Index))
			a.exec.Delete(c.Guid)
		case executor.StateCompleted:
			// Reconciliation reports it as usual (crash or removal) and deletes it.
			a.reconcileContainers(ctx, []string{c.Guid})
			if _, ok := a.exec.Get(c.Guid); ok {
				left++
			}
		default:
			// Not serving yet: give it back for placement elsewhere at once. Unclaim first, so
			// that the container's shutdown is not taken for a removal of the instance.
			if _, err := a.bbs.UnclaimActualLRP(ctx, c.Key, ik); err != nil &&
				!model.IsType(err, model.ErrInvalidStateTransition) && !model.IsType(err, model.ErrResourceNotFound) {
				a.log.Warn("unclaim", zap.String("instance_guid", c.Guid), zap.Error(err))
			}
			a.exec.Delete(c.Guid)
		}
	}
	return left
}
