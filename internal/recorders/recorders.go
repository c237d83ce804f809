// Package recorders stands in, in tests of the two APIs (api, protocol), for the parts they
// call besides the store: the cells that stop instances and the Temporal side that starts and
// signals rollouts. Each records what it was asked, for the test to check.
package recorders

import (
	"context"
	"slices"
	"sync"

	"github.com/updatable-lrps/bbs/model"
)

// Stopper records every batch of instances it is asked to stop, and answers Err.
type Stopper struct {
	// Err is what StopInstances returns (nil: success); set it before the calls.
	Err error

	mu    sync.Mutex
	calls [][]model.ActualLRP
}

// StopInstances records lrps.
func (s *Stopper) StopInstances(_ context.Context, lrps []model.ActualLRP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, slices.Clone(lrps))
	return s.Err
}

// Calls returns each batch it was asked to stop, in order.
func (s *Stopper) Calls() [][]model.ActualLRP {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Stopped returns every instance it was asked to stop, in order.
func (s *Stopper) Stopped() []model.ActualLRP {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []model.ActualLRP
	for _, c := range s.calls {
		all = append(all, c...)
	}
	return all
}

// Rollouts records the workflow calls made for rollouts, as
// "start|supersede|cancel:<process_guid>:<to_definition_id>".
type Rollouts struct {
	mu    sync.Mutex
	calls []string
}

func (r *Rollouts) record(kind string, ro *model.Rollout) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, kind+":"+ro.ProcessGUID+":"+ro.ToDefinitionID)
	return nil
}

// StartRollout records a start.
func (r *Rollouts) StartRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("start", ro)
}

// SupersedeRollout records a supersede.
func (r *Rollouts) SupersedeRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("supersede", ro)
}

// CancelRollout records a cancel.
func (r *Rollouts) CancelRollout(_ context.Context, ro *model.Rollout, _ string) error {
	return r.record("cancel", ro)
}

// Control records a control: kind:guid:to, then the control's kind.
func (r *Rollouts) Control(_ context.Context, ro *model.Rollout, c model.RolloutControl) error {
	return r.record("control-"+c.Kind, ro)
}

// Defaults is the contract's default strategy, as a server without flags resolves it.
func (r *Rollouts) Defaults() *model.RolloutStrategy {
	s := model.DefaultRolloutStrategy()
	return &s
}

// Calls returns the calls so far, in order.
func (r *Rollouts) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Groups records the workflow calls made for rollout groups, as "start|wake:<group_id>".
type Groups struct {
	mu    sync.Mutex
	calls []string
}

// StartGroup records a start.
func (g *Groups) StartGroup(_ context.Context, id string) error { return g.record("start:" + id) }

// WakeGroup records a wake.
func (g *Groups) WakeGroup(_ context.Context, id string) error { return g.record("wake:" + id) }

func (g *Groups) record(call string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, call)
	return nil
}

// Calls are the calls recorded so far.
func (g *Groups) Calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}
