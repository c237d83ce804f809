package chaos

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Outcome is what came of one trial: a row of the table.
type Outcome struct {
	// Faults names the faults that hit at once ("api+cell"); Victims the processes hit.
	Faults  string
	Victims []string
	// Restarted is how long after the hit the last victim was up again (the supervisor's
	// back-off included); Settled how long after it every app was at rest.
	Restarted, Settled time.Duration
	// RolloutsOK of Rollouts ended where their signals put them.
	Rollouts, RolloutsOK int
	Traffic              map[string]HostCount
	Sampled              SamplerResult
	// Orphans and Lost are what Cluster.Orphans found once everything was at rest.
	Orphans, Lost []string
	// Callbacks is how many completion callbacks the trial's task had (1 is right).
	Callbacks int
	Events    EventResult
	// Problems says what went wrong, in words; an outcome without any passed.
	Problems []string
}

func (o *Outcome) problem(format string, args ...any) {
	o.Problems = append(o.Problems, fmt.Sprintf(format, args...))
}

// judge turns the measures into problems.
func (o *Outcome) judge() {
	if sent, failed := Totals(o.Traffic); failed > 0 {
		o.problem("%d of %d requests failed: %s", failed, sent, describeFailures(o.Traffic))
	}
	if o.Sampled.Violations > 0 {
		o.problem("%d samples had an owed index without a RUNNING instance, first: %v", o.Sampled.Violations, o.Sampled.Examples)
	}
	if len(o.Orphans) > 0 {
		o.problem("orphaned processes: %s", strings.Join(o.Orphans, ", "))
	}
	if len(o.Lost) > 0 {
		o.problem("RUNNING instances with no process: %s", strings.Join(o.Lost, ", "))
	}
	if o.Callbacks != 1 {
		o.problem("the task's callback was delivered %d times", o.Callbacks)
	}
	if !o.Events.OK() {
		o.problem("events: %s", o.Events)
	}
}

// OK reports a trial with nothing wrong.
func (o Outcome) OK() bool { return len(o.Problems) == 0 }

// tableHeader are the table's columns; row fills them.
var tableHeader = []string{"faults", "processes hit", "back up after", "rollouts as signalled", "at rest after",
	"requests failed", "samples below desired (unsampled)", "orphans / lost", "callbacks", "events (received, twice, missing)", "result"}

func (o Outcome) row() []string {
	sent, failed := Totals(o.Traffic)
	settled := "never"
	if o.Settled > 0 {
		settled = seconds(o.Settled)
	}
	result := "ok"
	if !o.OK() {
		result = "**FAILED**"
	}
	return []string{o.Faults, strings.Join(o.Victims, ", "), seconds(o.Restarted),
		fmt.Sprintf("%d/%d", o.RolloutsOK, o.Rollouts), settled,
		fmt.Sprintf("%d / %d", failed, sent),
		fmt.Sprintf("%d / %d (%d)", o.Sampled.Violations, o.Sampled.Samples, o.Sampled.Unsampled),
		fmt.Sprintf("%d / %d", len(o.Orphans), len(o.Lost)),
		fmt.Sprintf("%d", o.Callbacks),
		fmt.Sprintf("%d, %d, %d", o.Events.Received, o.Events.Duplicates, o.Events.Missing), result}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// WriteTable prints the outcomes as a Markdown table (faults × outcomes), then each failed
// trial's problems.
func WriteTable(w io.Writer, outcomes []Outcome) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(tableHeader, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(tableHeader)))
	for _, o := range outcomes {
		fmt.Fprintf(w, "| %s |\n", strings.Join(o.row(), " | "))
	}
	for _, o := range outcomes {
		for _, p := range o.Problems {
			fmt.Fprintf(w, "\n%s: %s", o.Faults, p)
		}
	}
	fmt.Fprintln(w)
}
