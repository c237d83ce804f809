package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// What a rollout does when it fails (RolloutStrategy.OnFailure, ROLLOUTS-NEXT.md section 4).
const (
	// OnFailureRevert walks every index back to the last-known-good definition.
	OnFailureRevert = "revert"
	// OnFailurePause stops at the failure with everything as it is, for a human.
	OnFailurePause = "pause"
	// OnFailureContinue records the failure and walks on: the index stays on the definition
	// it had (the seeds' given-up index).
	OnFailureContinue = "continue"
)

// How a canary step is left (CanaryStep.Promote).
const (
	PromoteAuto   = "auto"
	PromoteManual = "manual"
)

// What an inconclusive analysis does (RolloutAnalysis.OnInconclusive).
const (
	InconclusivePause    = "pause"
	InconclusiveContinue = "continue"
	InconclusiveFail     = "fail"
)

// Limits of a strategy: a rollout must be able to end, and a definition's steps must fit a
// request.
const (
	// MaxCanarySteps bounds a strategy's canary steps.
	MaxCanarySteps = 100
	// MaxStrategyDurationMS bounds every duration of a strategy (30 days): a pause or a
	// deadline longer than that is a typo, not a plan.
	MaxStrategyDurationMS = 30 * 24 * 60 * 60 * 1000
	// MinIndexDeadlineMS is the shortest index deadline: an instance needs a moment to start.
	MinIndexDeadlineMS = 1000
)

// RolloutStrategy is how a rollout walks (ROLLOUTS-NEXT.md section 1). Every field is
// optional: a rollout's strategy is resolved field by field from the update's, over the
// LRP's default (rollout_strategy), over the server's (ResolveStrategy). Pointers tell "not
// given" from a given zero, which the contract makes explicit (a weight of 0 is a dark
// canary, never "unset").
//
// Its JSON is strict: unknown fields and values of the wrong type are refused, so that a
// misspelt "max_in_fligth" does not silently walk at the default pace.
type RolloutStrategy struct {
	MaxInFlight        *int32           `json:"max_in_flight,omitempty"`
	MinReadyMS         *int64           `json:"min_ready_ms,omitempty"`
	IndexDeadlineMS    *int64           `json:"index_deadline_ms,omitempty"`
	ProgressDeadlineMS *int64           `json:"progress_deadline_ms,omitempty"`
	OnFailure          *string          `json:"on_failure,omitempty"`
	Failure            *FailurePolicy   `json:"failure,omitempty"`
	Canary             *CanaryStrategy  `json:"canary,omitempty"`
	Analysis           *RolloutAnalysis `json:"analysis,omitempty"`
	// Window names a rollout window the rollout may only advance inside.
	Window *string `json:"window,omitempty"`
	// BreakGlass, given per update only, is the reason the update passes a freeze.
	BreakGlass *string `json:"break_glass,omitempty"`
}

// FailurePolicy says when a new definition has failed.
type FailurePolicy struct {
	// MaxCrashes is how often one new instance may crash before its index counts as failed.
	MaxCrashes *int32 `json:"max_crashes,omitempty"`
	// MaxFailedIndices is how many failed indices fail the rollout.
	MaxFailedIndices *int32 `json:"max_failed_indices,omitempty"`
}

// CanaryStrategy is the steps a rollout takes before walking the remaining indices. Its
// steps are one value: a per-update list replaces the LRP's whole list.
type CanaryStrategy struct {
	Steps []CanaryStep `json:"steps"`
}

// CanaryStep is one canary step: Instances is cumulative (that many indices run the new
// definition at the step), Weight the new definition's share of the route's requests in
// percent. A step carries at least one of them.
type CanaryStep struct {
	Instances *int32  `json:"instances,omitempty"`
	Weight    *int32  `json:"weight,omitempty"`
	PauseMS   *int64  `json:"pause_ms,omitempty"`
	Analysis  bool    `json:"analysis,omitempty"`
	Promote   *string `json:"promote,omitempty"`
}

// RolloutAnalysis tunes the comparison of canary and baseline.
type RolloutAnalysis struct {
	IntervalMS        *int64   `json:"interval_ms,omitempty"`
	MinRequests       *int64   `json:"min_requests,omitempty"`
	MaxErrorRateRatio *float64 `json:"max_error_rate_ratio,omitempty"`
	MaxP99DeltaMS     *int64   `json:"max_p99_delta_ms,omitempty"`
	MaxCrashRate      *float64 `json:"max_crash_rate,omitempty"`
	Background        *bool    `json:"background,omitempty"`
	OnInconclusive    *string  `json:"on_inconclusive,omitempty"`
}

// UnmarshalJSON decodes a strategy strictly: unknown fields (at any depth) and values of the
// wrong type are InvalidRequest, naming the field.
func (s *RolloutStrategy) UnmarshalJSON(data []byte) error {
	type plain RolloutStrategy // no UnmarshalJSON: no recursion
	var v plain
	if err := DecodeStrict("strategy", data, &v); err != nil {
		return err
	}
	*s = RolloutStrategy(v)
	return nil
}

// DecodeStrict decodes one JSON value into v (which must not decode itself through
// DecodeStrict, or it recurses), refusing unknown fields at any depth, values of the wrong
// type and data after the value: InvalidRequest, naming the field under what ("strategy"
// names strategy.max_in_flight; "" names the field alone).
func DecodeStrict(what string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return strictDecodeError(what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("%sunexpected data after the object", prefixed(what, ": "))
	}
	return nil
}

// prefixed is what followed by sep, or "" for no what.
func prefixed(what, sep string) string {
	if what == "" {
		return ""
	}
	return what + sep
}

func strictDecodeError(what string, err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "value"
		}
		return invalid("%s%s: expected %s, got JSON %s", prefixed(what, "."), field, DescribeJSONType(typeErr.Type.String()), typeErr.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalid("%sunknown field %s", prefixed(what, ": "), msg)
	}
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	return invalid("%s%v", prefixed(what, ": "), err)
}

// Validate checks every field that is given. It does not ask whether this server can carry
// the strategy out (Supported does).
func (s *RolloutStrategy) Validate() error {
	if s == nil {
		return nil
	}
	if s.MaxInFlight != nil && *s.MaxInFlight < 1 {
		return invalid("strategy.max_in_flight must be at least 1")
	}
	if s.MaxInFlight != nil && *s.MaxInFlight > MaxInstances {
		return invalid("strategy.max_in_flight must be at most %d", MaxInstances)
	}
	if err := validateDuration("strategy.min_ready_ms", s.MinReadyMS, 0); err != nil {
		return err
	}
	if err := validateDuration("strategy.index_deadline_ms", s.IndexDeadlineMS, MinIndexDeadlineMS); err != nil {
		return err
	}
	if err := validateDuration("strategy.progress_deadline_ms", s.ProgressDeadlineMS, 0); err != nil {
		return err
	}
	if err := validateWord("strategy.on_failure", s.OnFailure, OnFailureRevert, OnFailurePause, OnFailureContinue); err != nil {
		return err
	}
	if f := s.Failure; f != nil {
		if f.MaxCrashes != nil && *f.MaxCrashes < 1 {
			return invalid("strategy.failure.max_crashes must be at least 1")
		}
		if f.MaxFailedIndices != nil && *f.MaxFailedIndices < 1 {
			return invalid("strategy.failure.max_failed_indices must be at least 1")
		}
	}
	if err := s.Canary.validate(); err != nil {
		return err
	}
	if err := s.Analysis.validate(); err != nil {
		return err
	}
	if s.Window != nil {
		if err := ValidateWindowName("strategy.window", *s.Window); err != nil {
			return err
		}
	}
	if s.BreakGlass != nil && strings.TrimSpace(*s.BreakGlass) == "" {
		return invalid("strategy.break_glass must give a reason")
	}
	if s.BreakGlass != nil && len(*s.BreakGlass) > MaxFreezeReason {
		return invalid("strategy.break_glass is %d bytes, more than %d", len(*s.BreakGlass), MaxFreezeReason)
	}
	return nil
}

func (c *CanaryStrategy) validate() error {
	if c == nil {
		return nil
	}
	if len(c.Steps) == 0 {
		return invalid("strategy.canary.steps must have at least one step")
	}
	if len(c.Steps) > MaxCanarySteps {
		return invalid("strategy.canary.steps has %d steps, more than %d", len(c.Steps), MaxCanarySteps)
	}
	var last int32
	for i, st := range c.Steps {
		field := fmt.Sprintf("strategy.canary.steps[%d]", i)
		if st.Instances == nil && st.Weight == nil {
			return invalid("%s must have instances or weight", field)
		}
		if st.Instances != nil {
			if *st.Instances < 1 || *st.Instances > MaxInstances {
				return invalid("%s.instances must be between 1 and %d", field, MaxInstances)
			}
			if *st.Instances < last {
				return invalid("%s.instances is %d, fewer than the step before (%d): instances are cumulative", field, *st.Instances, last)
			}
			last = *st.Instances
		}
		if st.Weight != nil && (*st.Weight < 0 || *st.Weight > 100) {
			return invalid("%s.weight must be between 0 and 100", field)
		}
		if err := validateDuration(field+".pause_ms", st.PauseMS, 0); err != nil {
			return err
		}
		if err := validateWord(field+".promote", st.Promote, PromoteManual, PromoteAuto); err != nil {
			return err
		}
	}
	return nil
}

func (a *RolloutAnalysis) validate() error {
	if a == nil {
		return nil
	}
	if err := validateDuration("strategy.analysis.interval_ms", a.IntervalMS, 1); err != nil {
		return err
	}
	if a.MinRequests != nil && *a.MinRequests < 0 {
		return invalid("strategy.analysis.min_requests must not be negative")
	}
	if err := validateRatio("strategy.analysis.max_error_rate_ratio", a.MaxErrorRateRatio); err != nil {
		return err
	}
	if err := validateDuration("strategy.analysis.max_p99_delta_ms", a.MaxP99DeltaMS, 0); err != nil {
		return err
	}
	if err := validateRatio("strategy.analysis.max_crash_rate", a.MaxCrashRate); err != nil {
		return err
	}
	return validateWord("strategy.analysis.on_inconclusive", a.OnInconclusive, InconclusivePause, InconclusiveContinue, InconclusiveFail)
}

// validateRatio checks a ratio: not negative, and a finite number (the BBS protocol's doubles
// can carry NaN and infinities, which JSON cannot).
func validateRatio(field string, v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) {
		return invalid("%s must be a finite number", field)
	}
	if *v < 0 {
		return invalid("%s must not be negative", field)
	}
	return nil
}

func validateDuration(field string, ms *int64, least int64) error {
	if ms == nil {
		return nil
	}
	if *ms < least {
		if least == 0 {
			return invalid("%s must not be negative", field)
		}
		return invalid("%s must be at least %d", field, least)
	}
	if *ms > MaxStrategyDurationMS {
		return invalid("%s must be at most %d (30 days)", field, int64(MaxStrategyDurationMS))
	}
	return nil
}

func validateWord(field string, v *string, allowed ...string) error {
	if v == nil {
		return nil
	}
	for _, a := range allowed {
		if *v == a {
			return nil
		}
	}
	return invalid("%s must be one of %q, not %q", field, allowed, *v)
}

// DefaultRolloutStrategy is the contract's default of defaults (ROLLOUTS-NEXT.md section 1):
// a server's flags override it (the per-server layer of ResolveStrategy).
func DefaultRolloutStrategy() RolloutStrategy {
	return RolloutStrategy{
		MaxInFlight:        ptr(int32(1)),
		MinReadyMS:         ptr(int64(0)),
		IndexDeadlineMS:    ptr(int64(300_000)),
		ProgressDeadlineMS: ptr(int64(0)),
		OnFailure:          ptr(OnFailureRevert),
		Failure:            &FailurePolicy{MaxCrashes: ptr(int32(3)), MaxFailedIndices: ptr(int32(1))},
		Analysis: &RolloutAnalysis{
			IntervalMS: ptr(int64(10_000)), MinRequests: ptr(int64(100)), MaxErrorRateRatio: ptr(2.0),
			MaxP99DeltaMS: ptr(int64(250)), MaxCrashRate: ptr(0.0), Background: ptr(false),
			OnInconclusive: ptr(InconclusivePause),
		},
	}
}

func ptr[T any](v T) *T { return &v }

// ResolveStrategy resolves a rollout's strategy field by field: the first layer that gives a
// field wins (per update, then the LRP's default, then the server's). The failure and
// analysis objects resolve field by field too; canary steps are one value. BreakGlass is
// taken from the first layer only: it is a per-update decision, never a default.
func ResolveStrategy(layers ...*RolloutStrategy) RolloutStrategy {
	var out RolloutStrategy
	for i, l := range layers {
		if l == nil {
			continue
		}
		first(&out.MaxInFlight, l.MaxInFlight)
		first(&out.MinReadyMS, l.MinReadyMS)
		first(&out.IndexDeadlineMS, l.IndexDeadlineMS)
		first(&out.ProgressDeadlineMS, l.ProgressDeadlineMS)
		first(&out.OnFailure, l.OnFailure)
		first(&out.Window, l.Window)
		if i == 0 {
			first(&out.BreakGlass, l.BreakGlass)
		}
		if out.Canary == nil && l.Canary != nil {
			c := CanaryStrategy{Steps: append([]CanaryStep(nil), l.Canary.Steps...)}
			out.Canary = &c
		}
		if f := l.Failure; f != nil {
			if out.Failure == nil {
				out.Failure = &FailurePolicy{}
			}
			first(&out.Failure.MaxCrashes, f.MaxCrashes)
			first(&out.Failure.MaxFailedIndices, f.MaxFailedIndices)
		}
		if a := l.Analysis; a != nil {
			if out.Analysis == nil {
				out.Analysis = &RolloutAnalysis{}
			}
			o := out.Analysis
			first(&o.IntervalMS, a.IntervalMS)
			first(&o.MinRequests, a.MinRequests)
			first(&o.MaxErrorRateRatio, a.MaxErrorRateRatio)
			first(&o.MaxP99DeltaMS, a.MaxP99DeltaMS)
			first(&o.MaxCrashRate, a.MaxCrashRate)
			first(&o.Background, a.Background)
			first(&o.OnInconclusive, a.OnInconclusive)
		}
	}
	return out
}

// first sets *dst to a copy of *v unless dst is set already or v is nil.
func first[T any](dst **T, v *T) {
	if *dst == nil && v != nil {
		c := *v
		*dst = &c
	}
}

// ValidateDefault checks a strategy given as an LRP's default (rollout_strategy): as
// Validate, and without break_glass, which passes a freeze for one update only.
func (s *RolloutStrategy) ValidateDefault() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s != nil && s.BreakGlass != nil {
		return invalid("rollout_strategy.break_glass: a freeze is passed per update (strategy.break_glass), not by default")
	}
	return nil
}

// Supported refuses, with InvalidRequest, what a valid strategy asks for that the walk engine
// does not carry out yet, rather than accept it and walk otherwise. It checks the fields a
// request gives (a strategy as given, not as resolved). Every field is carried out today; a
// window's existence is the store's to check, in the transaction that names it.
func (s *RolloutStrategy) Supported() error {
	return nil
}

// MaxInFlightOr is the resolved max_in_flight, or def when the strategy has none.
func (s *RolloutStrategy) MaxInFlightOr(def int) int {
	if s == nil || s.MaxInFlight == nil {
		return def
	}
	return int(*s.MaxInFlight)
}

// IndexDeadlineMSOr is the resolved index_deadline_ms, or def when the strategy has none.
func (s *RolloutStrategy) IndexDeadlineMSOr(def int64) int64 {
	if s == nil || s.IndexDeadlineMS == nil {
		return def
	}
	return *s.IndexDeadlineMS
}
