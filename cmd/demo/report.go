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
// failures, and the verdict. It returns whether the rolling path served every request.
func printReport(w io.Writer, phases []phaseSummary) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttime\tsent\tfailed\tretried\tp50\tp99\tanswered by (X-LRP-Definition)")
	for _, p := range phases {
		retried := "?"
		if p.retries >= 0 {
			retried = fmt.Sprint(p.retries)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", p.name, p.duration.Round(100*time.Millisecond),
			p.sent, p.failed, retried, fmtLatency(p.p50), fmtLatency(p.p99), fmtByDef(p.byDef))
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
	text, ok := verdict(phases)
	fmt.Fprintf(w, "\n%s", text)
	return ok
}

// verdict sums the rolling path (deploy, update, cancel, rollback) against the stock path
// (delete and desire again). Zero failed requests on the rolling path is the bar.
func verdict(phases []phaseSummary) (string, bool) {
	var rollSent, rollFailed, stockSent, stockFailed int
	var stockWindow time.Duration
	stock := false
	for _, p := range phases {
		if p.rolling {
			rollSent += p.sent
			rollFailed += p.failed
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
	if stock {
		fmt.Fprintf(&b, "stock BBS (delete + desire): %d failed of %d requests, failing for %s\n",
			stockFailed, stockSent, stockWindow.Round(10*time.Millisecond))
	}
	return b.String(), ok
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
