package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/model"
)

// Rollouts are the rollout walk's series, counted by the worker process that runs each
// step: per-process counters and histograms, which Prometheus sums over the workers and
// across their restarts (rate, increase). How many rollouts are under way is a fleet count
// instead (bbs_rollouts_in_progress, Convergence).
type Rollouts struct {
	step     *prometheus.HistogramVec
	finished *prometheus.CounterVec
}

// NewRollouts registers the rollout series on reg, every label value known up front at 0,
// so that rate() sees a series from its first increment.
func NewRollouts(reg prometheus.Registerer) *Rollouts {
	r := &Rollouts{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bbs_rollout_index_step_duration_seconds",
			Help: "How long a rollout's step at one index took, from desiring the new instance to its running (updated), " +
				"its deadline (given_up) or the LRP's scaling below the index (scaled_away), by outcome.",
			// A step waits for an instance to start: from a second to the index deadline (minutes).
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12)}, []string{"outcome"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbs_rollouts_finished_total",
			Help: "Rollouts that ended, by final state (completed, canceled, failed). A superseded rollout is not counted: " +
				"its walk goes on as the rollout that superseded it."}, []string{"state"}),
	}
	reg.MustRegister(r.step, r.finished)
	for _, o := range model.RolloutStepOutcomes() {
		r.step.WithLabelValues(o)
	}
	for _, s := range []string{model.RolloutCompleted, model.RolloutCanceled, model.RolloutFailed} {
		r.finished.WithLabelValues(s)
	}
	return r
}

// IndexStep records a step that ended with outcome (model.RolloutStepOutcomes) after took.
func (r *Rollouts) IndexStep(outcome string, took time.Duration) {
	r.step.WithLabelValues(outcome).Observe(took.Seconds())
}

// Finished counts a rollout that ended in state.
func (r *Rollouts) Finished(state string) {
	r.finished.WithLabelValues(state).Inc()
}
