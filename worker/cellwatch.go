package worker

import (
	"context"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// CellLister lists the fresh cells.
type CellLister interface {
	Cells(ctx context.Context) ([]model.CellPresence, error)
}

// WatchCells calls vanished whenever a cell that was fresh is no longer (its presence expired
// or was withdrawn), so that convergence runs at once rather than at its next tick (BBS
// converges immediately when a cell disappears). It polls every interval until ctx ends.
func WatchCells(ctx context.Context, cells CellLister, interval time.Duration, log *zap.Logger, vanished func(ctx context.Context, ids []string)) {
	var known map[string]bool
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if list, err := cells.Cells(ctx); err != nil {
			if ctx.Err() == nil {
				log.Warn("watching cells", zap.Error(err))
			}
		} else {
			now := make(map[string]bool, len(list))
			for _, c := range list {
				now[c.CellID] = true
			}
			var gone []string
			for id := range known {
				if !now[id] {
					gone = append(gone, id)
				}
			}
			if len(gone) > 0 {
				vanished(ctx, gone)
			}
			known = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
