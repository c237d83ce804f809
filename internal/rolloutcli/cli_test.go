package rolloutcli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/rolloutcli"
	"github.com/updatable-lrps/bbs/model"
)

// fakeAPI answers the rollout from a script: each read takes the next state (the last one
// stays), and a read may fail first.
type fakeAPI struct {
	states   []string
	fails    []error
	reads    int
	paced    int32
	aborted  string
	instance []model.ActualLRP
	traffic  map[string]int32
	analysis []model.AnalysisVerdict
	freeze   model.RolloutFreeze
}

func (f *fakeAPI) Rollout(context.Context, string) (*model.Rollout, error) {
	if f.reads < len(f.fails) && f.fails[f.reads] != nil {
		f.reads++
		return nil, f.fails[f.reads-1]
	}
	st := f.states[min(f.reads, len(f.states)-1)]
	f.reads++
	r := &model.Rollout{ID: "r1", ProcessGUID: "web", Kind: "update", FromDefinitionID: "v1", ToDefinitionID: "v2",
		State: st, Phase: model.RolloutPhaseOf(st), Instances: 2, UpdatedInstances: int32(min(f.reads, 2)), StartedAt: 1}
	if !r.InProgress() {
		r.FinishedAt = 2
	}
	one := int32(1)
	r.Failure = &model.RolloutFailure{Reason: model.FailureCrashLoop, Kind: model.FailureApp, Index: &one, Detail: "3 crashes; last: exit status 1"}
	r.Traffic, r.TrafficGeneration = f.traffic, 3
	r.Analysis = f.analysis
	return r, nil
}

func (f *fakeAPI) ActualLRPs(context.Context, model.ActualLRPFilter) ([]model.ActualLRP, error) {
	return f.instance, nil
}

func (f *fakeAPI) PauseRollout(context.Context, string) (*model.Rollout, error) {
	return f.Rollout(nil, "")
}
func (f *fakeAPI) ResumeRollout(context.Context, string) (*model.Rollout, error) {
	return f.Rollout(nil, "")
}
func (f *fakeAPI) AbortRollout(_ context.Context, _, reason string) (*model.Rollout, error) {
	f.aborted = reason
	return f.Rollout(nil, "")
}
func (f *fakeAPI) PromoteRollout(context.Context, string, bool) (*model.Rollout, error) {
	return nil, model.Errorf(model.ErrInvalidPhase, "the rollout of \"web\" is in phase walking")
}
func (f *fakeAPI) SetRolloutPace(_ context.Context, _ string, n int32) (*model.Rollout, error) {
	f.paced = n
	return f.Rollout(nil, "")
}

func (f *fakeAPI) RolloutFreeze(context.Context) (model.RolloutFreeze, error) { return f.freeze, nil }
func (f *fakeAPI) FreezeRollouts(_ context.Context, reason string) (model.RolloutFreeze, int, error) {
	f.freeze = model.RolloutFreeze{Frozen: true, Reason: reason, Generation: f.freeze.Generation + 1, ChangedAt: 1}
	return f.freeze, 3, nil
}
func (f *fakeAPI) UnfreezeRollouts(context.Context) (model.RolloutFreeze, int, error) {
	f.freeze = model.RolloutFreeze{Generation: f.freeze.Generation + 1}
	return f.freeze, 3, nil
}

func run(f *fakeAPI, verb string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := rolloutcli.Run(context.Background(), f, rolloutcli.Options{Interval: time.Millisecond}, verb, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestWatchExitsWithHowTheRolloutEnded(t *testing.T) {
	for _, tc := range []struct {
		end  string
		code int
	}{
		{model.RolloutCompleted, rolloutcli.ExitOK},
		{model.RolloutFailed, rolloutcli.ExitFailed},
		{model.RolloutCanceled, rolloutcli.ExitNotCompleted},
		{model.RolloutSuperseded, rolloutcli.ExitNotCompleted},
	} {
		f := &fakeAPI{states: []string{model.RolloutActive, model.RolloutActive, model.RolloutActive, model.RolloutPaused, tc.end}}
		code, out, _ := run(f, "watch", "web")
		if code != tc.code {
			t.Errorf("ended %s: exit %d, want %d", tc.end, code, tc.code)
		}
		// Not a terminal: a view is printed when it changed — 1/2 updated, 2/2 (the third
		// read, the same, is not printed), paused, the end.
		if n := strings.Count(out, "rollout r1 of web"); n != 4 || f.reads != 5 {
			t.Errorf("ended %s: %d views printed of %d read, want 4 of 5:\n%s", tc.end, n, f.reads, out)
		}
	}
}

func TestWatchWaitsForAnAPIThatIsAway(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutCompleted},
		fails: []error{model.Errorf(model.ErrUnavailable, "restarting"), model.Errorf(model.ErrUnavailable, "restarting")}}
	code, _, errOut := run(f, "watch", "web")
	if code != rolloutcli.ExitOK || strings.Count(errOut, "trying again") != 2 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	f = &fakeAPI{states: []string{model.RolloutCompleted}, fails: []error{model.Errorf(model.ErrResourceNotFound, "no rollout of web")}}
	if code, _, errOut := run(f, "watch", "web"); code != rolloutcli.ExitError || !strings.Contains(errOut, "no rollout") {
		t.Fatalf("not found: exit %d, stderr %q", code, errOut)
	}
}

func TestWatchTimesOut(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutActive}}
	var out, errOut bytes.Buffer
	code := rolloutcli.Run(context.Background(), f, rolloutcli.Options{Interval: time.Millisecond, Timeout: 30 * time.Millisecond},
		"watch", []string{"web"}, &out, &errOut)
	if code != rolloutcli.ExitError || !strings.Contains(errOut.String(), "gave up") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

func TestStatusShowsEveryIndex(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutActive}, instance: []model.ActualLRP{
		{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "web", Index: 0, DefinitionID: "v2"}, State: model.StateRunning, Presence: model.PresenceOrdinary},
		{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "web", Index: 1, DefinitionID: "v1"}, State: model.StateRunning, Presence: model.PresenceOrdinary},
		{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "web", Index: 1, DefinitionID: "v2"}, State: model.StateCrashed, CrashCount: 2, Presence: model.PresenceOrdinary},
	}}
	code, out, _ := run(f, "status", "web")
	if code != rolloutcli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"phase   walking (state active)", "1/2 updated", "RUNNING ready", "CRASHED (2 crashes)",
		`failure crash_loop (app) at index 1: 3 crashes; last: exit status 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// A weighted step shows the split the routers acknowledged; analysis its latest verdicts.
func TestStatusShowsTrafficAndVerdicts(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutActive}, traffic: map[string]int32{"v2": 10, "v1": 90},
		analysis: []model.AnalysisVerdict{{Window: "step-0/1", Verdict: model.VerdictFail, Reason: "error rate 5 %",
			Canary: model.AnalysisSide{Requests: 312, ErrorRate: 0.05, P99MS: 4}, Baseline: model.AnalysisSide{Requests: 2811, P99MS: 3}}}}
	_, out, _ := run(f, "status", "web")
	for _, want := range []string{"traffic generation 3", "v1", " 90 %", " 10 %", "step-0/1", "fail", "312 vs 2811, 5.00 % vs 0.00 %", "error rate 5 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

func TestControlVerbsAndUsage(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutPaused}}
	if code, out, _ := run(f, "pause", "web"); code != rolloutcli.ExitOK || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %q", code, out)
	}
	if code, _, _ := run(f, "set-pace", "web", "4"); code != rolloutcli.ExitOK || f.paced != 4 {
		t.Fatalf("set-pace: %d, paced %d", code, f.paced)
	}
	if code, _, _ := run(f, "abort", "web", "p99", "doubled"); code != rolloutcli.ExitOK || f.aborted != "p99 doubled" {
		t.Fatalf("abort: %d, reason %q", code, f.aborted)
	}
	if code, _, errOut := run(f, "promote", "web"); code != rolloutcli.ExitError || !strings.Contains(errOut, "InvalidPhase") {
		t.Fatalf("promote: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"set-pace", "web"}, {"set-pace", "web", "0"}, {"set-pace", "web", "x"}, {"pause"}, {"bogus", "web"}} {
		if code, _, _ := run(f, args[0], args[1:]...); code != rolloutcli.ExitUsage {
			t.Errorf("%q: exit %d, want usage", args, code)
		}
	}
}

// freeze and unfreeze need no process guid; status shows the freeze while it holds.
func TestFreezeAndUnfreeze(t *testing.T) {
	f := &fakeAPI{states: []string{model.RolloutActive}}
	if code, _, errOut := run(f, "freeze"); code != rolloutcli.ExitUsage || !strings.Contains(errOut, "reason") {
		t.Fatalf("freeze without a reason: %d %q", code, errOut)
	}
	code, out, _ := run(f, "freeze", "incident", "42")
	if code != rolloutcli.ExitOK || !strings.Contains(out, "frozen since") || !strings.Contains(out, "incident 42") || !strings.Contains(out, "3 rollouts") {
		t.Fatalf("freeze: %d %q", code, out)
	}
	if _, out, _ := run(f, "status", "web"); !strings.Contains(out, "freeze  rollouts are frozen") {
		t.Fatalf("status while frozen:\n%s", out)
	}
	if code, out, _ := run(f, "unfreeze"); code != rolloutcli.ExitOK || !strings.Contains(out, "not frozen") {
		t.Fatalf("unfreeze: %d %q", code, out)
	}
	if _, out, _ := run(f, "status", "web"); strings.Contains(out, "freeze ") {
		t.Fatalf("status after the unfreeze:\n%s", out)
	}
}
