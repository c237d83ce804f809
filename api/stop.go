package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Stopper asks cells to stop CLAIMED or RUNNING instances; the cells then remove the records.
type Stopper interface {
	StopInstances(ctx context.Context, lrps []model.ActualLRP) error
}

// instanceStopper hands instances to the cells that run them for the handlers that retire
// instances. A failed stop does not fail the request: the records stay, and convergence stops
// what is still running.
type instanceStopper struct {
	stopper Stopper // nil while no cell can run instances
	log     *zap.Logger
}

// stop hands lrps to their cells, logging what it could not.
func (s *instanceStopper) stop(ctx context.Context, lrps []model.ActualLRP) {
	if len(lrps) == 0 {
		return
	}
	if s.stopper == nil {
		for _, a := range lrps {
			s.log.Warn("no cell client configured: instance left for convergence to stop",
				zap.String("process_guid", a.ProcessGUID), zap.Int32("index", a.Index), zap.String("cell_id", a.CellID))
		}
		return
	}
	if err := s.stopper.StopInstances(ctx, lrps); err != nil {
		// The records stay; convergence stops what is still running.
		s.log.Warn("stopping instances", zap.Error(err))
	}
}
