package model_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// decodeStrategy decodes a strategy as a request field does (through the enclosing object).
func decodeStrategy(raw string) (*model.RolloutStrategy, error) {
	var req struct {
		Strategy *model.RolloutStrategy `json:"strategy"`
	}
	err := json.Unmarshal([]byte(`{"strategy": `+raw+`}`), &req)
	return req.Strategy, err
}

func TestStrategyDecodingAndValidation(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		valid     bool
		mention   string // a word the error must carry
	}{
		{"empty", `{}`, true, ""},
		{"the contract's example", `{"max_in_flight": 1, "min_ready_ms": 0, "index_deadline_ms": 300000,
			"progress_deadline_ms": 0, "on_failure": "revert", "failure": {"max_crashes": 3, "max_failed_indices": 1},
			"canary": {"steps": [{"instances": 1, "pause_ms": 60000}, {"weight": 10, "pause_ms": 120000, "analysis": true},
			{"weight": 50, "promote": "manual"}]},
			"analysis": {"interval_ms": 10000, "min_requests": 100, "max_error_rate_ratio": 2.0, "max_p99_delta_ms": 250,
			"max_crash_rate": 0, "background": false, "on_inconclusive": "pause"}}`, true, ""},
		{"dark canary", `{"canary": {"steps": [{"instances": 1, "weight": 0}]}}`, true, ""},
		{"unknown field", `{"max_in_fligth": 2}`, false, "max_in_fligth"},
		{"unknown nested field", `{"failure": {"max_crash": 2}}`, false, "max_crash"},
		{"unknown step field", `{"canary": {"steps": [{"instances": 1, "pause": 5}]}}`, false, "pause"},
		{"string for a number", `{"max_in_flight": "3"}`, false, "max_in_flight"},
		{"fraction for an integer", `{"max_in_flight": 1.5}`, false, "max_in_flight"},
		{"not an object", `[1]`, false, "strategy"},
		{"zero in flight", `{"max_in_flight": 0}`, false, "max_in_flight"},
		{"negative min ready", `{"min_ready_ms": -1}`, false, "min_ready_ms"},
		{"tiny index deadline", `{"index_deadline_ms": 5}`, false, "index_deadline_ms"},
		{"huge deadline", `{"progress_deadline_ms": 99999999999999}`, false, "progress_deadline_ms"},
		{"unknown on_failure", `{"on_failure": "explode"}`, false, "on_failure"},
		{"zero crashes", `{"failure": {"max_crashes": 0}}`, false, "max_crashes"},
		{"no steps", `{"canary": {"steps": []}}`, false, "steps"},
		{"step with neither", `{"canary": {"steps": [{"pause_ms": 10}]}}`, false, "instances or weight"},
		{"weight over 100", `{"canary": {"steps": [{"weight": 101}]}}`, false, "weight"},
		{"negative weight", `{"canary": {"steps": [{"weight": -1}]}}`, false, "weight"},
		{"steps going down", `{"canary": {"steps": [{"instances": 3}, {"instances": 2}]}}`, false, "cumulative"},
		{"promote other", `{"canary": {"steps": [{"instances": 1, "promote": "later"}]}}`, false, "promote"},
		{"negative ratio", `{"analysis": {"max_error_rate_ratio": -1}}`, false, "max_error_rate_ratio"},
		{"inconclusive other", `{"analysis": {"on_inconclusive": "shrug"}}`, false, "on_inconclusive"},
		{"empty break glass", `{"break_glass": " "}`, false, "break_glass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeStrategy(tc.raw)
			if err == nil {
				err = s.Validate()
			}
			check(t, err, tc.valid)
			if err != nil && !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not name %q", err, tc.mention)
			}
		})
	}
}

func TestStrategyRoundTripsThroughJSON(t *testing.T) {
	in := model.DefaultRolloutStrategy()
	in.Canary = &model.CanaryStrategy{Steps: []model.CanaryStep{{Instances: ptr(int32(1)), Weight: ptr(int32(0))}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeStrategy(string(b))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(out)
	if string(again) != string(b) {
		t.Fatalf("round trip changed the strategy:\n%s\n%s", b, again)
	}
	if !strings.Contains(string(b), `"weight":0`) {
		t.Fatalf("a weight of 0 must stay explicit: %s", b)
	}
}

func TestResolveStrategyFieldByField(t *testing.T) {
	server := model.DefaultRolloutStrategy()
	lrp, _ := decodeStrategy(`{"max_in_flight": 4, "index_deadline_ms": 60000, "failure": {"max_crashes": 5},
		"analysis": {"min_requests": 10}, "canary": {"steps": [{"instances": 1}, {"instances": 2}]}, "window": "w"}`)
	update, _ := decodeStrategy(`{"max_in_flight": 2, "failure": {"max_failed_indices": 2},
		"canary": {"steps": [{"instances": 3}]}, "break_glass": "cve"}`)
	got := model.ResolveStrategy(update, lrp, &server)
	if *got.MaxInFlight != 2 || *got.IndexDeadlineMS != 60000 || *got.MinReadyMS != 0 {
		t.Fatalf("scalars: %+v", got)
	}
	if *got.Failure.MaxCrashes != 5 || *got.Failure.MaxFailedIndices != 2 {
		t.Fatalf("failure: %+v", *got.Failure)
	}
	if *got.Analysis.MinRequests != 10 || *got.Analysis.IntervalMS != 10000 {
		t.Fatalf("analysis: %+v", *got.Analysis)
	}
	if len(got.Canary.Steps) != 1 || *got.Canary.Steps[0].Instances != 3 {
		t.Fatalf("canary steps are one value, the update's: %+v", got.Canary)
	}
	if got.Window == nil || *got.Window != "w" || got.BreakGlass == nil {
		t.Fatalf("window and break glass: %+v", got)
	}
	// break_glass never comes from a default.
	if r := model.ResolveStrategy(nil, update, &server); r.BreakGlass != nil {
		t.Fatalf("break_glass taken from a lower layer")
	}
	// Resolution copies: changing the result leaves the layers alone.
	*got.MaxInFlight = 9
	*got.Failure.MaxCrashes = 9
	if *update.MaxInFlight != 2 || *lrp.Failure.MaxCrashes != 5 {
		t.Fatal("resolution aliased a layer")
	}
}

// The BBS protocol's doubles carry NaN and infinities, which JSON cannot: refused, as no
// store could keep them.
func TestStrategyRatiosAreFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, s := range []*model.RolloutStrategy{
			{Analysis: &model.RolloutAnalysis{MaxErrorRateRatio: &v}},
			{Analysis: &model.RolloutAnalysis{MaxCrashRate: &v}},
		} {
			err := s.Validate()
			check(t, err, false)
			if !strings.Contains(err.Error(), "finite") {
				t.Fatalf("%v: %v", v, err)
			}
		}
	}
}

func TestLRPDefaultRefusesBreakGlass(t *testing.T) {
	s, _ := decodeStrategy(`{"break_glass": "always"}`)
	check(t, s.ValidateDefault(), false)
}

func TestSupportedRefusesWhatTheEngineDoesNotDoYet(t *testing.T) {
	for _, tc := range []struct{ raw, mention string }{
		{`{"max_in_flight": 5, "index_deadline_ms": 2000, "on_failure": "continue", "failure": {"max_crashes": 2}}`, ""},
		{`{"analysis": {"background": false, "min_requests": 5}}`, ""},
		{`{"canary": {"steps": [{"weight": 10}, {"instances": 1, "weight": 0}]}}`, ""},
		{`{"canary": {"steps": [{"instances": 1, "analysis": true}]}}`, ""},
		{`{"canary": {"steps": [{"instances": 1, "pause_ms": 1000}, {"instances": 2, "promote": "manual"}]}}`, ""},
		{`{"on_failure": "revert"}`, ""},
		{`{"on_failure": "pause"}`, ""},
		{`{"min_ready_ms": 10}`, ""},
		{`{"progress_deadline_ms": 10}`, ""},
		{`{"analysis": {"background": true}}`, ""},
		{`{"window": "maintenance"}`, ""}, // the store checks that it exists
	} {
		s, err := decodeStrategy(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Supported()
		check(t, err, tc.mention == "")
		if err != nil && !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("%s: %q does not name %q", tc.raw, err, tc.mention)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzRolloutStrategy: any bytes decode to a strategy or an InvalidRequest (never a panic or
// another error type), and a strategy that validates encodes back to one that decodes the same.
func FuzzRolloutStrategy(f *testing.F) {
	for _, seed := range []string{`{}`, `{"max_in_flight": 3}`, `{"canary": {"steps": [{"instances": 1, "weight": 0}]}}`,
		`{"failure": {"max_crashes": 2}}`, `{"analysis": {"max_error_rate_ratio": 1e308}}`, `{"x": 1}`, `[`, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var s model.RolloutStrategy
		if err := s.UnmarshalJSON([]byte(raw)); err != nil {
			if model.TypeOf(err) != model.ErrInvalidRequest {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			if model.TypeOf(err) != model.ErrInvalidRequest {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		_ = s.Supported()
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var again model.RolloutStrategy
		if err := again.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s does not decode: %v", b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("%s became %s", b, b2)
		}
	})
}

func TestEveryRolloutStateHasAPhase(t *testing.T) {
	want := map[string]string{model.RolloutActive: "walking", model.RolloutPaused: "paused", model.RolloutCanceling: "reverting",
		model.RolloutCompleted: "completed", model.RolloutCanceled: "canceled", model.RolloutFailed: "failed",
		model.RolloutSuperseded: "superseded"}
	for state, phase := range want {
		if got := model.RolloutPhaseOf(state); got != phase {
			t.Errorf("%s: phase %q, want %q", state, got, phase)
		}
	}
}
