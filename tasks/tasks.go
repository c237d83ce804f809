// Package tasks carries out what clients and cells ask of tasks — desire, start, complete,
// reject, cancel, resolve, delete — the same way for each API: the JSON API (package api)
// and the BBS protocol (package protocol) validate and translate their requests, then call a
// Service, so that a task desired through one is the task read through the other.
//
// Each change is one store transaction. A task with a callback that completes is delivered
// by the worker's delivery pools (package callbacks), which the commit itself wakes: nothing
// is left to do here that this process could lose by dying. A task cancelled while it ran is
// stopped on its cell after the commit; if this process dies first, the cell stops it on its
// own reconciliation, as the BBS no longer wants it there.
package tasks

import (
	"context"

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

// Service makes the task changes over a store and tells cells to stop cancelled tasks. A
// process builds one and hands it to both APIs, so that a task desired through one is the
// task the other reads and changes.
type Service struct {
	store      Store
	cells      Cells
	maxRetries int
	log        *zap.Logger
}

// NewService builds a Service. cells may be nil while no cell runs tasks (a cancelled task's
// container is then left to its cell's own reconciliation). maxRetries is how often a task
// may be rejected before it fails (BBS's max_task_retries).
func NewService(store Store, cells Cells, maxRetries int, log *zap.Logger) *Service {
	return &Service{store: store, cells: cells, maxRetries: maxRetries, log: log.Named("tasks")}
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

// Complete records how the task ended on a cell (its callback, if any, is the pools' now).
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
	return &ch.After, nil
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
	return &ch.After, nil
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
	return &ch.After, nil
}

// Cancel fails the task as cancelled and tells its cell to stop it when it ran.
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
	return &ch.After, nil
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
