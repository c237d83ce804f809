package model

import (
	"fmt"
	"math"
)

// Canary analysis (ROLLOUTS-NEXT.md section 1 "analysis" and section 2 "analysis"): the new
// definition (canary) is judged against the others (baseline) over the same window of the
// same routes' traffic, from the routers' telemetry and the store's crash counts.

// Verdicts of an analysis.
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictInconclusive = "inconclusive"
)

// FailureAnalysis: the canary failed analysis (an app failure).
const FailureAnalysis = "analysis"

// AnalysisSide is what one side of a comparison did in a window.
type AnalysisSide struct {
	Requests  int64   `json:"requests"`
	ErrorRate float64 `json:"error_rate"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	Crashes   int32   `json:"crashes"`
	// Instances is how many instances the side had at the window's end: the crash rate's
	// denominator.
	Instances int32 `json:"instances,omitempty"`
}

// AnalysisVerdict is one judgement of canary against baseline, kept on the rollout and in
// its workflow's history. Step is the canary step (nil: a background judgement during the
// walk); Window names the window (unique per rollout) so that a retried judgement is
// recorded once; From and At bound it (Unix nanoseconds).
type AnalysisVerdict struct {
	Step     *int32       `json:"step"`
	Window   string       `json:"window"`
	From     int64        `json:"from"`
	At       int64        `json:"at"`
	Verdict  string       `json:"verdict"`
	Canary   AnalysisSide `json:"canary"`
	Baseline AnalysisSide `json:"baseline"`
	Reason   string       `json:"reason"`
	// Provider names who gave the verdict when not the routers' telemetry (a webhook).
	Provider string `json:"provider,omitempty"`
}

// AnalysisPolicy is a resolved strategy's analysis thresholds.
type AnalysisPolicy struct {
	Interval          int64   `json:"interval_ms"`
	MinRequests       int64   `json:"min_requests"`
	MaxErrorRateRatio float64 `json:"max_error_rate_ratio"`
	MaxP99DeltaMS     int64   `json:"max_p99_delta_ms"`
	MaxCrashRate      float64 `json:"max_crash_rate"`
	Background        bool    `json:"background,omitempty"`
	OnInconclusive    string  `json:"on_inconclusive"`
}

// Policy is the analysis of a resolved strategy, the contract's defaults filling what it
// lacks.
func (a *RolloutAnalysis) Policy() AnalysisPolicy {
	d := DefaultRolloutStrategy().Analysis
	r := ResolveStrategy(&RolloutStrategy{Analysis: a}, &RolloutStrategy{Analysis: d}).Analysis
	return AnalysisPolicy{Interval: *r.IntervalMS, MinRequests: *r.MinRequests, MaxErrorRateRatio: *r.MaxErrorRateRatio,
		MaxP99DeltaMS: *r.MaxP99DeltaMS, MaxCrashRate: *r.MaxCrashRate, Background: *r.Background, OnInconclusive: *r.OnInconclusive}
}

// ErrorRateFloor is the baseline error rate the ratio is taken against at least (0.5 %): a
// baseline without errors does not make one canary error a failure.
const ErrorRateFloor = 0.005

// errorZ is the one-sided z a canary's excess error rate must pass (99.5 %): with a canary no
// worse than its baseline, at most one window in a hundred fails by chance (an A/A run).
const errorZ = 2.576

// Judge compares canary with baseline under p: a crash rate above the policy's fails
// whatever the traffic; too few requests on either side is inconclusive; an error-rate
// ratio above the policy's (against the baseline's rate, floored) that is also significant
// fails, as does a p99 more than the policy's delta above the baseline's; else it passes.
func (p AnalysisPolicy) Judge(canary, baseline AnalysisSide) (verdict, reason string) {
	if canary.Instances > 0 {
		if rate := float64(canary.Crashes) / float64(canary.Instances); rate > p.MaxCrashRate {
			return VerdictFail, fmt.Sprintf("crash rate %.2f per new instance (%d crashes of %d) is above %.2f",
				rate, canary.Crashes, canary.Instances, p.MaxCrashRate)
		}
	}
	if canary.Requests < p.MinRequests || baseline.Requests < p.MinRequests {
		return VerdictInconclusive, fmt.Sprintf("too little traffic: %d requests to the canary and %d to the baseline, %d needed on each side",
			canary.Requests, baseline.Requests, p.MinRequests)
	}
	floor := math.Max(baseline.ErrorRate, ErrorRateFloor)
	if ratio := canary.ErrorRate / floor; ratio > p.MaxErrorRateRatio && significant(canary, baseline) {
		return VerdictFail, fmt.Sprintf("error rate %.2f %% is %.1f× the baseline's %.2f %% (floor %.1f %%), above %.1f×",
			100*canary.ErrorRate, ratio, 100*baseline.ErrorRate, 100*ErrorRateFloor, p.MaxErrorRateRatio)
	}
	if delta := canary.P99MS - baseline.P99MS; delta > float64(p.MaxP99DeltaMS) {
		return VerdictFail, fmt.Sprintf("p99 %.0f ms is %.0f ms above the baseline's %.0f ms, more than %d ms",
			canary.P99MS, delta, baseline.P99MS, p.MaxP99DeltaMS)
	}
	return VerdictPass, fmt.Sprintf("error rate %.2f %% against %.2f %%, p99 %.0f ms against %.0f ms",
		100*canary.ErrorRate, 100*baseline.ErrorRate, canary.P99MS, baseline.P99MS)
}

// significant says the canary's error rate is above the baseline's (or the floor, when the
// baseline's is lower) beyond chance: a one-sided two-proportion z-test with Yates'
// continuity correction, which keeps the normal approximation honest at the few errors a
// canary's window holds.
func significant(canary, baseline AnalysisSide) bool {
	base := math.Max(baseline.ErrorRate, ErrorRateFloor)
	n1, n2 := float64(canary.Requests), float64(baseline.Requests)
	pooled := (canary.ErrorRate*n1 + base*n2) / (n1 + n2)
	se := math.Sqrt(pooled * (1 - pooled) * (1/n1 + 1/n2))
	excess := canary.ErrorRate - base - 0.5*(1/n1+1/n2)
	if se == 0 {
		return excess > 0
	}
	return excess/se > errorZ
}

// Percentile reads the q-quantile (0–1) in milliseconds from latency bucket counts
// (RouteTelemetry.Latency), interpolating within its bucket; 0 without requests.
func Percentile(latency []int64, q float64) float64 {
	var total int64
	for _, n := range latency {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var below float64
	for i, n := range latency {
		if n == 0 {
			continue
		}
		if below+float64(n) >= rank {
			lo := 0.0
			if i > 0 {
				lo = LatencyBounds[min(i, len(LatencyBounds))-1]
			}
			if i >= len(LatencyBounds) {
				return lo // beyond every bound: the last one
			}
			return lo + (LatencyBounds[i]-lo)*(rank-below)/float64(n)
		}
		below += float64(n)
	}
	return LatencyBounds[len(LatencyBounds)-1]
}

// Side sums telemetry of one side into its figures (crashes and instances are the caller's).
func Side(series []RouteTelemetry) AnalysisSide {
	var s AnalysisSide
	latency := make([]int64, len(LatencyBounds)+1)
	var errors int64
	for _, t := range series {
		s.Requests += t.Requests
		errors += t.Errors
		for i := range min(len(t.Latency), len(latency)) {
			latency[i] += t.Latency[i]
		}
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(errors) / float64(s.Requests)
	}
	s.P50MS, s.P99MS = Percentile(latency, 0.5), Percentile(latency, 0.99)
	return s
}
