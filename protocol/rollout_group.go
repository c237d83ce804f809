package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// Rollout groups (ROLLOUTS-NEXT.md section 6) on the JSON API's paths
// /v1/rollout_groups/{create,get,list,pause,resume,abort}, through the same lrps.Service and
// store calls, validated by the model as at the JSON API. Messages and model correspond field
// for field.

// GroupStore is what the group routes read of the database.
type GroupStore interface {
	RolloutGroup(ctx context.Context, id string) (*model.RolloutGroup, error)
	RolloutGroups(ctx context.Context) ([]model.RolloutGroup, error)
}

func (s *Server) createRolloutGroup(ctx context.Context, req *pb.CreateRolloutGroupRequest) (*pb.RolloutGroupResponse, error) {
	spec := groupSpecToModel(req)
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	g, err := s.lrps.CreateGroup(ctx, spec)
	return groupResponse(g, err)
}

func (s *Server) rolloutGroup(ctx context.Context, req *pb.RolloutGroupRequest) (*pb.RolloutGroupResponse, error) {
	if err := model.ValidateGUID("group_id", req.GetGroupId()); err != nil {
		return nil, err
	}
	if s.groups == nil {
		return nil, model.Errorf(model.ErrUnavailable, "this server does not read rollout groups")
	}
	g, err := s.groups.RolloutGroup(ctx, req.GetGroupId())
	return groupResponse(g, err)
}

func (s *Server) rolloutGroups(ctx context.Context, _ *pb.RolloutGroupsRequest) (*pb.RolloutGroupsResponse, error) {
	if s.groups == nil {
		return nil, model.Errorf(model.ErrUnavailable, "this server does not read rollout groups")
	}
	gs, err := s.groups.RolloutGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.RolloutGroupsResponse{RolloutGroups: make([]*pb.RolloutGroup, len(gs))}
	for i := range gs {
		out.RolloutGroups[i] = groupFromModel(&gs[i])
	}
	return out, nil
}

// controlRolloutGroup is pause, resume or abort (kind).
func (s *Server) controlRolloutGroup(kind string) func(context.Context, *pb.RolloutGroupRequest) (*pb.RolloutGroupResponse, error) {
	return func(ctx context.Context, req *pb.RolloutGroupRequest) (*pb.RolloutGroupResponse, error) {
		if err := model.ValidateGUID("group_id", req.GetGroupId()); err != nil {
			return nil, err
		}
		g, err := s.lrps.ControlGroup(ctx, req.GetGroupId(), kind, req.GetReason())
		return groupResponse(g, err)
	}
}

func groupResponse(g *model.RolloutGroup, err error) (*pb.RolloutGroupResponse, error) {
	if err != nil {
		return nil, err
	}
	return &pb.RolloutGroupResponse{RolloutGroup: groupFromModel(g)}, nil
}

// groupSpecToModel is a create request as the model's spec; the model shares no memory with it.
func groupSpecToModel(r *pb.CreateRolloutGroupRequest) model.RolloutGroupSpec {
	spec := model.RolloutGroupSpec{GroupID: r.GetGroupId(), Strategy: strategyToModel(r.GetStrategy()),
		PauseBetweenWavesMS: r.GetPauseBetweenWavesMs(), MaxConcurrentLRPs: r.GetMaxConcurrentLrps(),
		MaxConcurrentPerCell: r.GetMaxConcurrentPerCell(), MaxFailedPercent: r.GetMaxFailedPercent(), Window: r.GetWindow()}
	if sel := r.GetSelector(); sel != nil {
		spec.Selector = model.RolloutGroupSelector{Domain: sel.GetDomain(), ProcessGUIDs: append([]string(nil), sel.GetProcessGuids()...)}
		if len(sel.GetMetricTags()) > 0 {
			spec.Selector.MetricTags = make(map[string]string, len(sel.GetMetricTags()))
			for k, v := range sel.GetMetricTags() {
				spec.Selector.MetricTags[k] = v
			}
		}
	}
	if p := r.GetPatch(); p != nil {
		spec.Patch = model.DefinitionPatch{RootFS: clone(p.RootFs), Env: envToModel(p.GetEnvironmentVariables())}
	}
	for _, w := range r.GetWaves() {
		spec.Waves = append(spec.Waves, model.RolloutWave{Percent: w.GetPercent()})
	}
	return spec
}

// groupSpecFromModel is the model's spec as a create request.
func groupSpecFromModel(s *model.RolloutGroupSpec) *pb.CreateRolloutGroupRequest {
	r := &pb.CreateRolloutGroupRequest{GroupId: s.GroupID, Strategy: strategyFromModel(s.Strategy),
		PauseBetweenWavesMs: s.PauseBetweenWavesMS, MaxConcurrentLrps: s.MaxConcurrentLRPs,
		MaxConcurrentPerCell: s.MaxConcurrentPerCell, MaxFailedPercent: s.MaxFailedPercent, Window: s.Window,
		Selector: &pb.RolloutGroupSelector{Domain: s.Selector.Domain, ProcessGuids: append([]string(nil), s.Selector.ProcessGUIDs...)},
		Patch:    &pb.DefinitionPatch{RootFs: clone(s.Patch.RootFS), EnvironmentVariables: envFromModel(s.Patch.Env)},
	}
	if len(s.Selector.MetricTags) > 0 {
		r.Selector.MetricTags = make(map[string]string, len(s.Selector.MetricTags))
		for k, v := range s.Selector.MetricTags {
			r.Selector.MetricTags[k] = v
		}
	}
	for _, w := range s.Waves {
		r.Waves = append(r.Waves, &pb.RolloutWave{Percent: w.Percent})
	}
	return r
}

// groupFromModel is a group as our message.
func groupFromModel(g *model.RolloutGroup) *pb.RolloutGroup {
	out := &pb.RolloutGroup{GroupId: g.GroupID, State: g.State, Reason: g.Reason, Wave: int32(g.Wave),
		Spec: groupSpecFromModel(&g.Spec), WaveOpensAt: g.WaveOpensAt, CreatedAt: g.CreatedAt, FinishedAt: g.FinishedAt,
		Budgets: &pb.RolloutGroupBudget{LrpsInUse: int32(g.Budgets.LRPsInUse), MaxConcurrentLrps: g.Budgets.MaxConcurrentLRPs,
			PerCellMaxInUse: int32(g.Budgets.PerCellMaxInUse), MaxConcurrentPerCell: g.Budgets.MaxConcurrentPerCell}}
	for _, w := range g.Waves {
		pw := &pb.RolloutGroupWave{Percent: w.Percent, State: w.State, Counts: make(map[string]int32, len(w.Counts))}
		for k, v := range w.Counts {
			pw.Counts[k] = int32(v)
		}
		for _, m := range w.Members {
			pw.Members = append(pw.Members, &pb.RolloutGroupMember{ProcessGuid: m.ProcessGUID, State: m.State,
				DefinitionId: m.DefinitionID, RolloutId: m.RolloutID, Reason: m.Reason})
		}
		out.Waves = append(out.Waves, pw)
	}
	return out
}
