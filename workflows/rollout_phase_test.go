package workflows

import (
	"errors"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func TestRolloutPhases(t *testing.T) {
	for _, tc := range []struct {
		p          phase
		back, held bool
		state      string
	}{
		{phaseWalking, false, false, model.RolloutActive},
		{phasePaused, false, true, model.RolloutPaused},
		{phaseCanceling, true, false, model.RolloutCanceling},
		{phaseCancelingPaused, true, true, model.RolloutCanceling},
	} {
		if tc.p.back() != tc.back || tc.p.held() != tc.held || tc.p.state() != tc.state || phaseOf(tc.back, tc.held) != tc.p {
			t.Errorf("phase %d: back %v, held %v, state %q, phaseOf %d", tc.p, tc.p.back(), tc.p.held(), tc.p.state(), phaseOf(tc.back, tc.held))
		}
	}
}

// The cause a walk reports after several things ended it at once.
func TestRolloutStopCausePrecedence(t *testing.T) {
	gone1, gone2, fail1, fail2 := errors.New("gone 1"), errors.New("gone 2"), errors.New("fail 1"), errors.New("fail 2")
	type stop struct {
		c   stopCause
		err error
	}
	for _, tc := range []struct {
		name    string
		stops   []stop
		want    stopCause
		wantErr error
	}{
		{"a failure outranks a not-found", []stop{{stopNotFound, gone1}, {stopFailed, fail1}}, stopFailed, fail1},
		{"a not-found does not replace a failure", []stop{{stopFailed, fail1}, {stopNotFound, gone1}}, stopFailed, fail1},
		{"the first failure is reported", []stop{{stopFailed, fail1}, {stopFailed, fail2}}, stopFailed, fail1},
		{"the first not-found is reported", []stop{{stopNotFound, gone1}, {stopNotFound, gone2}}, stopNotFound, gone1},
		{"an error outranks a signal", []stop{{stopNotFound, gone1}, {stopCanceled, nil}, {stopSuperseded, nil}}, stopNotFound, gone1},
		{"a signal does not hide a later error", []stop{{stopCanceled, nil}, {stopFailed, fail1}}, stopFailed, fail1},
		{"a supersede replaces a cancel", []stop{{stopCanceled, nil}, {stopSuperseded, nil}}, stopSuperseded, nil},
		{"a cancel replaces a supersede", []stop{{stopSuperseded, nil}, {stopCanceled, nil}}, stopCanceled, nil},
		{"a rollback leaves a cancel to record", []stop{{stopCanceled, nil}, {stopRollback, nil}}, stopCanceled, nil},
		{"a cancel after a rollback is recorded", []stop{{stopRollback, nil}, {stopCanceled, nil}}, stopCanceled, nil},
		{"a rollback alone", []stop{{stopRollback, nil}}, stopRollback, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &rollout{}
			for _, s := range tc.stops {
				r.stopWith(s.c, s.err)
			}
			if r.stop != tc.want || r.stopErr != tc.wantErr {
				t.Fatalf("stop %d (%v), want %d (%v)", r.stop, r.stopErr, tc.want, tc.wantErr)
			}
		})
	}
}
