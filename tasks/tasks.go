// Package tasks carries out what clients and cells ask of tasks — desire, start, complete,
// reject, cancel, resolve, delete — the same way for each API: the JSON API (package api)
// and the BBS protocol (package protocol) validate and translate their requests, then call a
// Service, so that a task desired through one is the task read through the other.
//
// Each change is one store transaction, after which the Service starts what follows from
// it: the completion callback's delivery when a task with a callback completes, and a stop
// to the cell of a task that was cancelled while it ran. Neither is lost if this process
// dies right after the commit: convergence starts every callback still waiting, and a cell
// stops, on its own reconciliation, a task the BBS no longer wants it to run.
package tasks

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Store is what the task changes need of the database (*db.Store).
type Store interface {
	DesireTask(ctx context.Context, t *model.Task) (*model.Task, error)
	Tasks(ctx context.Context, f model.TaskFilter) ([]model.Task, error)
	TaskByGUID(ctx context.Context, guid string) (*model.Task, error)
	StartTask(ctx context.Context, guid, cellID string) (bool, *db.TaskChange, error)
	CompleteTask(ctx context.Context, guid, cellID string, failed bool, reason, result string) (*db.TaskChange, error)
	FailTask(ctx context.Context, guid, reason string) (*db.TaskChange, error)
	CancelTask(ctx context.Context, guid string) (*db.TaskChange, error)
	RejectTask(ctx context.Context, guid, reason string, maxRetries int) (*db.TaskChange, error)
	ResolvingTask(ctx context.Context, guid string) (*db.TaskChange, error)
	DeleteTask(ctx context.Context, guid string) (*model.Task, error)
}

// Cells stops a task's container on the cell that runs it (*cellapi.Stopper).
type Cells interface {
	CancelTask(ctx context.Context, cellID, guid string) error
}

// Callbacks starts the delivery of a task's completion callback, or finds the one under way
// (*workflows.TaskCallbackClient).
type Callbacks interface {
	DeliverCallback(ctx context.Context, guid string) error
}

// Service makes the task changes over a store, tells cells to stop cancelled tasks and
// starts completion callbacks. A process builds one and hands it to both APIs, so that a
// task desired through one is the task the other reads and changes.
type Service struct {
	store      Store
	cells      Cells
	callbacks  Callbacks
	maxRetries int
	log        *zap.Logger
}

// NewService builds a Service. cells may be nil while no cell runs tasks (a cancelled task's
// container is then left to its cell's own reconciliation); callbacks may be nil when the
// process has no Temporal (completion callbacks then wait for convergence, which runs in the
// worker). maxRetries is how often a task may be rejected before it fails (BBS's
// max_task_retries).
func NewService(store Store, cells Cells, callbacks Callbacks, maxRetries int, log *zap.Logger) *Service {
	return &Service{store: store, cells: cells, callbacks: callbacks, maxRetries: maxRetries, log: log.Named("tasks")}
}

// Desire validates and stores a new task.
func (s *Service) Desire(ctx context.Context, t *model.Task) (*model.Task, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return s.store.DesireTask(ctx, t)
}

// List lists tasks by domain and cell.
func (s *Service) List(ctx context.Context, f model.TaskFilter) ([]model.Task, error) {
	return s.store.Tasks(ctx, f)
}

// Get returns one task.
func (s *Service) Get(ctx context.Context, guid string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	return s.store.TaskByGUID(ctx, guid)
}

// Start records that a cell starts the task; false means the cell must not run it (it runs
// there already).
func (s *Service) Start(ctx context.Context, guid, cellID string) (bool, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return false, err
	}
	start, _, err := s.store.StartTask(ctx, guid, cellID)
	return start, err
}

// Complete records how the task ended on a cell and starts its callback.
func (s *Service) Complete(ctx context.Context, guid, cellID string, failed bool, reason, result string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	if cellID == "" {
		return nil, model.Errorf(model.ErrInvalidRequest, "cell_id is required")
	}
	ch, err := s.store.CompleteTask(ctx, guid, cellID, failed, reason, result)
	if err != nil {
		return nil, err
	}
	return s.completed(ctx, ch), nil
}

// Fail completes a PENDING or RUNNING task as failed (BBS's deprecated FailTask).
func (s *Service) Fail(ctx context.Context, guid, reason string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	ch, err := s.store.FailTask(ctx, guid, reason)
	if err != nil {
		return nil, err
	}
	return s.completed(ctx, ch), nil
}

// Reject records that a cell refused the task: it waits for another, or fails once
// rejected too often.
func (s *Service) Reject(ctx context.Context, guid, reason string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	ch, err := s.store.RejectTask(ctx, guid, reason, s.maxRetries)
	if err != nil {
		return nil, err
	}
	return s.completed(ctx, ch), nil
}

// Cancel fails the task as cancelled, tells its cell to stop it when it ran, and starts its
// callback.
func (s *Service) Cancel(ctx context.Context, guid string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	ch, err := s.store.CancelTask(ctx, guid)
	if err != nil {
		return nil, err
	}
	if cell := ch.Before.CellID; cell != "" && s.cells != nil {
		if err := s.cells.CancelTask(ctx, cell, guid); err != nil {
			// The cell stops it on its own reconciliation: the BBS no longer wants it.
			s.log.Warn("tell cell to stop cancelled task", zap.String("task_guid", guid), zap.String("cell_id", cell), zap.Error(err))
		}
	}
	return s.completed(ctx, ch), nil
}

// Resolving claims a completed task's result for the caller.
func (s *Service) Resolving(ctx context.Context, guid string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	ch, err := s.store.ResolvingTask(ctx, guid)
	if err != nil {
		return nil, err
	}
	return &ch.After, nil
}

// Delete removes a RESOLVING task.
func (s *Service) Delete(ctx context.Context, guid string) (*model.Task, error) {
	if err := model.ValidateGUID("task_guid", guid); err != nil {
		return nil, err
	}
	return s.store.DeleteTask(ctx, guid)
}

// completed returns the changed task and, when the change completed a task with a
// callback, starts the callback's delivery, even if the caller has gone meanwhile. A
// delivery that cannot be started is logged: convergence starts it later.
func (s *Service) completed(ctx context.Context, ch *db.TaskChange) *model.Task {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.deliver(ctx, ch)
	return &ch.After
}

// deliver starts the callback of a task the change completed, when it has one.
func (s *Service) deliver(ctx context.Context, ch *db.TaskChange) {
	t := &ch.After
	if t.State != model.TaskCompleted || ch.Before.State == model.TaskCompleted || t.CompletionCallbackURL == "" {
		return
	}
	if s.callbacks == nil {
		s.log.Info("no Temporal: the task's callback waits for convergence", zap.String("task_guid", t.TaskGUID))
	} else if err := s.callbacks.DeliverCallback(ctx, t.TaskGUID); err != nil {
		s.log.Warn("start task callback; convergence starts it later", zap.String("task_guid", t.TaskGUID), zap.Error(err))
	}
}
