package protocol

import (
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// Rollout strategies (ROLLOUTS-NEXT.md section 1) between our RolloutStrategy message and the
// model, field for field. Both tell "not given" from a given zero (proto3 optional scalars,
// model pointers), so a strategy reads back exactly as it was given and resolves the same way
// whichever API it came through. Validation is the model's (Validate, ValidateDefault,
// Supported), as at the JSON API.

// strategyToModel is s as the model holds it; nil for none. The model shares no memory with s.
func strategyToModel(s *pb.RolloutStrategy) *model.RolloutStrategy {
	if s == nil {
		return nil
	}
	m := &model.RolloutStrategy{
		MaxInFlight:        clone(s.MaxInFlight),
		MinReadyMS:         clone(s.MinReadyMs),
		IndexDeadlineMS:    clone(s.IndexDeadlineMs),
		ProgressDeadlineMS: clone(s.ProgressDeadlineMs),
		OnFailure:          clone(s.OnFailure),
		Window:             clone(s.Window),
		BreakGlass:         clone(s.BreakGlass),
	}
	if f := s.GetFailure(); f != nil {
		m.Failure = &model.FailurePolicy{MaxCrashes: clone(f.MaxCrashes), MaxFailedIndices: clone(f.MaxFailedIndices)}
	}
	if c := s.GetCanary(); c != nil {
		m.Canary = &model.CanaryStrategy{}
		for _, st := range c.GetSteps() {
			if st == nil {
				st = &pb.CanaryStep{}
			}
			m.Canary.Steps = append(m.Canary.Steps, model.CanaryStep{Instances: clone(st.Instances), Weight: clone(st.Weight),
				PauseMS: clone(st.PauseMs), Analysis: st.GetAnalysis(), Promote: clone(st.Promote)})
		}
	}
	if a := s.GetAnalysis(); a != nil {
		m.Analysis = &model.RolloutAnalysis{IntervalMS: clone(a.IntervalMs), MinRequests: clone(a.MinRequests),
			MaxErrorRateRatio: clone(a.MaxErrorRateRatio), MaxP99DeltaMS: clone(a.MaxP99DeltaMs), MaxCrashRate: clone(a.MaxCrashRate),
			Background: clone(a.Background), OnInconclusive: clone(a.OnInconclusive)}
	}
	return m
}

// strategyFromModel is m as our message; nil for none. The message shares no memory with m.
func strategyFromModel(m *model.RolloutStrategy) *pb.RolloutStrategy {
	if m == nil {
		return nil
	}
	s := &pb.RolloutStrategy{
		MaxInFlight:        clone(m.MaxInFlight),
		MinReadyMs:         clone(m.MinReadyMS),
		IndexDeadlineMs:    clone(m.IndexDeadlineMS),
		ProgressDeadlineMs: clone(m.ProgressDeadlineMS),
		OnFailure:          clone(m.OnFailure),
		Window:             clone(m.Window),
		BreakGlass:         clone(m.BreakGlass),
	}
	if f := m.Failure; f != nil {
		s.Failure = &pb.FailurePolicy{MaxCrashes: clone(f.MaxCrashes), MaxFailedIndices: clone(f.MaxFailedIndices)}
	}
	if c := m.Canary; c != nil {
		s.Canary = &pb.CanaryStrategy{Steps: make([]*pb.CanaryStep, len(c.Steps))}
		for i, st := range c.Steps {
			s.Canary.Steps[i] = &pb.CanaryStep{Instances: clone(st.Instances), Weight: clone(st.Weight),
				PauseMs: clone(st.PauseMS), Analysis: st.Analysis, Promote: clone(st.Promote)}
		}
	}
	if a := m.Analysis; a != nil {
		s.Analysis = &pb.RolloutAnalysis{IntervalMs: clone(a.IntervalMS), MinRequests: clone(a.MinRequests),
			MaxErrorRateRatio: clone(a.MaxErrorRateRatio), MaxP99DeltaMs: clone(a.MaxP99DeltaMS),
			MaxCrashRate: clone(a.MaxCrashRate), Background: clone(a.Background), OnInconclusive: clone(a.OnInconclusive)}
	}
	return s
}

// requestStrategy is the strategy a request gives for its own rollout (rollback, activate),
// checked as the JSON API checks it: valid, and carried out by this server. nil for none.
func requestStrategy(s *pb.RolloutStrategy) (*model.RolloutStrategy, error) {
	m := strategyToModel(s)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := m.Supported(); err != nil {
		return nil, err
	}
	return m, nil
}

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
