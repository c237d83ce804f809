package lrps_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
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

// RecordRolloutControl decides and records a pause or resume on the fake's rollout, as the
// store does on the locked row.
func (f *fakeStore) WithdrawWeight(context.Context, string) (bool, error) { return false, nil }

func (f *fakeStore) RecordRolloutControl(_ context.Context, guid, kind string, allow func(*model.Rollout) error) (*model.Rollout, error) {
	if f.rollout == nil || !f.rollout.InProgress() {
		return nil, model.Errorf(model.ErrNoRolloutInProgress, "LRP %q has no rollout in progress", guid)
	}
	r := *f.rollout
	if allow != nil {
		if err := allow(&r); err != nil {
			return nil, err
		}
	}
	f.rollout.LastControl = kind
	r.LastControl = kind
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

// Pause and resume (ROLLOUTS-NEXT.md section 3): a resume applies to a paused rollout, a
// revert held by its own failure, and as a repeat after a pause or resume the API accepted;
// on a rollout never paused it is InvalidPhase, naming the phase. A pause applies while the
// rollout walks (repeated on a paused one too), never while it reverts.
func TestPauseAndResume(t *testing.T) {
	revertFailure := &model.RolloutFailure{Reason: model.FailureCrashLoop, Kind: model.FailureApp}
	step := int32(0)
	for _, c := range []struct {
		name          string
		rollout       *model.Rollout
		pause, resume model.ErrorType // "": answered, the control sent
	}{
		{"no rollout", nil, model.ErrNoRolloutInProgress, model.ErrNoRolloutInProgress},
		{"completed", &model.Rollout{State: model.RolloutCompleted, Phase: model.PhaseCompleted}, model.ErrNoRolloutInProgress, model.ErrNoRolloutInProgress},
		{"reverted", &model.Rollout{State: model.RolloutReverted, Phase: model.PhaseReverted}, model.ErrNoRolloutInProgress, model.ErrNoRolloutInProgress},
		{"walking, never paused", &model.Rollout{State: model.RolloutActive, Phase: model.PhaseWalking}, "", model.ErrInvalidPhase},
		{"at a canary step, never paused", &model.Rollout{State: model.RolloutActive, Phase: model.PhaseAwaitingPromotion, Step: &step}, "", model.ErrInvalidPhase},
		{"paused by an operator", &model.Rollout{State: model.RolloutPaused, Phase: model.PhasePaused, LastControl: model.ControlPause}, "", ""},
		{"paused by its failure policy", &model.Rollout{State: model.RolloutPaused, Phase: model.PhasePaused}, "", ""},
		{"walking after a resume", &model.Rollout{State: model.RolloutActive, Phase: model.PhaseWalking, LastControl: model.ControlResume}, "", ""},
		{"walking, its pause not recorded yet", &model.Rollout{State: model.RolloutActive, Phase: model.PhaseWalking, LastControl: model.ControlPause}, "", ""},
		{"reverting", &model.Rollout{State: model.RolloutCanceling, Phase: model.PhaseReverting}, model.ErrInvalidPhase, model.ErrInvalidPhase},
		{"reverting, held by its revert failure", &model.Rollout{State: model.RolloutCanceling, Phase: model.PhaseReverting, RevertFailure: revertFailure},
			model.ErrInvalidPhase, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, kind := range []string{model.ControlPause, model.ControlResume} {
				want := map[string]model.ErrorType{model.ControlPause: c.pause, model.ControlResume: c.resume}[kind]
				store, wf := &fakeStore{}, &fakeWorkflows{}
				if c.rollout != nil {
					r := *c.rollout
					r.ProcessGUID = "web"
					store.rollout = &r
				}
				s := lrps.NewService(store, nil, wf, zap.NewNop())
				call := map[string]func(context.Context, string) (*model.Rollout, error){model.ControlPause: s.Pause, model.ControlResume: s.Resume}[kind]
				r, err := call(t.Context(), "web")
				if want != "" {
					if !model.IsType(err, want) || r != nil || len(wf.calls) != 0 {
						t.Fatalf("%s: %v (rollout %+v, calls %v), want %s and nothing sent", kind, err, r, wf.calls, want)
					}
					if want == model.ErrInvalidPhase && !strings.Contains(err.Error(), "in phase "+c.rollout.Phase) {
						t.Fatalf("%s: %q does not name the phase %s", kind, err, c.rollout.Phase)
					}
					if store.rollout != nil && store.rollout.LastControl != c.rollout.LastControl {
						t.Fatalf("%s refused but recorded %q", kind, store.rollout.LastControl)
					}
					return
				}
				if err != nil || r.LastControl != kind || !reflect.DeepEqual(wf.calls, []string{kind}) {
					t.Fatalf("%s: %v (rollout %+v, calls %v)", kind, err, r, wf.calls)
				}
				// Repeated, it answers the same and sends the control again (the workflow
				// changes nothing).
				if _, err := call(t.Context(), "web"); err != nil || !reflect.DeepEqual(wf.calls, []string{kind, kind}) {
					t.Fatalf("%s repeated: %v (calls %v)", kind, err, wf.calls)
				}
			}
		})
	}
	if _, err := lrps.NewService(&fakeStore{}, nil, &fakeWorkflows{}, zap.NewNop()).Resume(t.Context(), "other"); !model.IsType(err, model.ErrResourceNotFound) {
		t.Fatalf("resume of a missing LRP: %v", err)
	}
	if _, err := lrps.NewService(&fakeStore{}, nil, nil, zap.NewNop()).Pause(t.Context(), "web"); !model.IsType(err, model.ErrUnavailable) {
		t.Fatalf("pause without rollouts: %v", err)
	}
}

// A resume after a pause (the walk paused) and a resume repeated after it (the walk going on)
// both answer; a pause after that resume is a pause again, and the resume after it too.
func TestResumeRepeatedAfterAResumeThatTookEffect(t *testing.T) {
	store, wf := &fakeStore{rollout: &model.Rollout{ProcessGUID: "web", State: model.RolloutActive, Phase: model.PhaseWalking}}, &fakeWorkflows{}
	s := lrps.NewService(store, nil, wf, zap.NewNop())
	expect := func(what string, err error, typ model.ErrorType) {
		t.Helper()
		if (typ == "" && err != nil) || (typ != "" && !model.IsType(err, typ)) {
			t.Fatalf("%s: %v, want %q", what, err, typ)
		}
	}
	_, err := s.Resume(t.Context(), "web")
	expect("resume, never paused", err, model.ErrInvalidPhase)
	_, err = s.Pause(t.Context(), "web")
	expect("pause", err, "")
	store.rollout.State, store.rollout.Phase = model.RolloutPaused, model.PhasePaused // the workflow records it
	_, err = s.Resume(t.Context(), "web")
	expect("resume", err, "")
	store.rollout.State, store.rollout.Phase = model.RolloutActive, model.PhaseWalking
	_, err = s.Resume(t.Context(), "web")
	expect("resume repeated", err, "")
	_, err = s.Pause(t.Context(), "web")
	expect("pause again", err, "")
	if store.rollout.LastControl != model.ControlPause {
		t.Fatalf("last control %q after the second pause", store.rollout.LastControl)
	}
	want := []string{model.ControlPause, model.ControlResume, model.ControlResume, model.ControlPause}
	if !reflect.DeepEqual(wf.calls, want) {
		t.Fatalf("calls %v, want %v", wf.calls, want)
	}
}
