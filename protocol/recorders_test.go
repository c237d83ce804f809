package protocol_test

import (
	"context"
	"slices"
	"sync"

	"github.com/updatable-lrps/bbs/model"
)

// recordingStopper stands in for the cells: it records the instances the server asks them
// to stop.
type recordingStopper struct {
	mu      sync.Mutex
	stopped []model.ActualLRP
}

func (s *recordingStopper) StopInstances(_ context.Context, lrps []model.ActualLRP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, slices.Clone(lrps)...)
	return nil
}

func (s *recordingStopper) all() []model.ActualLRP {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stopped)
}

// recordingRollouts stands in for Temporal: it records the workflow calls the server makes,
// as "start|supersede|cancel:<process_guid>:<to_definition_id>".
type recordingRollouts struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingRollouts) record(kind string, ro *model.Rollout) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, kind+":"+ro.ProcessGUID+":"+ro.ToDefinitionID)
	return nil
}

func (r *recordingRollouts) StartRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("start", ro)
}

func (r *recordingRollouts) SupersedeRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("supersede", ro)
}

func (r *recordingRollouts) CancelRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("cancel", ro)
}

func (r *recordingRollouts) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
