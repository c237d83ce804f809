// Package analysis judges a canary against its baseline (ROLLOUTS-NEXT.md section 1): the
// routers' telemetry under the strategy's thresholds first, and any providers an operator
// adds — an HTTP webhook here, Prometheus queries behind one later. The worst verdict wins.
package analysis

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
)

// Window is what a provider judges: one LRP's canary definition against the others over
// [From, To] (Unix nanoseconds), with what the routers measured.
type Window struct {
	ProcessGUID string               `json:"process_guid"`
	Canary      string               `json:"canary_definition_id"`
	Step        *int32               `json:"step"`
	From        int64                `json:"from"`
	To          int64                `json:"to"`
	Policy      model.AnalysisPolicy `json:"policy"`
	// Measured are the routers' figures (and the store's crash counts) for each side.
	CanaryMeasured   model.AnalysisSide `json:"canary"`
	BaselineMeasured model.AnalysisSide `json:"baseline"`
}

// Result is a provider's verdict on a window.
type Result struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// Provider judges windows. Judge is called once per window; an error makes the window
// inconclusive for that provider, never a failure.
type Provider interface {
	Name() string
	Judge(ctx context.Context, w Window) (Result, error)
}

// Telemetry is the built-in provider: the strategy's thresholds over the routers' figures.
type Telemetry struct{}

// Name implements Provider.
func (Telemetry) Name() string { return "" }

// Judge implements Provider.
func (Telemetry) Judge(_ context.Context, w Window) (Result, error) {
	v, reason := w.Policy.Judge(w.CanaryMeasured, w.BaselineMeasured)
	return Result{Verdict: v, Reason: reason}, nil
}

// rank orders verdicts by severity.
func rank(v string) int {
	switch v {
	case model.VerdictFail:
		return 2
	case model.VerdictInconclusive:
		return 1
	}
	return 0
}

// Judge asks every provider about w and returns the worst verdict, with its reason and the
// provider that gave it ("" for the routers' telemetry).
func Judge(ctx context.Context, w Window, providers ...Provider) (Result, string) {
	worst, by := Result{Verdict: model.VerdictPass}, ""
	first := true
	for _, p := range providers {
		r, err := p.Judge(ctx, w)
		if err != nil {
			r = Result{Verdict: model.VerdictInconclusive, Reason: p.Name() + ": " + err.Error()}
		}
		if first || rank(r.Verdict) > rank(worst.Verdict) {
			worst, by, first = r, p.Name(), false
		}
	}
	return worst, by
}
