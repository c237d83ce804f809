package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// attemptTimeout bounds one call to the API, so that a request stuck on a dying replica is
// sent again rather than waited out.
const attemptTimeout = 10 * time.Second

// retry calls fn until it succeeds, fails with an answer not worth repeating, or ctx ends,
// as a client of a load-balanced BBS does. Worth repeating: no answer (a replica killed
// under the request, a front without a live backend) and Unavailable (the database or
// Temporal down, a replica still starting).
func retry(ctx context.Context, fn func(ctx context.Context) error) error {
	_, err := retried(ctx, fn)
	return err
}

// retried is retry that also says whether fn was called more than once: a write sent again
// after its answer was lost may find its own effect ("exists", "in progress").
func retried(ctx context.Context, fn func(ctx context.Context) error) (again bool, err error) {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		err = fn(attempt)
		cancel()
		if err == nil || !transient(err) {
			return again, err
		}
		select {
		case <-ctx.Done():
			return again, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		again = true
	}
}

// transient reports an error worth sending the request again for: anything but an answer
// of the API other than Unavailable.
func transient(err error) bool {
	var me *model.Error
	if errors.As(err, &me) {
		return me.Type == model.ErrUnavailable
	}
	return true
}

// write is retry for a request that changes something: when the request had to be sent
// again, an error of one of the types done says that an earlier attempt took effect.
func write(ctx context.Context, fn func(ctx context.Context) error, done ...model.ErrorType) error {
	again, err := retried(ctx, fn)
	if err != nil && again && slices.Contains(done, model.TypeOf(err)) {
		return nil
	}
	return err
}
