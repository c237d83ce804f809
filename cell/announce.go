package cell

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// announce sends the cell's first heartbeat, again and again (with back-off, up to 5 s
// apart) until the BBS takes it or ctx ends. A cell restarted while the BBS cannot answer
// (its database restarting, say) waits for it rather than exiting: its instances run on
// meanwhile, and a cell that exited at once would only be restarted by its supervisor
// until that gave up on it (found by the chaos matrix: a cell and PostgreSQL killed at once).
func (a *Agent) announce(ctx context.Context) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := a.heartbeat(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		a.log.Warn("announcing the cell; trying again", zap.Duration("in", wait), zap.Error(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
