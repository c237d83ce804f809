package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// Convergence are the fleet's series. The worker sets them at each convergence pass, where
// the numbers are known, as Diego's BBS emits them from its converger: the counts come from
// the pass itself (missing, extra, suspect cells) and from one aggregate read after it
// (db.Fleet), so that no request pays for them.
//
// Temporal hands each pass to one of the workers, so every worker holds the numbers of the
// last pass it ran; bbs_convergence_last_pass_timestamp_seconds says whose are the freshest.
// A query keeps those with
//
//	bbs_lrps_running and on(instance) topk(1, bbs_convergence_last_pass_timestamp_seconds)
//
// (the dashboard does; docs/METRICS.md).
type Convergence struct {
	lrpDuration, taskDuration prometheus.Histogram
	lastPass                  prometheus.Gauge
	pass                      []gaugeOf[db.ConvergeResult]
	fleet                     []gaugeOf[db.Fleet]
	rollouts, domains         *prometheus.GaugeVec
}

// gaugeOf is a gauge set from a field of T.
type gaugeOf[T any] struct {
	gauge prometheus.Gauge
	value func(*T) int
}

// series describes a gauge read from a T: its name, Diego's name ("" for ours), its help.
type series[T any] struct {
	name, diego, help string
	value             func(*T) int
}

// passSeries are what a pass found.
var passSeries = []series[db.ConvergeResult]{
	{"bbs_lrps_missing", "LRPsMissing", "LRP instances desired that had no record, found (and created) by the last convergence pass.",
		func(r *db.ConvergeResult) int { return r.MissingIndices }},
	{"bbs_lrps_extra", "LRPsExtra", "LRP instances no longer desired that still had a record (instances a rollout retired included), found by the last convergence pass.",
		func(r *db.ConvergeResult) int { return r.ExtrasRemoved + r.ExtrasToStop }},
	{"bbs_suspect_cells", "SuspectCells", "Cells that lost their presence while instances are still recorded on them, at the last convergence pass.",
		func(r *db.ConvergeResult) int { return r.MissingCells }},
}

// fleetSeries are the counts read after a pass.
var fleetSeries = []series[db.Fleet]{
	{"bbs_lrps_desired", "LRPsDesired", "LRP instances desired across all LRPs.", func(f *db.Fleet) int { return f.LRPsDesired }},
	{"bbs_lrps_unclaimed", "LRPsUnclaimed", "LRP instances not yet claimed by a cell.", func(f *db.Fleet) int { return f.LRPsUnclaimed }},
	{"bbs_lrps_claimed", "LRPsClaimed", "LRP instances claimed by a cell, not yet running.", func(f *db.Fleet) int { return f.LRPsClaimed }},
	{"bbs_lrps_running", "LRPsRunning", "LRP instances running on cells.", func(f *db.Fleet) int { return f.LRPsRunning }},
	{"bbs_crashed_actual_lrps", "CrashedActualLRPs", "LRP instances that crashed (waiting to restart, or given up).", func(f *db.Fleet) int { return f.LRPsCrashed }},
	{"bbs_crashing_desired_lrps", "CrashingDesiredLRPs", "LRPs with at least one crashed instance.", func(f *db.Fleet) int { return f.CrashingDesiredLRPs }},
	{"bbs_suspect_running_actual_lrps", "SuspectRunningActualLRPs", "Running LRP instances on cells that lost their presence, kept until their replacements run.",
		func(f *db.Fleet) int { return f.SuspectRunning }},
	{"bbs_present_cells", "PresentCells", "Cells maintaining their presence.", func(f *db.Fleet) int { return f.PresentCells }},
	{"bbs_tasks_pending", "TasksPending", "Tasks not yet placed on a cell.", func(f *db.Fleet) int { return f.TasksPending }},
	{"bbs_tasks_running", "TasksRunning", "Tasks running on cells.", func(f *db.Fleet) int { return f.TasksRunning }},
	{"bbs_tasks_completed", "TasksCompleted", "Tasks that completed (their result kept until deleted).", func(f *db.Fleet) int { return f.TasksCompleted }},
	{"bbs_tasks_resolving", "TasksResolving", "Tasks being resolved (their completion callback under way).", func(f *db.Fleet) int { return f.TasksResolving }},
	{"bbs_task_callbacks_pending", "", "Completed or resolving tasks whose completion callback has not been delivered yet.",
		func(f *db.Fleet) int { return f.CallbacksPending }},
}

// convergenceBuckets span a pass over a handful of instances (milliseconds) to one over
// 250,000 on a loaded database (seconds).
var convergenceBuckets = prometheus.ExponentialBuckets(0.002, 2, 14)

// NewConvergence registers the fleet's series on reg.
func NewConvergence(reg prometheus.Registerer) *Convergence {
	c := &Convergence{
		lrpDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bbs_convergence_lrp_duration_seconds",
			Help:    help("How long the LRP convergence passes this process ran took; _count is the passes run", "ConvergenceLRPDuration and ConvergenceLRPRuns"),
			Buckets: convergenceBuckets}),
		taskDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bbs_convergence_task_duration_seconds",
			Help:    help("How long the task convergence passes this process ran took; _count is the passes run", "ConvergenceTaskDuration and ConvergenceTaskRuns"),
			Buckets: convergenceBuckets}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bbs_convergence_last_pass_timestamp_seconds",
			Help: "When this process last set the fleet's series from a convergence pass (Unix time): the worker with the largest holds the freshest."}),
		rollouts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bbs_rollouts_in_progress",
			Help: "Rollouts under way by state (active, paused, canceling), at the last convergence pass."}, []string{"state"}),
		domains: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bbs_domain_fresh",
			Help: help("1 for a fresh domain (its LRPs are in sync with Cloud Controller, so convergence may stop extras), 0 for an expired one, at the last convergence pass", "Domain.<name>")},
			[]string{"domain"}),
	}
	reg.MustRegister(c.lrpDuration, c.taskDuration, c.lastPass, c.rollouts, c.domains)
	c.pass = register(reg, passSeries)
	c.fleet = register(reg, fleetSeries)
	return c
}

func register[T any](reg prometheus.Registerer, all []series[T]) []gaugeOf[T] {
	out := make([]gaugeOf[T], len(all))
	for i, s := range all {
		out[i] = gaugeOf[T]{gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: s.name, Help: help(s.help, s.diego)}), value: s.value}
		reg.MustRegister(out[i].gauge)
	}
	return out
}

func set[T any](gauges []gaugeOf[T], from *T) {
	for _, g := range gauges {
		g.gauge.Set(float64(g.value(from)))
	}
}

// ConvergedLRPs records an LRP convergence pass: how long it took and what it found.
func (c *Convergence) ConvergedLRPs(took time.Duration, res *db.ConvergeResult) {
	c.lrpDuration.Observe(took.Seconds())
	set(c.pass, res)
}

// ConvergedTasks records a task convergence pass.
func (c *Convergence) ConvergedTasks(took time.Duration) {
	c.taskDuration.Observe(took.Seconds())
}

// FleetCounted sets the fleet's counts, read after a pass, and marks this process's series
// as the ones of that pass.
func (c *Convergence) FleetCounted(f *db.Fleet) {
	set(c.fleet, f)
	for _, state := range model.RolloutStatesInProgress() {
		c.rollouts.WithLabelValues(state).Set(float64(f.RolloutsInProgress[state]))
	}
	// A domain no longer stored (never the case today) must not linger.
	c.domains.Reset()
	for name, fresh := range f.Domains {
		v := 0.0
		if fresh {
			v = 1
		}
		c.domains.WithLabelValues(name).Set(v)
	}
	c.lastPass.SetToCurrentTime()
}
