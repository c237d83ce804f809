package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
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
}

// TestRequestClassifiesAnswers drives request against a stand-in router: a 2xx counts for
// the definition that answered, anything else and transport errors are failures.
func TestRequestClassifiesAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Host {
		case "up.test":
			w.Header().Set("X-LRP-Definition", "v2")
			w.Write([]byte("{}"))
		default:
			http.Error(w, "404 Not Found: no running instance serves \""+r.Host+"\"", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := srv.Client()
	if r := request(c, srv.URL, "up.test"); r.failure != "" || r.definition != "v2" {
		t.Errorf("served request = %+v", r)
	}
	if r := request(c, srv.URL, "gone.test"); r.failure != `404 Not Found: no running instance serves "gone.test"` {
		t.Errorf("404 = %+v", r)
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
