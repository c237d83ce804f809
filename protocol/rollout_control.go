package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The controls of a rollout under way (ROLLOUTS-NEXT.md section 3), on the JSON API's paths
// /v1/rollouts/{pause,resume,abort,set_pace,promote}, through the same lrps.Service calls:
// ResourceNotFound for an unknown LRP; NoRolloutInProgress and InvalidPhase are
// ResourceConflict to a BBS client, with our message (errors.go).

func (s *Server) pauseRollout(ctx context.Context, req *pb.PauseRolloutRequest) (*pb.RolloutControlResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	_, err := s.lrps.Pause(ctx, req.GetProcessGuid())
	return &pb.RolloutControlResponse{}, err
}

func (s *Server) resumeRollout(ctx context.Context, req *pb.ResumeRolloutRequest) (*pb.RolloutControlResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	_, err := s.lrps.Resume(ctx, req.GetProcessGuid())
	return &pb.RolloutControlResponse{}, err
}

// abortRollout stops the rollout and reverts it; the service refuses a reason longer than
// lrps.MaxAbortReason.
func (s *Server) abortRollout(ctx context.Context, req *pb.AbortRolloutRequest) (*pb.RolloutControlResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	_, err := s.lrps.Abort(ctx, req.GetProcessGuid(), req.GetReason())
	return &pb.RolloutControlResponse{}, err
}

// setRolloutPace changes max_in_flight, which must be given; the service checks its range.
func (s *Server) setRolloutPace(ctx context.Context, req *pb.SetRolloutPaceRequest) (*pb.RolloutControlResponse, error) {
	var e fieldErrors
	if req.GetProcessGuid() == "" {
		e.field("process_guid")
	}
	if req.MaxInFlight == nil {
		e.field("max_in_flight")
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	_, err := s.lrps.SetPace(ctx, req.GetProcessGuid(), req.GetMaxInFlight())
	return &pb.RolloutControlResponse{}, err
}

// promoteRollout leaves a manual canary step. No rollout waits at one yet (canary steps are
// refused when a rollout starts), so the service refuses every promote with the phase.
func (s *Server) promoteRollout(ctx context.Context, req *pb.PromoteRolloutRequest) (*pb.RolloutControlResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	_, err := s.lrps.Promote(ctx, req.GetProcessGuid(), req.GetFull())
	return &pb.RolloutControlResponse{}, err
}
