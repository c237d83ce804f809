package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{ms(7)}, 99, ms(7)},
		{"p50 of 1..100", hundred, 50, ms(50)},
		{"p99 of 1..100", hundred, 99, ms(99)},
		{"p100 is the maximum", hundred, 100, ms(100)},
		{"p50 of four is the second", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 50, ms(2)},
		{"p99 of four is the last", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 99, ms(4)},
		{"a tiny p is the minimum", []time.Duration{ms(1), ms(2), ms(3)}, 0.001, ms(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

// TestRecorderBucketsByPhaseOfSending checks that a request counts in the phase during
// which it was sent, even if it is answered after the next phase began, and that nothing is
// counted between phases.
func TestRecorderBucketsByPhaseOfSending(t *testing.T) {
	var r recorder
	t0 := time.Now()
	if p := r.sending(); p != nil {
		t.Fatalf("a request before any phase went to %q", p.name)
	}
	r.begin("steady", true, t0)
	a1, a2, a3 := r.sending(), r.sending(), r.sending()
	r.record(a1, result{latency: ms(2), definition: "v1"}, t0.Add(ms(10)))
	r.record(a2, result{latency: ms(4), definition: "v1"}, t0.Add(ms(20)))

	r.begin("update", true, t0.Add(time.Second))
	b1 := r.sending()
	// a3 was sent during "steady" and fails after "update" began: it is steady's.
	r.record(a3, result{latency: ms(5000), failure: "transport: timeout"}, t0.Add(ms(1100)))
	r.record(b1, result{latency: ms(3), definition: "v2"}, t0.Add(ms(1200)))
	r.rename("update v1→v2")

	r.begin("stock", false, t0.Add(2*time.Second))
	c1, c2, c3 := r.sending(), r.sending(), r.sending()
	r.record(c1, result{failure: "404 Not Found: no running instance"}, t0.Add(ms(2100)))
	r.record(c2, result{failure: "404 Not Found: no running instance"}, t0.Add(ms(2600)))
	r.record(c3, result{failure: "502 Bad Gateway: refused"}, t0.Add(ms(2400)))
	r.end(t0.Add(3 * time.Second))
	if p := r.sending(); p != nil {
		t.Fatalf("a request after the last phase went to %q", p.name)
	}

	got := r.summaries()
	if len(got) != 3 {
		t.Fatalf("%d phases, want 3", len(got))
	}
	steady, update, stock := got[0], got[1], got[2]
	if steady.sent != 3 || steady.failed != 1 || steady.byDef["v1"] != 2 || len(steady.byDef) != 1 {
		t.Errorf("steady = %+v, want 3 sent, 1 failed, v1=2", steady)
	}
	if steady.p50 != ms(2) || steady.p99 != ms(4) {
		t.Errorf("steady p50/p99 = %v/%v, want 2ms/4ms (successful requests only)", steady.p50, steady.p99)
	}
	if steady.duration != time.Second {
		t.Errorf("steady lasted %v, want 1s", steady.duration)
	}
	if update.name != "update v1→v2" || update.sent != 1 || update.failed != 0 || update.byDef["v2"] != 1 {
		t.Errorf("update = %+v", update)
	}
	if stock.rolling || stock.sent != 3 || stock.failed != 3 || stock.failWindow != ms(500) {
		t.Errorf("stock = %+v, want 3 failed over 500ms", stock)
	}
	if len(stock.topFailures) != 2 || stock.topFailures[0].n != 2 || !strings.HasPrefix(stock.topFailures[0].reason, "404") {
		t.Errorf("stock failures = %+v, want the 404s first", stock.topFailures)
	}
}

// TestRecorderCountsAppErrorsApart: an instance's 500 is neither failed nor successful; it
// counts for its definition among the app errors, and moves that definition's last answer.
func TestRecorderCountsAppErrorsApart(t *testing.T) {
	var r recorder
	t0 := time.Now()
	r.begin("canary", true, t0)
	a, b, c := r.sending(), r.sending(), r.sending()
	r.record(a, result{latency: ms(1), definition: "v5"}, t0.Add(ms(10)))
	r.record(b, result{latency: ms(50), definition: "v6", appError: true}, t0.Add(ms(30)))
	r.record(c, result{latency: ms(1), definition: "v6"}, t0.Add(ms(20)))
	r.setAnalysis(r.current(), "v6", []model.AnalysisVerdict{{Window: "step-0/1", Verdict: model.VerdictFail}}, "reverted")
	r.end(t0.Add(time.Second))
	s := r.summaries()[0]
	if s.failed != 0 || s.appErrors["v6"] != 1 || s.byDef["v6"] != 1 || s.byDef["v5"] != 1 || s.p99 != ms(1) {
		t.Errorf("summary = %+v, want v5=1 v6=1, one app error of v6, nothing failed", s)
	}
	if got := r.lastAnswered("v6"); !got.Equal(t0.Add(ms(30))) {
		t.Errorf("v6 last answered at %v, want its 500 at +30ms", got.Sub(t0))
	}
	if !r.lastAnswered("v7").IsZero() {
		t.Error("a definition that never answered has a last answer")
	}
	if s.canary != "v6" || len(s.analysis) != 1 || s.outcome != "reverted" {
		t.Errorf("analysis = %q %+v %q", s.canary, s.analysis, s.outcome)
	}
}

func TestVerdict(t *testing.T) {
	clean := []phaseSummary{
		{name: "steady", rolling: true, sent: 100},
		{name: "update", rolling: true, sent: 200},
		{name: "stock", sent: 50, failed: 20, failWindow: 3 * time.Second},
	}
	text, ok := verdict(clean)
	if !ok || !strings.Contains(text, "rolling path: 0 failed of 300") || !strings.Contains(text, "20 failed of 50") {
		t.Errorf("verdict = %v %q", ok, text)
	}
	dirty := append([]phaseSummary{{name: "rollback", rolling: true, sent: 10, failed: 1}}, clean...)
	if text, ok := verdict(dirty); ok || !strings.Contains(text, "1 failed of 310") {
		t.Errorf("a failure on the rolling path: verdict = %v %q", ok, text)
	}
	if _, ok := verdict(nil); ok {
		t.Error("no request sent at all passes the bar")
	}
	withApp := append(clean, phaseSummary{name: "bad canary", rolling: true, sent: 100, appErrors: map[string]int{"v6": 4}})
	if text, ok := verdict(withApp); !ok || !strings.Contains(text, "0 failed of 400") || !strings.Contains(text, "4 answered 500 by the bad release") {
		t.Errorf("app errors on the rolling path: verdict = %v %q, want them apart from 0 failed", ok, text)
	}
}

// TestPrintAnalysis checks the figures a canary phase's report carries: each verdict's
// canary and baseline requests, error rate and p99 with its reason, and what the bad
// release answered.
func TestPrintAnalysis(t *testing.T) {
	zero := int32(0)
	p := phaseSummary{
		name: "canary v5→v6", sent: 2000, canary: "v6", outcome: "reverted to v5: app failure \"analysis\" at step 0",
		byDef: map[string]int{"v5": 1800, "v6": 190}, appErrors: map[string]int{"v6": 10},
		analysis: []model.AnalysisVerdict{{
			Step: &zero, Window: "step-0/1", Verdict: model.VerdictFail,
			Canary:   model.AnalysisSide{Requests: 81, ErrorRate: 0.0617, P99MS: 3.2},
			Baseline: model.AnalysisSide{Requests: 722, ErrorRate: 0, P99MS: 41},
			Reason:   "error rate 6.17 % is 12.3× the baseline's 0.00 %",
		}},
	}
	var b strings.Builder
	printAnalysis(&b, p)
	out := b.String()
	for _, want := range []string{"reverted to v5", "step-0/1", "fail", "81", "6.17%", "3.2ms", "722", "0.00%", "41ms",
		"12.3× the baseline", "v6 answered 200 of the 2000 requests sent, 10 of them with its own 500 (5.00%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the analysis report lacks %q:\n%s", want, out)
		}
	}
}

// TestRequestClassifiesAnswers drives request against a stand-in router: a 2xx counts for
// the definition that answered, a 500 an instance answered (X-LRP-Definition set) is an app
// error, anything else — the router's own 500 or 502 without the header, a 404 — and
// transport errors are failures.
func TestRequestClassifiesAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Host {
		case "up.test":
			w.Header().Set("X-LRP-Definition", "v2")
			w.Write([]byte("{}"))
		case "bad.test":
			w.Header().Set("X-LRP-Definition", "v6")
			http.Error(w, "demoapp: a bad release's error", http.StatusInternalServerError)
		case "badgw.test":
			http.Error(w, "502 Bad Gateway: connection refused", http.StatusBadGateway)
		case "router500.test":
			http.Error(w, "internal error", http.StatusInternalServerError)
		default:
			http.Error(w, "404 Not Found: no running instance serves \""+r.Host+"\"", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := srv.Client()
	if r := request(c, srv.URL, "up.test"); r.failure != "" || r.definition != "v2" {
		t.Errorf("served request = %+v", r)
	}
	if r := request(c, srv.URL, "gone.test"); r.failure != `404 Not Found: no running instance serves "gone.test"` || r.appError {
		t.Errorf("404 = %+v", r)
	}
	if r := request(c, srv.URL, "bad.test"); !r.appError || r.failure != "" || r.definition != "v6" {
		t.Errorf("an instance's 500 = %+v, want an app error of v6", r)
	}
	if r := request(c, srv.URL, "badgw.test"); r.appError || r.failure != "502 Bad Gateway: connection refused" {
		t.Errorf("the router's 502 = %+v, want a failure", r)
	}
	if r := request(c, srv.URL, "router500.test"); r.appError || r.failure != "500: internal error" {
		t.Errorf("a 500 no instance answered = %+v, want a failure", r)
	}
	srv.Close()
	if r := request(c, srv.URL, "up.test"); !strings.HasPrefix(r.failure, "transport: ") {
		t.Errorf("closed router = %+v", r)
	}
}

// TestAvailableTellsNoAnswerFromUnavailable: nothing listening is an error (the demo then
// starts the system); an API that answers 503 is up but not available yet.
func TestAvailableTellsNoAnswerFromUnavailable(t *testing.T) {
	ctx := context.Background()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error": {"type": "Unavailable", "message": "migrating"}}`))
	}))
	defer unavailable.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"available": true}`))
	}))
	defer up.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	if ok, err := available(ctx, bbsclient.New(gone.URL, nil)); ok || err == nil {
		t.Errorf("nothing listening: available = %v, %v; want an error", ok, err)
	}
	if ok, err := available(ctx, bbsclient.New(unavailable.URL, nil)); ok || err != nil {
		t.Errorf("503: available = %v, %v; want false, nil", ok, err)
	}
	if ok, err := available(ctx, bbsclient.New(up.URL, nil)); !ok || err != nil {
		t.Errorf("up: available = %v, %v; want true, nil", ok, err)
	}
}

// TestCanaryStrategyIsValid: the strategy both canaries walk with passes the API's checks, so
// the demo fails on what the system does, not on a request it refuses.
func TestCanaryStrategyIsValid(t *testing.T) {
	s := canaryStrategy()
	if err := s.Validate(); err != nil {
		t.Fatalf("the demo's canary strategy: %v", err)
	}
	if err := s.Supported(); err != nil {
		t.Fatalf("the demo's canary strategy: %v", err)
	}
	p := s.Analysis.Policy()
	if p.MinRequests != canaryMinRequests || p.Interval != canaryInterval.Milliseconds() || p.OnInconclusive != model.InconclusiveFail {
		t.Errorf("resolved analysis policy %+v", p)
	}
}

func TestRelative(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "never"},
		{t0.Add(ms(37)), "+37ms"},
		{t0.Add(-ms(117)), "-117ms"},
		{t0, "+0s"},
	} {
		if got := relative(t0, tc.at); got != tc.want {
			t.Errorf("relative(%v) = %q, want %q", tc.at.Sub(t0), got, tc.want)
		}
	}
}
