package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// DesiredLRPStore is what the desired LRP routes (and the LRP deployment routes' creation)
// read and write of the store directly; their changes go through lrps.Service.
type DesiredLRPStore interface {
	DesireLRP(ctx context.Context, d *model.DesiredLRP) (*model.DesiredLRP, error)
	DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error)
	EachDesiredLRP(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRP) error) error
	EachSchedulingInfo(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRPSchedulingInfo) error) error
	DesiredLRPRoutingInfos(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRP, error)
}

// desireLRP creates an LRP (desire.r2): BBS's validation, then ours, then one transaction.
// The definition's own id (our field 1000) defaults to the process guid.
func (s *Server) desireLRP(ctx context.Context, req *pb.DesireLRPRequest) (*pb.DesiredLRPLifecycleResponse, error) {
	if req.GetDesiredLrp() == nil {
		return nil, invalidFields("desired_lrp")
	}
	if err := validateDesiredLRP(req.GetDesiredLrp()); err != nil {
		return nil, err
	}
	d := desiredToModel(req.GetDesiredLrp())
	if err := d.Validate(); err != nil {
		return nil, err
	}
	_, err := s.store.DesireLRP(ctx, d)
	return &pb.DesiredLRPLifecycleResponse{}, err
}

// desiredLRPByProcessGUID answers get_by_process_guid: .r3 with the stored (V3) model, .r2
// (v2) downgraded.
func (s *Server) desiredLRPByProcessGUID(ctx context.Context, req *pb.DesiredLRPByProcessGuidRequest, v2 bool) (*pb.DesiredLRPResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	m, err := s.store.DesiredLRPByProcessGUID(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	d, err := served(m, v2)
	if err != nil {
		return nil, err
	}
	return &pb.DesiredLRPResponse{DesiredLrp: d}, nil
}

// desiredLRPs answers desired_lrps/list (.r3, or .r2 when v2).
// desiredLRPs streams the list (listRoute) as the store reads it, each LRP as served at the
// revision v2 says.
func (s *Server) desiredLRPs(v2 bool) func(context.Context, *pb.DesiredLRPsRequest, func(entry) error) error {
	return func(ctx context.Context, req *pb.DesiredLRPsRequest, yield func(entry) error) error {
		return s.store.EachDesiredLRP(ctx, filterOf(req), func(m *model.DesiredLRP) error {
			d, err := served(m, v2)
			if err != nil {
				return err
			}
			return yield(protoEntry{d})
		})
	}
}

// served is what BBS does to a DesiredLRP it reads: the revision's downgrade, then
// PopulateMetricsGuid.
func served(m *model.DesiredLRP, v2 bool) (*pb.DesiredLRP, error) {
	d, err := desiredFromModel(m)
	if err != nil {
		return nil, err
	}
	if v2 {
		d = downgradeToV2(d)
	}
	populateMetricsGUID(d)
	return d, nil
}

func filterOf(req *pb.DesiredLRPsRequest) model.DesiredLRPFilter {
	return model.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGUIDs: req.GetProcessGuids(), AppGUIDs: req.GetAppGuids()}
}

// schedulingInfos lists scheduling infos in one query (Cloud Controller's sync reads every
// LRP of cf-apps each 30 s, within a 10 s timeout).
func (s *Server) schedulingInfos(ctx context.Context, req *pb.DesiredLRPsRequest, yield func(entry) error) error {
	return s.store.EachSchedulingInfo(ctx, filterOf(req), func(info *model.DesiredLRPSchedulingInfo) error {
		return yield(protoEntry{schedulingInfoFromModel(info)})
	})
}

func (s *Server) schedulingInfoByProcessGUID(ctx context.Context, req *pb.DesiredLRPByProcessGuidRequest) (*pb.DesiredLRPSchedulingInfoByProcessGuidResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	var found *pb.DesiredLRPSchedulingInfo
	err := s.store.EachSchedulingInfo(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{req.GetProcessGuid()}},
		func(info *model.DesiredLRPSchedulingInfo) error {
			found = schedulingInfoFromModel(info)
			return nil
		})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, model.Errorf(model.ErrResourceNotFound, "desired LRP %q not found", req.GetProcessGuid())
	}
	return &pb.DesiredLRPSchedulingInfoByProcessGuidResponse{DesiredLrpSchedulingInfo: found}, nil
}

// routingInfos answers desired_lrp_routing_infos/list; BBS honours only the process guids.
func (s *Server) routingInfos(ctx context.Context, req *pb.DesiredLRPsRequest) (*pb.DesiredLRPsResponse, error) {
	ms, err := s.store.DesiredLRPRoutingInfos(ctx, model.DesiredLRPFilter{ProcessGUIDs: req.GetProcessGuids()})
	if err != nil {
		return nil, err
	}
	resp := &pb.DesiredLRPsResponse{DesiredLrps: make([]*pb.DesiredLRP, len(ms))}
	for i := range ms {
		resp.DesiredLrps[i] = routingInfoFromModel(&ms[i])
	}
	return resp, nil
}

// updateDesiredLRP changes what the update carries, bumping the modification tag; with our
// definition (field 1000) it starts a rolling update exactly as the JSON API's update does
// (ResourceConflict, with our message, while another runs).
func (s *Server) updateDesiredLRP(ctx context.Context, req *pb.UpdateDesiredLRPRequest) (*pb.DesiredLRPLifecycleResponse, error) {
	if err := validateUpdate(req); err != nil {
		return nil, err
	}
	pu := req.GetUpdate()
	if pu == nil {
		pu = &pb.DesiredLRPUpdate{}
	}
	if def := pu.GetDefinition(); def != nil {
		dropLRPFields(def)
		if err := validateDefinition(def); err != nil {
			return nil, err
		}
	}
	u := updateToModel(pu)
	if err := u.Validate(); err != nil {
		return nil, err
	}
	if pu.ImageUsername != nil {
		if err := s.withImageCredentials(ctx, req.GetProcessGuid(), pu, u); err != nil {
			return nil, err
		}
	}
	_, err := s.lrps.Update(ctx, req.GetProcessGuid(), u, false)
	return &pb.DesiredLRPLifecycleResponse{}, err
}

// withImageCredentials applies the update's image credentials, which BBS writes into the
// LRP's run info, to the definition they concern: the update's new definition if it brings
// one, else the active definition, whose protobuf the update then rewrites (refused as a
// conflict should another definition become active meanwhile).
func (s *Server) withImageCredentials(ctx context.Context, guid string, pu *pb.DesiredLRPUpdate, u *model.DesiredLRPUpdate) error {
	var def *pb.LRPDefinition
	if pu.GetDefinition() != nil {
		def = pu.GetDefinition()
	} else {
		cur, err := s.store.DesiredLRPByProcessGUID(ctx, guid)
		if err != nil {
			return err
		}
		if def, err = definitionFromModel(&cur.LRPDefinition); err != nil {
			return err
		}
	}
	with := definitionToModel(withCredentials(def, pu.GetImageUsername(), pu.GetImagePassword()))
	if u.Definition != nil {
		u.Definition = &with
		return nil
	}
	u.ActiveDefinition = &model.DefinitionProtobuf{DefinitionID: def.GetDefinitionId(), Protobuf: with.Protobuf}
	return nil
}

func withCredentials(def *pb.LRPDefinition, username, password string) *pb.LRPDefinition {
	c := proto.CloneOf(def)
	c.ImageUsername, c.ImagePassword = username, password
	return c
}

// removeDesiredLRP deletes the LRP and stops its instances.
func (s *Server) removeDesiredLRP(ctx context.Context, req *pb.RemoveDesiredLRPRequest) (*pb.DesiredLRPLifecycleResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	return &pb.DesiredLRPLifecycleResponse{}, s.lrps.Remove(ctx, req.GetProcessGuid())
}

// cancelUpdate walks the instances already updated back to the previous definition (seed
// 001); ResourceConflict, with our message, when no update is in progress.
func (s *Server) cancelUpdate(ctx context.Context, req *pb.CancelUpdateDesiredLRPRequest) (*pb.DesiredLRPLifecycleResponse, error) {
	if err := validateProcessGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	_, err := s.lrps.CancelUpdate(ctx, req.GetProcessGuid())
	return &pb.DesiredLRPLifecycleResponse{}, err
}

// rollback rolls the LRP to a definition it ran before, while the store keeps it (seed 001),
// walking as the request's strategy says (over the LRP's and the server's).
func (s *Server) rollback(ctx context.Context, req *pb.RollbackDesiredLRPRequest) (*pb.DesiredLRPLifecycleResponse, error) {
	if err := validateRollout(req.GetProcessGuid(), req.GetDefinitionId()); err != nil {
		return nil, err
	}
	strategy, err := requestStrategy(req.GetStrategy())
	if err != nil {
		return nil, err
	}
	_, err = s.lrps.StartRollout(ctx, rolloutTo(req.GetProcessGuid(), req.GetDefinitionId(), model.RolloutKindRollback, false, strategy))
	return &pb.DesiredLRPLifecycleResponse{}, err
}

// v3 and v2 serve a desired-LRP read at a revision: the stored V3 model, or V2 (no image
// layers).
func v3[Req, Resp any](fn func(context.Context, Req, bool) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) { return fn(ctx, req, false) }
}

func v2[Req, Resp any](fn func(context.Context, Req, bool) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) { return fn(ctx, req, true) }
}
