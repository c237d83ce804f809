package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// Webhook asks an HTTP endpoint for a verdict: it POSTs the Window as JSON and expects
// {"verdict": "pass"|"fail"|"inconclusive", "reason": "..."} back with status 200 — the
// seam where an operator adds Prometheus queries, an SLO service or a human's judgement.
type Webhook struct {
	URL    string
	Client *http.Client // nil: a client with a 10 s timeout
}

// Name implements Provider.
func (h *Webhook) Name() string { return "webhook " + h.URL }

// Judge implements Provider.
func (h *Webhook) Judge(ctx context.Context, w Window) (Result, error) {
	body, err := json.Marshal(w)
	if err != nil {
		return Result{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	res, err := c.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return Result{}, err
	}
	if res.StatusCode != http.StatusOK {
		return Result{}, fmt.Errorf("answered %s", res.Status)
	}
	return DecodeResult(raw)
}

// DecodeResult reads a webhook's answer strictly: a known verdict, nothing else.
func DecodeResult(raw []byte) (Result, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return Result{}, fmt.Errorf("unreadable verdict: %w", err)
	}
	switch r.Verdict {
	case model.VerdictPass, model.VerdictFail, model.VerdictInconclusive:
	default:
		return Result{}, fmt.Errorf("unknown verdict %q", r.Verdict)
	}
	if len(r.Reason) > 1024 {
		r.Reason = r.Reason[:1024]
	}
	return r, nil
}
