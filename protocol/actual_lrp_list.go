package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// ActualLRPStore is what the instance routes read of the store directly; retiring an
// instance goes through lrps.Service.
type ActualLRPStore interface {
	EachActualLRP(ctx context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error
	ActualLRPGroupByProcessGUIDAndIndex(ctx context.Context, guid string, index int32) (*model.ActualLRPGroup, error)
}

// The instance routes of BBS's clients: the lists (Cloud Controller, route-emitter, cfdot,
// ssh-proxy, the rep), the deprecated groups (cfdot) and retire (Cloud Controller, cfdot).
//
// Two instances at one index. A stock BBS keeps one ORDINARY instance per index (beside the
// EVACUATING and SUSPECT records of evacuations and vanished cells); during one of our
// rollouts an index holds the old definition's instance and the new one's, until the walk
// retires the old (BBS-PROTOCOL.md §5.4, risk 1). A stock client asking about one LRP's
// indices cannot tell them apart: ssh-proxy refuses an index with two instances, Cloud
// Controller's instance reporter keeps the last one listed and its process stats the newest.
// So the lists scoped to LRPs — actual_lrps/list with a process_guid and no definition_id
// (Cloud Controller's and ssh-proxy's queries) and list_by_process_guids — answer, of an
// index's ORDINARY instances, only the one that serves it (servesBetter): while the new
// definition's instance starts, the old one, RUNNING; once the new one runs and the old
// retires, the new one. The lists across LRPs (by cell, by domain, of the whole fleet:
// route-emitter, cfdot, the rep) answer every instance: route-emitter keys routes by instance
// guid and must route to both while both run, or a rollout would drop routes, and a cell
// must see each instance it runs. A client that names a definition_id (ours, field 1000)
// gets that definition's instances whatever else runs. Every instance carries its
// definition_id (ActualLRPKey field 1000), so our clients tell the two apart. The groups are
// one per (process guid, definition id, index), as seed 000 specifies, and the event streams
// report every instance.

// actualLRPs serves POST /v1/actual_lrps/list. Empty filters match everything; index has
// explicit presence (BBS's request takes index 0 for a filter only when it is sent).
func (s *Server) actualLRPs(ctx context.Context, req *pb.ActualLRPsRequest, yield func(entry) error) error {
	f := model.ActualLRPFilter{Domain: req.GetDomain(), CellID: req.GetCellId(), ProcessGUID: req.GetProcessGuid(),
		DefinitionID: req.GetDefinitionId()}
	if req.Index != nil {
		if req.GetIndex() < 0 {
			return nil // no instance has one (and to the store, a negative index is no filter)
		}
		i := req.GetIndex()
		f.Index = &i
	}
	each := func(fn func(*model.ActualLRP) error) error { return s.store.EachActualLRP(ctx, f, fn) }
	emit := func(a *model.ActualLRP) error { return yield(instanceEntry{a}) }
	if f.ProcessGUID != "" && f.DefinitionID == "" {
		return eachServing(each, emit)
	}
	return each(emit)
}

// actualLRPsByProcessGuids serves POST /v1/actual_lrps/list_by_process_guids: the instances
// of each LRP named, one serving instance per index (see above).
func (s *Server) actualLRPsByProcessGuids(ctx context.Context, req *pb.ActualLRPsByProcessGuidsRequest, yield func(entry) error) error {
	if len(req.GetProcessGuids()) == 0 {
		return model.Errorf(model.ErrInvalidRequest, "process_guids must not be empty") // BBS's words
	}
	emit := func(a *model.ActualLRP) error { return yield(instanceEntry{a}) }
	seen := make(map[string]bool, len(req.GetProcessGuids()))
	for _, guid := range req.GetProcessGuids() {
		if guid == "" || seen[guid] { // to the store, an empty guid is no filter
			continue
		}
		seen[guid] = true
		err := eachServing(func(fn func(*model.ActualLRP) error) error {
			return s.store.EachActualLRP(ctx, model.ActualLRPFilter{ProcessGUID: guid}, fn)
		}, emit)
		if err != nil {
			return err
		}
	}
	return nil
}

// eachServing yields what each walks, except that of the ORDINARY instances at one index of
// an LRP only the one serving it is yielded (the other presences all are). The store lists
// an index's instances next to each other, so an index is complete when the next begins.
func eachServing(each func(fn func(*model.ActualLRP) error) error, yield func(*model.ActualLRP) error) error {
	var slot []model.ActualLRP
	flush := func() error {
		best := -1
		for i := range slot {
			if slot[i].Presence == model.PresenceOrdinary && (best < 0 || servesBetter(&slot[i], &slot[best])) {
				best = i
			}
		}
		for i := range slot {
			if slot[i].Presence != model.PresenceOrdinary || i == best {
				if err := yield(&slot[i]); err != nil {
					return err
				}
			}
		}
		slot = slot[:0]
		return nil
	}
	err := each(func(a *model.ActualLRP) error {
		if len(slot) > 0 && (slot[0].ProcessGUID != a.ProcessGUID || slot[0].Index != a.Index) {
			if err := flush(); err != nil {
				return err
			}
		}
		slot = append(slot, *a)
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// servesBetter reports whether a serves its index better than b, another instance at the
// same index: a routable one first, then by state (RUNNING, CLAIMED, UNCLAIMED, CRASHED),
// the one that entered its state last among equals (the newer definition's, in a rollout).
func servesBetter(a, b *model.ActualLRP) bool {
	if ra, rb := serving(a), serving(b); ra != rb {
		return ra > rb
	}
	return a.Since > b.Since
}

func serving(a *model.ActualLRP) int {
	switch {
	case a.Routable():
		return 4
	case a.State == model.StateRunning:
		return 3
	case a.State == model.StateClaimed:
		return 2
	case a.State == model.StateUnclaimed:
		return 1
	}
	return 0
}

// actualLRPGroups serves POST /v1/actual_lrp_groups/list (deprecated; cfdot): one group per
// (process guid, definition id, index), streamed as the fleet's instances are.
func (s *Server) actualLRPGroups(ctx context.Context, req *pb.ActualLRPGroupsRequest, yield func(entry) error) error {
	return model.EachActualLRPGroup(func(fn func(*model.ActualLRP) error) error {
		return s.store.EachActualLRP(ctx, model.ActualLRPFilter{Domain: req.GetDomain(), CellID: req.GetCellId()}, fn)
	}, func(g *model.ActualLRPGroup) error { return yield(protoEntry{actualLRPGroup(g)}) })
}

// actualLRPGroupsByProcessGuid serves POST /v1/actual_lrp_groups/list_by_process_guid
// (deprecated).
func (s *Server) actualLRPGroupsByProcessGuid(ctx context.Context, req *pb.ActualLRPGroupsByProcessGuidRequest, yield func(entry) error) error {
	if req.GetProcessGuid() == "" {
		return invalidFields("process_guid")
	}
	return model.EachActualLRPGroup(func(fn func(*model.ActualLRP) error) error {
		return s.store.EachActualLRP(ctx, model.ActualLRPFilter{ProcessGUID: req.GetProcessGuid()}, fn)
	}, func(g *model.ActualLRPGroup) error { return yield(protoEntry{actualLRPGroup(g)}) })
}

// actualLRPGroupByProcessGuidAndIndex serves POST
// /v1/actual_lrp_groups/get_by_process_guid_and_index (deprecated; ssh-proxy once, cfdot):
// the group of the LRP's active definition at the index (seed 000), or of the definition
// still serving it while a rollout has not reached it.
func (s *Server) actualLRPGroupByProcessGuidAndIndex(ctx context.Context, req *pb.ActualLRPGroupByProcessGuidAndIndexRequest) (*pb.ActualLRPGroupResponse, error) {
	var bad []string
	if req.GetProcessGuid() == "" {
		bad = append(bad, "process_guid")
	}
	if req.GetIndex() < 0 {
		bad = append(bad, "index")
	}
	if err := invalidFields(bad...); err != nil {
		return nil, err
	}
	g, err := s.store.ActualLRPGroupByProcessGUIDAndIndex(ctx, req.GetProcessGuid(), req.GetIndex())
	if err != nil {
		return nil, err
	}
	return &pb.ActualLRPGroupResponse{ActualLrpGroup: actualLRPGroup(g)}, nil
}

// retireActualLRP serves POST /v1/actual_lrps/retire with the JSON API's rules (lrps.Service.Retire):
// the instance of the key's definition_id when given, else the active definition's; an
// UNCLAIMED or CRASHED one goes at once, a CLAIMED or RUNNING one is stopped by its cell.
func (s *Server) retireActualLRP(ctx context.Context, req *pb.RetireActualLRPRequest) (*pb.ActualLRPLifecycleResponse, error) {
	k := req.GetActualLrpKey()
	if k == nil {
		return nil, invalidFields("actual_lrp_key")
	}
	var bad []string // in the order of BBS's ActualLRPKey.Validate
	if k.GetProcessGuid() == "" {
		bad = append(bad, "process_guid")
	}
	if k.GetIndex() < 0 {
		bad = append(bad, "index")
	}
	if k.GetDomain() == "" {
		bad = append(bad, "domain")
	}
	if err := invalidFields(bad...); err != nil {
		return nil, err
	}
	return &pb.ActualLRPLifecycleResponse{}, s.lrps.Retire(ctx, model.ActualLRPKey{
		ProcessGUID: k.GetProcessGuid(), DefinitionID: k.GetDefinitionId(), Index: k.GetIndex(), Domain: k.GetDomain(),
	})
}
