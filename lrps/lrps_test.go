package lrps_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// fakeStore answers as the store would for an LRP "web" with one instance to stop, and
// records the requests it gets.
type fakeStore struct {
	rollout  *model.Rollout
	requests []db.RolloutRequest
	updates  []*model.DesiredLRPUpdate
}

var web = &model.DesiredLRP{ProcessGUID: "web", Domain: "cf-apps"}
var running = []model.ActualLRP{{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "web", Index: 3}}}

func (f *fakeStore) DesiredLRPByProcessGUID(_ context.Context, guid string) (*model.DesiredLRP, error) {
	if guid != "web" {
		return nil, model.Errorf(model.ErrResourceNotFound, "no %s", guid)
	}
	return web, nil
}
func (f *fakeStore) UpdateDesiredLRP(_ context.Context, _ string, u *model.DesiredLRPUpdate) (*db.UpdateResult, error) {
	f.updates = append(f.updates, u)
	return &db.UpdateResult{Before: web, After: web, ToStop: running}, nil
}
func (f *fakeStore) RemoveDesiredLRP(context.Context, string) (*db.RemoveResult, error) {
	return &db.RemoveResult{Removed: web, ToStop: running}, nil
}
func (f *fakeStore) RolloutByProcessGUID(context.Context, string) (*model.Rollout, error) {
	if f.rollout == nil {
		return nil, model.Errorf(model.ErrResourceNotFound, "none")
	}
	return f.rollout, nil
}
func (f *fakeStore) StartRollout(_ context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	f.requests = append(f.requests, req)
	st := &db.RolloutStart{Rollout: &model.Rollout{ProcessGUID: "web"}, Desired: web, ToStop: running}
	if req.Supersede {
		st.Superseded = &model.Rollout{ProcessGUID: "web"}
	}
	return st, nil
}

func (f *fakeStore) RetireActualLRP(_ context.Context, key model.ActualLRPKey) (*model.ActualLRP, error) {
	switch key.Index {
	case 3:
		return &running[0], nil // CLAIMED or RUNNING: its cell stops it
	case 0:
		return nil, nil // UNCLAIMED or CRASHED: deleted at once
	}
	return nil, model.Errorf(model.ErrResourceNotFound, "no instance at %d", key.Index)
}

func (f *fakeStore) SetRolloutPace(_ context.Context, _ string, n int32) (*model.Rollout, error) {
	r := *f.rollout
	r.Strategy = &model.RolloutStrategy{MaxInFlight: &n}
	return &r, nil
}

type fakeStopper struct{ stopped []model.ActualLRP }

func (s *fakeStopper) StopInstances(_ context.Context, lrps []model.ActualLRP) error {
	s.stopped = append(s.stopped, lrps...)
	return errors.New("cells away") // a failed stop does not fail the change
}

type fakeWorkflows struct{ calls []string }

func (w *fakeWorkflows) StartRollout(context.Context, *model.Rollout, string) error {
	w.calls = append(w.calls, "start")
	return errors.New("temporal away") // the converger starts it later
}
func (w *fakeWorkflows) SupersedeRollout(context.Context, *model.Rollout, string) error {
	w.calls = append(w.calls, "supersede")
	return nil
}
func (w *fakeWorkflows) CancelRollout(context.Context, *model.Rollout, string) error {
	w.calls = append(w.calls, "cancel")
	return nil
}
func (w *fakeWorkflows) Control(_ context.Context, _ *model.Rollout, c model.RolloutControl) error {
	w.calls = append(w.calls, c.Kind)
	return nil
}
func (w *fakeWorkflows) Defaults() *model.RolloutStrategy {
	s := model.DefaultRolloutStrategy()
	return &s
}

func TestUpdateStartsARolloutForADefinitionAndStopsWhatItRetires(t *testing.T) {
	store, stopper, wf := &fakeStore{}, &fakeStopper{}, &fakeWorkflows{}

	// Without Temporal, a definition change is Unavailable; other changes are not.
	noTemporal := lrps.NewService(store, stopper, nil, zap.NewNop())
	def := &model.LRPDefinition{DefinitionID: "v2"}
	if _, err := noTemporal.Update(t.Context(), "web", &model.DesiredLRPUpdate{Definition: def}, false); !model.IsType(err, model.ErrUnavailable) {
		t.Fatalf("definition without rollouts: %v", err)
	}
	n := int32(2)
	if _, err := noTemporal.Update(t.Context(), "web", &model.DesiredLRPUpdate{Instances: &n}, false); err != nil {
		t.Fatal(err)
	}
	s := lrps.NewService(store, stopper, wf, zap.NewNop())
	if _, err := s.Update(t.Context(), "web", &model.DesiredLRPUpdate{Definition: def, Instances: &n}, false); err != nil {
		t.Fatalf("a workflow that did not start fails nothing: %v", err)
	}
	if _, err := s.Update(t.Context(), "web", &model.DesiredLRPUpdate{Definition: def}, true); err != nil {
		t.Fatal(err)
	}
	if len(store.requests) != 2 || store.requests[0].Update == nil || *store.requests[0].Update.Instances != 2 ||
		store.requests[0].Update.Definition != nil || store.requests[1].Update != nil || !store.requests[1].Supersede {
		t.Fatalf("rollout requests = %+v", store.requests)
	}
	if !reflect.DeepEqual(wf.calls, []string{"start", "supersede"}) || len(stopper.stopped) != 3 {
		t.Fatalf("workflow calls %v, stopped %d", wf.calls, len(stopper.stopped))
	}
}

func TestCancelUpdate(t *testing.T) {
	store, wf := &fakeStore{}, &fakeWorkflows{}
	noTemporal := lrps.NewService(store, nil, nil, zap.NewNop())
	if _, err := noTemporal.CancelUpdate(t.Context(), "other"); !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("cancel of a missing LRP: %v", err)
	}
	if _, err := noTemporal.CancelUpdate(t.Context(), "web"); !model.IsType(err, model.ErrUnavailable) {
		t.Fatalf("cancel without rollouts: %v", err)
	}
	s := lrps.NewService(store, nil, wf, zap.NewNop())
	for _, r := range []*model.Rollout{nil, {ProcessGUID: "web", State: model.RolloutCompleted}} {
		store.rollout = r
		if _, err := s.CancelUpdate(t.Context(), "web"); !model.IsType(err, model.ErrNoUpdateInProgress) {
			t.Fatalf("cancel with rollout %+v: %v", r, err)
		}
	}
	store.rollout = &model.Rollout{ProcessGUID: "web", State: model.RolloutActive}
	if _, err := s.CancelUpdate(t.Context(), "web"); err != nil || !reflect.DeepEqual(wf.calls, []string{"cancel"}) {
		t.Fatalf("cancel: %v, calls %v", err, wf.calls)
	}
	// Without cells, what a removal retires is left to convergence (and logged).
	if err := s.Remove(t.Context(), "web"); err != nil {
		t.Fatal(err)
	}
}

func TestRetireStopsWhatACellRuns(t *testing.T) {
	stopper := &fakeStopper{}
	s := lrps.NewService(&fakeStore{}, stopper, nil, zap.NewNop())
	for _, i := range []int32{0, 3} {
		if err := s.Retire(t.Context(), model.ActualLRPKey{ProcessGUID: "web", Index: i}); err != nil {
			t.Fatalf("retire %d (a failed stop fails nothing): %v", i, err)
		}
	}
	if !reflect.DeepEqual(stopper.stopped, running) {
		t.Fatalf("stopped %+v, want the running instance alone", stopper.stopped)
	}
	if err := s.Retire(t.Context(), model.ActualLRPKey{ProcessGUID: "web", Index: 7}); !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("retire of a missing instance: %v", err)
	}
}
