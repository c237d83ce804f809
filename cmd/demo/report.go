package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printReport writes the table of phases, the main failure reasons of each phase that had
// failures, the analysis of each phase that had one, and the verdict. It returns whether the
// rolling path served every request.
func printReport(w io.Writer, phases []phaseSummary) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttime\tsent\tfailed\tapp 500s\tretried\tp50\tp99\tanswered by (X-LRP-Definition)")
	for _, p := range phases {
		retried := "?"
		if p.retries >= 0 {
			retried = fmt.Sprint(p.retries)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", p.name, p.duration.Round(100*time.Millisecond),
			p.sent, p.failed, total(p.appErrors), retried, fmtLatency(p.p50), fmtLatency(p.p99), fmtByDef(p.byDef))
	}
	tw.Flush()
	for _, p := range phases {
		if p.failed == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d failed over %s:\n", p.name, p.failed, p.failWindow.Round(10*time.Millisecond))
		for i, f := range p.topFailures {
			if i == 3 {
				fmt.Fprintf(w, "  … and %d other reasons\n", len(p.topFailures)-3)
				break
			}
			fmt.Fprintf(w, "  %6d × %s\n", f.n, f.reason)
		}
	}
	for _, p := range phases {
		if len(p.analysis) > 0 {
			printAnalysis(w, p)
		}
	}
	text, ok := verdict(phases)
	fmt.Fprintf(w, "\n%s", text)
	return ok
}

// printAnalysis writes a phase's verdicts, canary against baseline as the rollout judged
// them from the routers' telemetry, how the rollout ended, and how many of the load's
// requests the canary answered, and how many of them with its own 500.
func printAnalysis(w io.Writer, p phaseSummary) {
	fmt.Fprintf(w, "\n%s: %s\n", p.name, p.outcome)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  window\tverdict\tcanary: requests\t5xx\tp99\tbaseline: requests\t5xx\tp99\treason")
	for _, v := range p.analysis {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", v.Window, v.Verdict,
			v.Canary.Requests, fmtRate(v.Canary.ErrorRate), fmtMS(v.Canary.P99MS),
			v.Baseline.Requests, fmtRate(v.Baseline.ErrorRate), fmtMS(v.Baseline.P99MS), v.Reason)
	}
	tw.Flush()
	if p.canary == "" {
		return
	}
	answered, own := p.byDef[p.canary]+p.appErrors[p.canary], p.appErrors[p.canary]
	fmt.Fprintf(w, "  %s answered %d of the %d requests sent, %d of them with its own 500", p.canary, answered, p.sent, own)
	if answered > 0 && own > 0 {
		fmt.Fprintf(w, " (%s)", fmtRate(float64(own)/float64(answered)))
	}
	fmt.Fprintln(w)
}

// verdict sums the rolling path (deploy, update, cancel, rollback, canaries) against the
// stock path (delete and desire again). Zero failed requests on the rolling path is the bar;
// a 500 an instance answered is the app's own answer, counted apart.
func verdict(phases []phaseSummary) (string, bool) {
	var rollSent, rollFailed, appErrors, stockSent, stockFailed int
	var stockWindow time.Duration
	stock := false
	for _, p := range phases {
		if p.rolling {
			rollSent += p.sent
			rollFailed += p.failed
			appErrors += total(p.appErrors)
		} else {
			stock = true
			stockSent += p.sent
			stockFailed += p.failed
			stockWindow += p.failWindow
		}
	}
	var b strings.Builder
	ok := rollFailed == 0 && rollSent > 0
	mark := "OK"
	if !ok {
		mark = "FAIL"
	}
	fmt.Fprintf(&b, "rolling path: %d failed of %d requests (%s: zero failed is the bar)\n", rollFailed, rollSent, mark)
	if appErrors > 0 {
		fmt.Fprintf(&b, "  and %d answered 500 by the bad release itself: the app's answers, which the router delivered\n"+
			"  (X-LRP-Definition says which instance), counted apart; the router's own 404/502/503 and\n"+
			"  connection errors are failures\n", appErrors)
	}
	if stock {
		fmt.Fprintf(&b, "stock BBS (delete + desire): %d failed of %d requests, failing for %s\n",
			stockFailed, stockSent, stockWindow.Round(10*time.Millisecond))
	}
	return b.String(), ok
}

// total sums the counts of a map.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// fmtRate writes a share as a percentage.
func fmtRate(r float64) string { return fmt.Sprintf("%.2f%%", 100*r) }

// fmtMS writes milliseconds as the analysis measured them (from the routers' histograms).
func fmtMS(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}

func fmtLatency(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// fmtByDef lists the count per definition id, in id order.
func fmtByDef(m map[string]int) string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s=%d", id, m[id])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
