package cellapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/updatable-lrps/bbs/model"
)

// CellAddresses finds where the cells of a batch of instances listen. It is asked only for
// the cells the batch names, so that a stop costs one indexed read however many cells there
// are (*db.Store implements it).
type CellAddresses interface {
	// CellAddresses maps each named cell that is still present to its rep address; a cell
	// whose presence has expired is absent.
	CellAddresses(ctx context.Context, cellIDs []string) (map[string]string, error)
}

// DefaultMaxCells is how many cells a Stopper sends stops to at once unless told otherwise.
const DefaultMaxCells = 16

// Stopper asks the cells that run instances to stop them: what the BBS does when an LRP is
// removed, scaled down or an instance retired. The cells then remove the records. The API,
// the convergence and rollout activities share one.
type Stopper struct {
	// Cells finds the addresses of the cells a batch names.
	Cells CellAddresses
	// Client sends the stops.
	Client *Client
	// MaxCells bounds how many cells are sent stops at once, so that a fleet-wide removal
	// neither opens a connection to every cell together nor waits for them one by one.
	// Zero means DefaultMaxCells.
	MaxCells int
}

// StopInstances sends one stop per instance to the cell its record names. Different cells
// are stopped concurrently; each cell gets its stops in the order given, one at a time. An
// instance on no cell, or on a cell that is gone, is skipped: convergence deals with it. A
// cell that cannot be reached gets none of its remaining stops (each would wait for the same
// timeout); one that answers an error still gets the rest. The error is the first failure in
// the order of lrps, with the instance and the cell it names.
func (s *Stopper) StopInstances(ctx context.Context, lrps []model.ActualLRP) error {
	var cellIDs []string
	byCell := map[string][]int{} // indices into lrps, in order
	for i := range lrps {
		id := lrps[i].CellID
		if id == "" {
			continue
		}
		if _, ok := byCell[id]; !ok {
			cellIDs = append(cellIDs, id)
		}
		byCell[id] = append(byCell[id], i)
	}
	if len(cellIDs) == 0 {
		return nil
	}
	addrs, err := s.Cells.CellAddresses(ctx, cellIDs)
	if err != nil {
		return fmt.Errorf("find the %d cells of %d instances to stop: %w", len(cellIDs), len(lrps), err)
	}

	limit := s.MaxCells
	if limit <= 0 {
		limit = DefaultMaxCells
	}
	sem := make(chan struct{}, limit)
	errs := make([]error, len(lrps)) // by index into lrps; each goroutine writes its own
	var wg sync.WaitGroup
	for _, id := range cellIDs {
		url, ok := addrs[id]
		if !ok {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.stopOnCell(ctx, id, url, lrps, byCell[id], errs)
		}()
	}
	wg.Wait()
	return firstError(errs)
}

// CancelTask asks the cell that runs a task to stop its container. A cell that is gone is
// skipped: the task is already completed, and a cell that comes back stops what the BBS no
// longer wants on its own reconciliation.
func (s *Stopper) CancelTask(ctx context.Context, cellID, guid string) error {
	addrs, err := s.Cells.CellAddresses(ctx, []string{cellID})
	if err != nil {
		return fmt.Errorf("find cell %s of task %s: %w", cellID, guid, err)
	}
	url, ok := addrs[cellID]
	if !ok {
		return nil
	}
	if err := s.Client.CancelTask(ctx, url, guid); err != nil {
		return fmt.Errorf("cancel task %s on cell %s: %w", guid, cellID, err)
	}
	return nil
}

// stopOnCell sends the stops of lrps[indices] to one cell in order, recording each failure
// in errs at the instance's index.
func (s *Stopper) stopOnCell(ctx context.Context, cellID, url string, lrps []model.ActualLRP, indices []int, errs []error) {
	for n, i := range indices {
		a := &lrps[i]
		err := s.Client.Stop(ctx, url, StopRequest{Key: a.ActualLRPKey, InstanceGUID: a.InstanceGUID, Retiring: a.Retiring})
		if err == nil {
			continue
		}
		errs[i] = fmt.Errorf("stop %s/%d (instance %s) on cell %s: %w", a.ProcessGUID, a.Index, a.InstanceGUID, cellID, err)
		var answered *StatusError
		if !errors.As(err, &answered) {
			if left := len(indices) - n - 1; left > 0 {
				errs[i] = fmt.Errorf("%w; cell unreachable, its %d other stops not sent", errs[i], left)
			}
			return
		}
	}
}

// firstError is the first non-nil error, noting how many others there were.
func firstError(errs []error) error {
	var first error
	others := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			others++
		}
	}
	if first != nil && others > 0 {
		return fmt.Errorf("%w (and %d other stops failed)", first, others)
	}
	return first
}
