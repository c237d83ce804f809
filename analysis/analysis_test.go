package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

type fixed struct {
	r   Result
	err error
}

func (f fixed) Name() string                                  { return "fixed" }
func (f fixed) Judge(context.Context, Window) (Result, error) { return f.r, f.err }

func TestTheWorstVerdictWins(t *testing.T) {
	pass, fail := fixed{r: Result{Verdict: model.VerdictPass}}, fixed{r: Result{Verdict: model.VerdictFail, Reason: "slo"}}
	if r, _ := Judge(context.Background(), Window{}, pass, fail, pass); r.Verdict != model.VerdictFail || r.Reason != "slo" {
		t.Fatalf("pass, fail, pass → %+v", r)
	}
	if r, _ := Judge(context.Background(), Window{}, pass, fixed{err: errors.New("down")}); r.Verdict != model.VerdictInconclusive || !strings.Contains(r.Reason, "down") {
		t.Fatalf("a provider that failed → %+v", r)
	}
}

func TestWebhook(t *testing.T) {
	answer := `{"verdict": "fail", "reason": "p95 above the SLO"}`
	status := 200
	var got Window
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := decodeStrict(r, &got); err != nil {
			t.Error(err)
		}
		w.WriteHeader(status)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	h := &Webhook{URL: srv.URL}
	r, err := h.Judge(context.Background(), Window{ProcessGUID: "web", Canary: "v2"})
	if err != nil || r.Verdict != model.VerdictFail || got.ProcessGUID != "web" || got.Canary != "v2" {
		t.Fatalf("verdict %+v, %v; sent %+v", r, err, got)
	}
	for _, bad := range []string{`{"verdict": "maybe"}`, `{"verdict": "pass", "extra": 1}`, `not json`} {
		answer = bad
		if _, err := h.Judge(context.Background(), Window{}); err == nil {
			t.Errorf("answer %s was taken", bad)
		}
	}
	answer, status = `{"verdict": "pass"}`, 500
	if _, err := h.Judge(context.Background(), Window{}); err == nil {
		t.Error("a 500 was taken as a verdict")
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"verdict": "pass", "reason": "ok"}`))
	f.Add([]byte(`{"verdict": "fail"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeResult(raw)
		if err == nil && rank(r.Verdict) == 0 && r.Verdict != model.VerdictPass {
			t.Fatalf("decoded an unknown verdict %q", r.Verdict)
		}
	})
}

func decodeStrict(r *http.Request, v any) error {
	dec := jsonDecoder(r)
	return dec.Decode(v)
}

func jsonDecoder(r *http.Request) *json.Decoder {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	return d
}
