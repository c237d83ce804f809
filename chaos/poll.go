package chaos

import (
	"context"
	"fmt"
	"time"
)

// until calls check every `every` until it finds nothing missing (why ""), fails, or within
// has passed; the error then says what it last found missing.
func until(ctx context.Context, within, every time.Duration, check func(ctx context.Context) (why string, err error)) error {
	deadline := time.Now().Add(within)
	for {
		why, err := check(ctx)
		if err != nil || why == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s", within, why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), why)
		case <-time.After(every):
		}
	}
}
