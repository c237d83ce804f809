package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// result is the outcome of one request through the router.
type result struct {
	latency time.Duration
	// definition is the X-LRP-Definition header of an instance's answer: the definition
	// that answered.
	definition string
	// appError says the instance answered 500: the app's own answer (a bad release's), which
	// the router delivered, not a request the platform failed.
	appError bool
	// failure says why the request failed (a transport error, or a non-2xx status that is not
	// an app error); empty when it was answered.
	failure string
}

// phaseStats accumulates the requests sent while one phase was current. A request belongs
// to the phase in which it was sent, even when its answer arrives after the next began.
type phaseStats struct {
	name       string
	rolling    bool // part of the rolling path, which must not fail a single request
	start, end time.Time
	sent       int
	failed     int
	latencies  []time.Duration // of the successful requests
	byDef      map[string]int
	// appErrors are the 500s instances answered, by definition: counted apart from failed.
	appErrors map[string]int
	failures  map[string]int
	// firstFail and lastFail bound the window in which requests failed.
	firstFail, lastFail time.Time
	// retries the router made on another instance during the phase (from its /stats); -1
	// when unknown.
	retries int64
	// analysis is what the phase's rollout judged of definition canary, and outcome how it
	// ended, for a phase whose rollout had analysis steps.
	canary   string
	analysis []model.AnalysisVerdict
	outcome  string
}

// recorder buckets results by phase. Phases follow one another: beginning one ends the
// previous one.
type recorder struct {
	mu     sync.Mutex
	phases []*phaseStats
	cur    *phaseStats
	// lastAnswer is when each definition last answered a request (whatever the phase): when
	// a reverted release stopped getting traffic.
	lastAnswer map[string]time.Time
}

// begin ends the current phase (if any) at now and starts a new one.
func (r *recorder) begin(name string, rolling bool, now time.Time) *phaseStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.end = now
	}
	r.cur = &phaseStats{name: name, rolling: rolling, start: now, byDef: map[string]int{}, appErrors: map[string]int{},
		failures: map[string]int{}, retries: -1}
	r.phases = append(r.phases, r.cur)
	return r.cur
}

// end ends the current phase; requests sent afterwards are not counted.
func (r *recorder) end(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.end = now
		r.cur = nil
	}
}

// rename changes the current phase's name, for what is known only once it ran.
func (r *recorder) rename(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.name = name
	}
}

// current returns the current phase (nil between phases).
func (r *recorder) current() *phaseStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// setRetries records the router's retries during phase p.
func (r *recorder) setRetries(p *phaseStats, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.retries = n
}

// setAnalysis records the verdicts of phase p's rollout to canary and how it ended.
func (r *recorder) setAnalysis(p *phaseStats, canary string, verdicts []model.AnalysisVerdict, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.canary, p.analysis, p.outcome = canary, slices.Clone(verdicts), outcome
}

// lastAnswered is when definition def last answered a request (zero: never).
func (r *recorder) lastAnswered(def string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastAnswer[def]
}

// sending counts a request sent now and returns the phase it belongs to (nil between phases).
func (r *recorder) sending() *phaseStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.sent++
	}
	return r.cur
}

// record adds the outcome, known at `at`, of a request sent during phase p.
func (r *recorder) record(p *phaseStats, res result, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.failure != "" {
		p.failed++
		p.failures[res.failure]++
		// Answers arrive out of order: keep the bounds, not the first and last recorded.
		if p.firstFail.IsZero() || at.Before(p.firstFail) {
			p.firstFail = at
		}
		if at.After(p.lastFail) {
			p.lastFail = at
		}
		return
	}
	if r.lastAnswer == nil {
		r.lastAnswer = map[string]time.Time{}
	}
	if at.After(r.lastAnswer[res.definition]) {
		r.lastAnswer[res.definition] = at
	}
	if res.appError {
		p.appErrors[res.definition]++
		return
	}
	p.latencies = append(p.latencies, res.latency)
	p.byDef[res.definition]++
}

// summaries returns what was recorded, phase by phase.
func (r *recorder) summaries() []phaseSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]phaseSummary, 0, len(r.phases))
	for _, p := range r.phases {
		out = append(out, p.summary())
	}
	return out
}

// phaseSummary is one row of the report.
type phaseSummary struct {
	name        string
	rolling     bool
	duration    time.Duration
	sent        int
	failed      int
	p50, p99    time.Duration
	byDef       map[string]int
	appErrors   map[string]int
	topFailures []countedReason
	// failWindow is the time from the first failure to the last one.
	failWindow time.Duration
	retries    int64
	canary     string
	analysis   []model.AnalysisVerdict
	outcome    string
}

type countedReason struct {
	reason string
	n      int
}

func (p *phaseStats) summary() phaseSummary {
	lat := slices.Clone(p.latencies)
	slices.Sort(lat)
	s := phaseSummary{
		name: p.name, rolling: p.rolling, sent: p.sent, failed: p.failed,
		p50: percentile(lat, 50), p99: percentile(lat, 99),
		byDef: maps.Clone(p.byDef), appErrors: maps.Clone(p.appErrors), retries: p.retries,
		canary: p.canary, analysis: slices.Clone(p.analysis), outcome: p.outcome,
	}
	if !p.end.IsZero() {
		s.duration = p.end.Sub(p.start)
	}
	for reason, n := range p.failures {
		s.topFailures = append(s.topFailures, countedReason{reason, n})
	}
	slices.SortFunc(s.topFailures, func(a, b countedReason) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.reason, b.reason)
	})
	if !p.firstFail.IsZero() {
		s.failWindow = p.lastFail.Sub(p.firstFail)
	}
	return s
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted durations by the
// nearest-rank method: the smallest value with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// loadConfig says where and how hard to drive requests.
type loadConfig struct {
	routerURL   string // e.g. http://127.0.0.1:8080
	host        string // the Host header the router routes by
	rate        int    // requests per second, in total
	concurrency int    // requests in flight at most
	timeout     time.Duration
}

// runLoad sends GET / for cfg.host through the router at cfg.rate until ctx ends, recording
// each outcome in rec. The returned function waits for the requests in flight.
//
// The pace is kept by a ticker: a tick that finds every worker busy is dropped rather than
// sent late, so a slow phase shows up as fewer requests sent, not as a burst afterwards.
func runLoad(ctx context.Context, cfg loadConfig, rec *recorder) (wait func()) {
	client := &http.Client{
		Timeout: cfg.timeout,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: cfg.concurrency,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	tokens := make(chan struct{}, cfg.concurrency)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(tokens)
		tick := time.NewTicker(time.Second / time.Duration(max(cfg.rate, 1)))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
		}
	})
	for range cfg.concurrency {
		wg.Go(func() {
			for range tokens {
				p := rec.sending()
				if p == nil {
					continue
				}
				res := request(client, cfg.routerURL, cfg.host)
				rec.record(p, res, time.Now())
			}
		})
	}
	return wg.Wait
}

// request sends one GET / for host through the router.
func request(client *http.Client, routerURL, host string) result {
	start := time.Now()
	req, err := http.NewRequest(http.MethodGet, routerURL+"/", nil)
	if err != nil {
		return result{failure: err.Error()}
	}
	req.Host = host
	res, err := client.Do(req)
	if err != nil {
		return result{latency: time.Since(start), failure: transportReason(err)}
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	r := result{latency: time.Since(start), definition: res.Header.Get("X-LRP-Definition")}
	switch {
	case res.StatusCode == http.StatusInternalServerError && r.definition != "":
		// The router sets X-LRP-Definition only on what an instance answered: this 500 is
		// the app's own, not the platform's.
		r.appError = true
	case res.StatusCode < 200 || res.StatusCode > 299:
		return result{latency: r.latency, failure: statusReason(res.StatusCode, string(body))}
	case r.definition == "":
		r.definition = "(none)"
	}
	return r
}

// transportReason shortens a client error to what went wrong, without the URL.
func transportReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return "transport: " + err.Error()
}

// statusReason names a non-2xx answer by its status and the first line of its body, where
// the router says why (no instance serves the host, the instance could not be reached).
func statusReason(code int, body string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	if len(line) > 100 {
		line = line[:100] + "…"
	}
	switch {
	case line == "":
		return fmt.Sprintf("%d %s", code, http.StatusText(code))
	case strings.HasPrefix(line, strconv.Itoa(code)):
		return line
	}
	return fmt.Sprintf("%d: %s", code, line)
}
