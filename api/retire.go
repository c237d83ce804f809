package api

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// RetireStore is what retiring an instance needs of the database.
type RetireStore interface {
	RetireActualLRP(ctx context.Context, key model.ActualLRPKey) (*model.ActualLRP, error)
}

// Retirer retires instances by the rules of POST /v1/actual_lrps/retire, for every listener
// that serves the route (this API, and the BBS protocol's): the store picks the instance (of
// key's definition, else the active one's, seed 000) and deletes it when UNCLAIMED or
// CRASHED; a CLAIMED or RUNNING one is handed to its cell to stop. Convergence replaces it
// if the LRP still wants the index.
type Retirer struct {
	store   RetireStore
	stopper *instanceStopper
}

// NewRetirer builds a Retirer. stopper may be nil while no cell can run instances; an
// instance that needs a stop is then logged and left to convergence.
func NewRetirer(store RetireStore, stopper Stopper, log *zap.Logger) *Retirer {
	return &Retirer{store: store, stopper: &instanceStopper{stopper: stopper, log: log}}
}

// Retire retires the instance at key. A failed stop does not fail it: the instance is marked
// retiring, and convergence sends the stop again.
func (r *Retirer) Retire(ctx context.Context, key model.ActualLRPKey) error {
	toStop, err := r.store.RetireActualLRP(ctx, key)
	if err != nil {
		return err
	}
	if toStop != nil {
		r.stopper.stop(ctx, []model.ActualLRP{*toStop})
	}
	return nil
}
