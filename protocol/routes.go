package protocol

import "github.com/updatable-lrps/bbs/protocol/pb"

// routes registers every route this listener serves; the rest answer a plain-text 404.
// Paths and revisions are BBS's (BBS-PROTOCOL.md §1.1).
func (s *Server) routes() {
	route(s, "/v1/ping", s.ping)
	route(s, "/v1/domains/list", s.domains)
	route(s, "/v1/domains/upsert", s.upsertDomain)
	route(s, "/v1/cells/list.r1", s.cells)

	// Actual LRPs (actual_lrp_list.go) and their event streams (events.go).
	listRoute[*pb.ActualLRPsRequest, *pb.ActualLRPsResponse](s, "/v1/actual_lrps/list", s.actualLRPs)
	listRoute[*pb.ActualLRPsByProcessGuidsRequest, *pb.ActualLRPsByProcessGuidsResponse](s, "/v1/actual_lrps/list_by_process_guids", s.actualLRPsByProcessGuids)
	listRoute[*pb.ActualLRPGroupsRequest, *pb.ActualLRPGroupsResponse](s, "/v1/actual_lrp_groups/list", s.actualLRPGroups)
	listRoute[*pb.ActualLRPGroupsByProcessGuidRequest, *pb.ActualLRPGroupsResponse](s, "/v1/actual_lrp_groups/list_by_process_guid", s.actualLRPGroupsByProcessGuid)
	route(s, "/v1/actual_lrp_groups/get_by_process_guid_and_index", s.actualLRPGroupByProcessGuidAndIndex)
	route(s, "/v1/actual_lrps/retire", s.retireActualLRP)
	s.mux.HandleFunc("POST /v1/events/lrp_instances.r1", s.instanceEvents)
	s.mux.HandleFunc("GET /v1/events.r1", s.groupEvents)
}
