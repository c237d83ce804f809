package cell

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Tasks on a cell (seed 003): a task's container runs its action once, never restarts and
// never moves. The cell tells the BBS when it starts one and how it ended; it stops what the
// BBS no longer wants it to run, and fails what the BBS says runs here but no container
// holds.

// TaskBBS is what the cell needs of the BBS for tasks.
type TaskBBS interface {
	Tasks(ctx context.Context, f model.TaskFilter) ([]model.Task, error)
	StartTask(ctx context.Context, guid, cellID string) (bool, error)
	CompleteTask(ctx context.Context, guid, cellID string, failed bool, reason, result string) error
	TaskByGUID(ctx context.Context, guid string) (*model.Task, error)
}

// Reasons the cell gives for tasks it ends.
const (
	taskContainerGoneReason = "task container no longer exists"
	taskEvacuatedReason     = "cell was evacuated before the task completed"
)

// reserveTasks reserves a container for each task that fits in left, and returns the
// reserved ones and the refused ones. The caller holds a.mu.
func (a *Agent) reserveTasks(work []cellapi.TaskWork, left *model.CellCapacity) (reserved []cellapi.TaskWork, rejected []cellapi.TaskRejection) {
	for _, t := range work {
		def := t.Definition.LRPDefinition()
		reason := ""
		switch {
		case a.draining.Load():
			reason = "cell is evacuating"
		case left.Containers < 1 || left.MemoryMB < def.MemoryMB || left.DiskMB < def.DiskMB:
			reason = model.PlacementErrorInsufficientResources
		}
		if reason == "" {
			_, err := a.exec.Reserve(executor.RunSpec{Guid: t.TaskGUID, Definition: def,
				Task: &executor.TaskSpec{TaskGUID: t.TaskGUID, ResultFile: t.Definition.ResultFile}})
			switch {
			case errors.Is(err, executor.ErrContainerExists):
				continue // handed out again while it starts: nothing to do, nothing to refuse
			case err != nil:
				reason = err.Error()
			default:
				reserved = append(reserved, t)
				left.Containers--
				left.MemoryMB -= def.MemoryMB
				left.DiskMB -= def.DiskMB
			}
		}
		if reason != "" {
			rejected = append(rejected, cellapi.TaskRejection{TaskGUID: t.TaskGUID, Reason: reason})
		}
	}
	return reserved, rejected
}

// startTasks asks the BBS to start each reserved task and runs those it may; the others'
// containers are released. A task the BBS could not be asked about stays PENDING there and
// is handed out again.
func (a *Agent) startTasks(ctx context.Context, reserved []cellapi.TaskWork) {
	for _, t := range reserved {
		start, err := a.tasks.StartTask(ctx, t.TaskGUID, a.cfg.ID)
		if err != nil || !start {
			if err != nil && !model.IsType(err, model.ErrInvalidStateTransition) && !model.IsType(err, model.ErrResourceNotFound) {
				a.log.Warn("start task", zap.String("task_guid", t.TaskGUID), zap.Error(err))
			}
			if !start && err == nil {
				continue // it runs here already: its container is the one we hold
			}
			a.exec.Delete(t.TaskGUID)
			continue
		}
		if err := a.exec.Run(t.TaskGUID); err != nil {
			a.log.Warn("run task", zap.String("task_guid", t.TaskGUID), zap.Error(err))
		}
	}
}

// handleCancelTask stops a task's container: the BBS has completed the task as cancelled.
func (a *Agent) handleCancelTask(w http.ResponseWriter, r *http.Request) {
	var req cellapi.TaskGUIDRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		badRequest(w, "cannot decode task cancel: "+err.Error())
		return
	}
	c, ok := a.exec.Get(req.TaskGUID)
	if !ok || c.TaskGUID == "" {
		writeJSON(w, http.StatusNotFound, map[string]*model.Error{"error": model.Errorf(model.ErrResourceNotFound, "no container for task %q", req.TaskGUID)})
		return
	}
	a.log.Info("cancelling task", zap.String("task_guid", req.TaskGUID))
	go a.exec.Delete(req.TaskGUID) // stops it; the BBS has completed the task already
	writeJSON(w, http.StatusOK, struct{}{})
}

// splitTasks separates task containers from instance containers.
func splitTasks(containers []executor.Container) (instances, tasks []executor.Container) {
	instances = make([]executor.Container, 0, len(containers)) // the usual case: all of them
	for _, c := range containers {
		if c.TaskGUID != "" {
			tasks = append(tasks, c)
		} else {
			instances = append(instances, c)
		}
	}
	return instances, tasks
}

// reconcileTasks compares the task containers with the tasks the BBS places on this cell:
// a completed container is reported and released; a container the BBS does not run here
// (unknown, cancelled, completed) is stopped; a task the BBS runs here with no container
// is failed. all says containers are every task container (a poll), so that the last rule
// may apply.
func (a *Agent) reconcileTasks(ctx context.Context, containers []executor.Container, all bool) error {
	if len(containers) == 0 && !all {
		return nil
	}
	mine, err := a.tasks.Tasks(ctx, model.TaskFilter{CellID: a.cfg.ID})
	if err != nil {
		return err
	}
	running := make(map[string]bool, len(mine))
	for _, t := range mine {
		if t.State == model.TaskRunning && t.CellID == a.cfg.ID {
			running[t.TaskGUID] = true
		}
	}
	have := map[string]bool{}
	var errs []error
	for i := range containers {
		c := &containers[i]
		have[c.TaskGUID] = true
		switch {
		case c.State == executor.StateReserved:
			// Between reservation and the BBS's answer to its start: handleWork decides.
		case !running[c.TaskGUID] && !a.runsHere(ctx, c.TaskGUID):
			a.log.Info("stopping a task the BBS does not run here", zap.String("task_guid", c.TaskGUID))
			a.exec.Delete(c.Guid)
		case c.State == executor.StateCompleted:
			errs = append(errs, a.reportTask(ctx, c))
		}
	}
	if all {
		for guid := range running {
			if have[guid] {
				continue
			}
			// Reserved since the read above? Then it is ours after all.
			if _, ok := a.exec.Get(guid); ok {
				continue
			}
			a.log.Warn("the BBS runs a task here that no container holds: failing it", zap.String("task_guid", guid))
			if err := a.tasks.CompleteTask(ctx, guid, a.cfg.ID, true, taskContainerGoneReason, ""); err != nil && !taskGone(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// runsHere reads the task again before its container is stopped: the list a pass read may
// predate the task's start on this cell.
func (a *Agent) runsHere(ctx context.Context, guid string) bool {
	t, err := a.tasks.TaskByGUID(ctx, guid)
	if err != nil {
		// Unknown, or the BBS cannot say: only a task the BBS does not know is stopped.
		return !model.IsType(err, model.ErrResourceNotFound)
	}
	return t.State == model.TaskRunning && t.CellID == a.cfg.ID
}

// reportTask tells the BBS how a task's container ended, then releases the container. A
// container that was stopped on request (a cancel) is released without a report: the BBS
// completed the task when it asked.
func (a *Agent) reportTask(ctx context.Context, c *executor.Container) error {
	if !c.Result.Stopped {
		err := a.tasks.CompleteTask(ctx, c.TaskGUID, a.cfg.ID, c.Result.Failed, c.Result.FailureReason, c.Result.TaskResult)
		if err != nil && !taskGone(err) {
			return err // kept: the next pass reports it again
		}
	}
	a.exec.Delete(c.Guid)
	return nil
}

// taskGone says an error means the BBS no longer expects this cell to report the task.
func taskGone(err error) bool {
	return model.IsType(err, model.ErrResourceNotFound) || model.IsType(err, model.ErrInvalidStateTransition) ||
		model.IsType(err, model.ErrRunningOnDifferentCell)
}

// failTasksOnEvacuation stops the tasks still running when an evacuation times out and
// fails them: a task never moves (seed 003), and the BBS must not wait for a cell that is
// going away.
func (a *Agent) failTasksOnEvacuation(ctx context.Context, tasks []executor.Container) {
	for _, c := range tasks {
		a.exec.Delete(c.Guid)
		if err := a.tasks.CompleteTask(ctx, c.TaskGUID, a.cfg.ID, true, taskEvacuatedReason, ""); err != nil && !taskGone(err) {
			a.log.Warn("fail task on evacuation", zap.String("task_guid", c.TaskGUID), zap.Error(err))
		}
	}
}
