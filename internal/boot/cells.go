package boot

import (
	"context"
	"fmt"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// WaitForCells waits until every cell in ids has announced itself: the stacks print where
// everything listens only once their cells can take work. exited, when not nil, says
// whether a cell has already given up (its error ends the wait).
func WaitForCells(ctx context.Context, store *db.Store, ids []string, within time.Duration, exited func() error) error {
	deadline := time.Now().Add(within)
	for {
		if up, err := store.Cells(ctx); err == nil && allSeen(up, ids) {
			return nil
		}
		if exited != nil {
			if err := exited(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cells did not announce themselves within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allSeen says whether every cell of ids is among up.
func allSeen(up []model.CellPresence, ids []string) bool {
	seen := map[string]bool{}
	for _, u := range up {
		seen[u.CellID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			return false
		}
	}
	return true
}
