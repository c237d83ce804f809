package model_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// TestWrapErrorShowsTheCauseToLogsOnly: the cause is in Error() and errors.Is, never in the
// JSON a client receives.
func TestWrapErrorShowsTheCauseToLogsOnly(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.5:5432: connection refused")
	err := model.WrapError(model.ErrUnavailable, "database unavailable", cause)
	if got, want := err.Error(), "Unavailable: database unavailable: dial tcp 10.0.0.5:5432: connection refused"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) || !model.IsType(err, model.ErrUnavailable) {
		t.Errorf("%v: cause or type lost", err)
	}
	b, _ := json.Marshal(err)
	if got, want := string(b), `{"type":"Unavailable","message":"database unavailable"}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
	if plain := model.Errorf(model.ErrUnavailable, "database unavailable"); plain.Error() != "Unavailable: database unavailable" || plain.Unwrap() != nil {
		t.Errorf("an error without a cause: %q", plain.Error())
	}
}
