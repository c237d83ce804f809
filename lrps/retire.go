package lrps

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// Retire retires the instance at key by the rules of POST /v1/actual_lrps/retire, which both
// APIs serve: the store picks the instance (of key's definition, else the active one's, seed
// 000) and deletes it when UNCLAIMED or CRASHED; a CLAIMED or RUNNING one is handed to its
// cell to stop. Convergence replaces it if the LRP still wants the index. A failed stop does
// not fail the retirement: the instance is marked retiring, and convergence sends the stop
// again.
func (s *Service) Retire(ctx context.Context, key model.ActualLRPKey) error {
	toStop, err := s.store.RetireActualLRP(ctx, key)
	if err != nil {
		return err
	}
	if toStop != nil {
		s.Stop(ctx, []model.ActualLRP{*toStop})
	}
	return nil
}
