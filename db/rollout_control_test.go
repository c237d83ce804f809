package db_test

import (
	"errors"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// A pause or resume is decided on the locked row of the rollout in progress and recorded as
// its last control; a refusal, or a repeat of the last control, writes nothing, and no
// control appends an event (the state it changes is the workflow's to record).
func TestRecordRolloutControl(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	_, err := s.RecordRolloutControl(ctx, "app", model.ControlPause, nil)
	wantType(t, err, model.ErrNoRolloutInProgress)
	_, err = s.RecordRolloutControl(ctx, "app", model.ControlAbort, nil)
	wantType(t, err, model.ErrInvalidRequest)

	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rollout.LastControl != "" {
		t.Fatalf("a new rollout's last control = %q", st.Rollout.LastControl)
	}
	events := func() int { return count(t, s, `SELECT count(*) FROM events`) }
	version := func() string {
		var v string
		if err := s.DB().GetContext(ctx, &v, `SELECT xmin::text FROM rollouts WHERE id = $1`, st.Rollout.ID); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before, v0 := events(), version()

	refusal := model.Errorf(model.ErrInvalidPhase, "not now")
	_, err = s.RecordRolloutControl(ctx, "app", model.ControlResume, func(r *model.Rollout) error {
		if r.ID != st.Rollout.ID || r.State != model.RolloutActive || r.LastControl != "" {
			t.Errorf("allow saw %+v", r)
		}
		return refusal
	})
	if !errors.Is(err, refusal) {
		t.Fatalf("refused: %v", err)
	}
	if version() != v0 {
		t.Fatal("a refused control wrote the row")
	}

	r, err := s.RecordRolloutControl(ctx, "app", model.ControlPause, nil)
	if err != nil || r.LastControl != model.ControlPause || r.ID != st.Rollout.ID || r.State != model.RolloutActive {
		t.Fatalf("pause: %+v, %v", r, err)
	}
	var seen string
	r, err = s.RecordRolloutControl(ctx, "app", model.ControlResume, func(r *model.Rollout) error {
		seen = r.LastControl
		return nil
	})
	if err != nil || r.LastControl != model.ControlResume || seen != model.ControlPause {
		t.Fatalf("resume: %+v, %v (allow saw %q)", r, err, seen)
	}
	if got, err := s.RolloutByProcessGUID(ctx, "app"); err != nil || got.LastControl != model.ControlResume {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	v1 := version()
	if r, err := s.RecordRolloutControl(ctx, "app", model.ControlResume, nil); err != nil || r.LastControl != model.ControlResume {
		t.Fatalf("resume repeated: %+v, %v", r, err)
	}
	if version() != v1 {
		t.Fatal("a repeated control wrote the row")
	}
	if events() != before {
		t.Fatalf("controls appended %d events", events()-before)
	}
	exec(t, s, `UPDATE rollouts SET state = 'paused'`) // as the workflow records it
	if r, err := s.RecordRolloutControl(ctx, "app", model.ControlPause, nil); err != nil || r.LastControl != model.ControlPause || r.State != model.RolloutPaused {
		t.Fatalf("pause while paused: %+v, %v", r, err)
	}

	// A new rollout (a supersede) starts with none; the superseded one is no longer controlled.
	st2, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v3"), Supersede: true})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Rollout.LastControl != "" || st2.Superseded == nil || st2.Superseded.LastControl != model.ControlPause {
		t.Fatalf("after the supersede: new %q, superseded %+v", st2.Rollout.LastControl, st2.Superseded)
	}
	var saw string
	if _, err := s.RecordRolloutControl(ctx, "app", model.ControlResume, func(r *model.Rollout) error {
		saw = r.ID
		return nil
	}); err != nil || saw != st2.Rollout.ID {
		t.Fatalf("resume after the supersede went to %s, want %s: %v", saw, st2.Rollout.ID, err)
	}
	exec(t, s, `UPDATE rollouts SET state = 'completed', finished_at = now() WHERE id = $1`, st2.Rollout.ID)
	_, err = s.RecordRolloutControl(ctx, "app", model.ControlResume, nil)
	wantType(t, err, model.ErrNoRolloutInProgress)

	if _, err := s.DB().ExecContext(ctx, `UPDATE rollouts SET last_control = 'abort'`); err == nil {
		t.Fatal("the schema took a last control that is neither pause nor resume")
	}
}

// Two controls at once are decided one after the other: the second waits for the first's
// transaction and decides on what it wrote.
func TestRecordRolloutControlLocksTheRow(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	if _, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")}); err != nil {
		t.Fatal(err)
	}
	inFirst, firstDone := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := s.RecordRolloutControl(ctx, "app", model.ControlPause, func(*model.Rollout) error {
			close(inFirst)
			time.Sleep(300 * time.Millisecond)
			return nil
		})
		firstDone <- err
	}()
	<-inFirst
	var seen string
	if _, err := s.RecordRolloutControl(ctx, "app", model.ControlResume, func(r *model.Rollout) error {
		seen = r.LastControl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if seen != model.ControlPause {
		t.Fatalf("the second control decided on last control %q, want the first's pause", seen)
	}
}
