package model

import (
	"math"
	"regexp"
	"time"
)

// EventTrafficChanged carries a TrafficSplit: the routers apply it as it arrives and report
// its generation back (ROLLOUTS-NEXT.md section 5).
const EventTrafficChanged = "traffic_changed"

// TrafficSplit is how an LRP's routes split requests between its definitions. Weights nil
// (or empty) routes by instances, as without a rollout; otherwise a listed definition takes
// its weight in percent of the requests, whatever its instance count, and the definitions
// not listed share what the listed ones leave, by instances. A listed weight of 0 is
// explicit: that definition takes no request without a preview header. Generation grows
// with every change of an LRP's split, so that a router's acknowledgement names exactly
// what it applied.
type TrafficSplit struct {
	ProcessGUID string           `json:"process_guid"`
	Generation  int64            `json:"generation"`
	Weights     map[string]int32 `json:"weights,omitempty"`
}

// Weighted reports whether the split overrides routing by instances.
func (s *TrafficSplit) Weighted() bool { return s != nil && len(s.Weights) > 0 }

// RouterReport is what a router tells the BBS, every second or so and at once after it
// applied a split: which generation of each LRP's split it routes by, and its telemetry.
// Telemetry counters are cumulative since StartedAt (a restarted router starts again from
// zero), and a report carries only the series that changed since the last one.
type RouterReport struct {
	RouterID string `json:"router_id"`
	// StartedAt is when the router's counters began (Unix nanoseconds).
	StartedAt int64            `json:"started_at"`
	Applied   map[string]int64 `json:"applied,omitempty"`
	Telemetry []RouteTelemetry `json:"telemetry,omitempty"`
}

// routerIDPattern keeps router ids printable and short: they are keys and log fields.
var routerIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// ValidateRouterID checks a router's name.
func ValidateRouterID(id string) error {
	if !routerIDPattern.MatchString(id) {
		return invalid("router_id %q must be 1–128 characters of letters, digits and _.:-", id)
	}
	return nil
}

// Validate checks a report from a router.
func (r *RouterReport) Validate() error {
	if err := ValidateRouterID(r.RouterID); err != nil {
		return err
	}
	if r.StartedAt <= 0 {
		return invalid("started_at must be a positive Unix time in nanoseconds")
	}
	for guid, gen := range r.Applied {
		if err := ValidateGUID("applied process guid", guid); err != nil {
			return err
		}
		if gen < 0 {
			return invalid("applied[%q] must not be negative", guid)
		}
	}
	for i := range r.Telemetry {
		if err := r.Telemetry[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// RouteTelemetry is one router's cumulative counts for the requests it sent to one
// definition of one LRP.
type RouteTelemetry struct {
	ProcessGUID  string `json:"process_guid"`
	DefinitionID string `json:"definition_id"`
	Requests     int64  `json:"requests"`
	// Errors counts 5xx answers, the instance's or the router's own when it could not
	// reach one.
	Errors int64 `json:"errors"`
	// Latency counts requests by duration: Latency[i] those of at most LatencyBounds[i]
	// (and more than the bound before it); the last, those beyond every bound. Not
	// cumulative across buckets, so that counts subtract bucket by bucket.
	Latency []int64 `json:"latency"`
	// DurationUS is the requests' total duration in microseconds.
	DurationUS int64 `json:"duration_us"`
}

func (t *RouteTelemetry) validate() error {
	if err := ValidateGUID("telemetry process_guid", t.ProcessGUID); err != nil {
		return err
	}
	if err := ValidateGUID("telemetry definition_id", t.DefinitionID); err != nil {
		return err
	}
	if len(t.Latency) != len(LatencyBounds)+1 {
		return invalid("telemetry latency must have %d buckets", len(LatencyBounds)+1)
	}
	sum := int64(0)
	for _, n := range t.Latency {
		if n < 0 {
			return invalid("telemetry counts must not be negative")
		}
		sum += n
	}
	if t.DurationUS < 0 || t.Requests < 0 || t.Errors < 0 || t.Errors > t.Requests || sum != t.Requests {
		return invalid("telemetry of %s/%s: requests, errors and latency counts disagree", t.ProcessGUID, t.DefinitionID)
	}
	return nil
}

// LatencyBounds are the upper bounds, in milliseconds, of the routers' latency buckets:
// from 1 ms up by a factor of 2^(1/4) (19 %) to about a minute, so a percentile read from
// them is off by at most that factor, and +300 ms on a p99 of a few milliseconds is seen.
var LatencyBounds = latencyBounds()

func latencyBounds() []float64 {
	var out []float64
	for i := 0; i <= 64; i++ {
		out = append(out, math.Round(math.Pow(2, float64(i)/4)*1000)/1000)
	}
	return out
}

// LatencyBucket is the bucket of a duration in milliseconds.
func LatencyBucket(ms float64) int {
	// The bounds grow geometrically: the index is about 4·log2(ms), then corrected.
	if ms <= 1 {
		return 0
	}
	i := min(int(math.Ceil(4*math.Log2(ms))), len(LatencyBounds))
	for i > 0 && ms <= LatencyBounds[i-1] {
		i--
	}
	for i < len(LatencyBounds) && ms > LatencyBounds[i] {
		i++
	}
	return i
}

// DefaultWeightHeadroom is how much more than an even share of the requests one instance
// may be given by a weight (ROLLOUTS-NEXT.md section 5's capacity guard): 2×.
const DefaultWeightHeadroom = 2.0

// WeightInstances is the capacity guard's arithmetic for a weight of the new definition
// over n instances: the fewest instances of the new definition, and of the others, that
// keep each one's load within headroom times an even share (weight·n/k ≤ headroom·100).
func WeightInstances(weight, n int32, headroom float64) (newMin, oldMin int32) {
	need := func(w int32) int32 {
		if w <= 0 {
			return 0
		}
		return int32(math.Ceil(float64(w)*float64(n)/(100*headroom) - 1e-9))
	}
	return need(weight), need(100 - weight)
}

// CheckWeightCapacity refuses, with the reason, a weight of the new definition that the
// instances able to serve (newK of it, oldK of the others) cannot carry within headroom.
func CheckWeightCapacity(weight, newK, oldK int32, headroom float64) error {
	newMin, oldMin := WeightInstances(weight, newK+oldK, headroom)
	switch {
	case newK < newMin:
		return Errorf(ErrInvalidRequest, "weight %d %% needs %d routable instances of the new definition to keep each within %.1f× an even share of %d instances; it has %d",
			weight, newMin, headroom, newK+oldK, newK)
	case oldK < oldMin:
		return Errorf(ErrInvalidRequest, "weight %d %% leaves %d %% to %d routable instances of the other definitions, which needs %d to keep each within %.1f× an even share",
			weight, 100-weight, oldK, oldMin, headroom)
	}
	return nil
}

// RouterLiveness is how long a router counts as live after its last report (it reports
// every second): a weighted step waits for the acknowledgement of every live router.
const RouterLiveness = 5 * time.Second
