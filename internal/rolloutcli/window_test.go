package rolloutcli_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/rolloutcli"
	"github.com/updatable-lrps/bbs/model"
)

type fakeWindows struct {
	windows map[string]model.RolloutWindow
}

func (f *fakeWindows) UpsertRolloutWindow(_ context.Context, w model.RolloutWindow) (*model.RolloutWindow, bool, error) {
	if err := w.Validate(); err != nil { // as the API does
		return nil, false, err
	}
	_, existed := f.windows[w.Name]
	f.windows[w.Name] = w
	return &w, !existed, nil
}
func (f *fakeWindows) RolloutWindow(_ context.Context, name string) (*model.RolloutWindow, error) {
	w, ok := f.windows[name]
	if !ok {
		return nil, model.Errorf(model.ErrResourceNotFound, "rollout window %q not found", name)
	}
	return &w, nil
}
func (f *fakeWindows) RolloutWindows(context.Context) ([]model.RolloutWindow, error) {
	var out []model.RolloutWindow
	for _, w := range f.windows {
		out = append(out, w)
	}
	return out, nil
}
func (f *fakeWindows) DeleteRolloutWindow(_ context.Context, name string) error {
	delete(f.windows, name)
	return nil
}

func runWindow(f *fakeWindows, verb string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	// Monday 30 November 2026, 10:00 in Berlin.
	code := rolloutcli.RunWindow(context.Background(), f, verb, args, "", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRolloutWindowCommand(t *testing.T) {
	f := &fakeWindows{windows: map[string]model.RolloutWindow{}}
	code, out, errOut := runWindow(f, "upsert", "office", "mon,tue 09:00-17:00 Europe/Berlin", "sat 22:00-02:00 UTC")
	if code != rolloutcli.ExitOK || !strings.Contains(out, "created rollout window office") || !strings.Contains(out, "office: open now, until 2026-11-30T16:00:00Z") {
		t.Fatalf("upsert: %d %q %q", code, out, errOut)
	}
	if s := f.windows["office"].Schedule; len(s) != 2 || !slices.Equal(s[0].Days, []string{"mon", "tue"}) || s[1].End != "02:00" {
		t.Fatalf("schedule sent: %+v", s)
	}
	if code, _, errOut := runWindow(f, "upsert", "office", "mon 09:00 UTC"); code != rolloutcli.ExitUsage || !strings.Contains(errOut, "<start>-<end>") {
		t.Fatalf("a malformed span: %d %q", code, errOut)
	}
	if code, _, errOut := runWindow(f, "upsert", "office", "funday 09:00-10:00 UTC"); code != rolloutcli.ExitError || !strings.Contains(errOut, "unknown day") {
		t.Fatalf("a span the API refuses: %d %q", code, errOut)
	}
	if code, out, _ := runWindow(f, "list"); code != rolloutcli.ExitOK || !strings.Contains(out, "sat 22:00-02:00 UTC") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _, _ := runWindow(f, "delete", "office"); code != rolloutcli.ExitOK || len(f.windows) != 0 {
		t.Fatalf("delete: %d, %v left", code, f.windows)
	}
	if code, _, errOut := runWindow(f, "get", "office"); code != rolloutcli.ExitError || !strings.Contains(errOut, "not found") {
		t.Fatalf("get after delete: %d %q", code, errOut)
	}
}
