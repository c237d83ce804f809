package model

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// sample is a side of n requests drawn from an app whose requests fail with errRate and
// last base ms plus an exponential tail, with extra ms added to every request.
func sample(r *rand.Rand, n int, errRate, extra float64) AnalysisSide {
	t := RouteTelemetry{Latency: make([]int64, len(LatencyBounds)+1)}
	for i := 0; i < n; i++ {
		ms := 2 + r.ExpFloat64()*3 + extra
		t.Latency[LatencyBucket(ms)]++
		t.Requests++
		if r.Float64() < errRate {
			t.Errors++
		}
	}
	return Side([]RouteTelemetry{t})
}

func TestJudge(t *testing.T) {
	p := (&RolloutAnalysis{}).Policy()
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name             string
		canary, baseline AnalysisSide
		want, mention    string
	}{
		{"same app", sample(r, 500, 0, 0), sample(r, 4500, 0, 0), VerdictPass, ""},
		{"5 % 500s", sample(r, 500, 0.05, 0), sample(r, 4500, 0, 0), VerdictFail, "error rate"},
		{"+300 ms", sample(r, 500, 0, 300), sample(r, 4500, 0, 0), VerdictFail, "p99"},
		{"too little traffic", sample(r, 50, 0.5, 0), sample(r, 4500, 0, 0), VerdictInconclusive, "too little traffic"},
		{"crashes fail whatever the traffic", AnalysisSide{Crashes: 1, Instances: 2}, AnalysisSide{}, VerdictFail, "crash rate"},
		{"an error or two is not a failure", AnalysisSide{Requests: 200, ErrorRate: 0.01, P99MS: 10}, AnalysisSide{Requests: 2000, ErrorRate: 0, P99MS: 10}, VerdictPass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := p.Judge(tc.canary, tc.baseline)
			if got != tc.want || !strings.Contains(reason, tc.mention) {
				t.Fatalf("verdict %s (%s), want %s naming %q\ncanary %+v\nbaseline %+v", got, reason, tc.want, tc.mention, tc.canary, tc.baseline)
			}
		})
	}
}

// An A/A comparison — the same app on both sides, with some errors and a latency tail —
// fails at most one window in a hundred.
func TestJudgeAAFalseFailRate(t *testing.T) {
	p := (&RolloutAnalysis{}).Policy()
	r := rand.New(rand.NewPCG(3, 4))
	const windows = 2000
	fails := 0
	for i := 0; i < windows; i++ {
		if v, _ := p.Judge(sample(r, 200, 0.01, 0), sample(r, 1800, 0.01, 0)); v == VerdictFail {
			fails++
		}
	}
	t.Logf("A/A: %d of %d windows failed", fails, windows)
	if fails > windows/100 {
		t.Fatalf("A/A: %d of %d windows failed, more than 1 %%", fails, windows)
	}
}

func TestPercentileInterpolatesWithinABucket(t *testing.T) {
	l := make([]int64, len(LatencyBounds)+1)
	l[LatencyBucket(10)] = 100
	if p := Percentile(l, 0.5); p <= LatencyBounds[LatencyBucket(10)-1] || p > LatencyBounds[LatencyBucket(10)] {
		t.Fatalf("p50 of 100 requests of 10 ms = %v", p)
	}
	if Percentile(make([]int64, len(LatencyBounds)+1), 0.99) != 0 {
		t.Fatal("a percentile of nothing")
	}
	l[len(l)-1] = 1000
	if p := Percentile(l, 0.99); p != LatencyBounds[len(LatencyBounds)-1] {
		t.Fatalf("p99 beyond every bound = %v", p)
	}
}
