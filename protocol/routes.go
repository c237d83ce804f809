package protocol

import (
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

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

	// Desired LRPs (BBS's routes, and seed 001's cancel_update and rollback) and seed 000's
	// LRP deployments, on the JSON API's paths.
	route(s, "/v1/desired_lrp/desire.r2", s.desireLRP)
	route(s, "/v1/desired_lrps/get_by_process_guid.r3", v3(s.desiredLRPByProcessGUID))
	route(s, "/v1/desired_lrps/get_by_process_guid.r2", v2(s.desiredLRPByProcessGUID))
	listRoute[*pb.DesiredLRPsRequest, *pb.DesiredLRPsResponse](s, "/v1/desired_lrps/list.r3", s.desiredLRPs(false))
	listRoute[*pb.DesiredLRPsRequest, *pb.DesiredLRPsResponse](s, "/v1/desired_lrps/list.r2", s.desiredLRPs(true))
	listRoute[*pb.DesiredLRPsRequest, *pb.DesiredLRPSchedulingInfosResponse](s, "/v1/desired_lrp_scheduling_infos/list", s.schedulingInfos)
	route(s, "/v1/desired_lrp_scheduling_infos/get_by_process_guid", s.schedulingInfoByProcessGUID)
	route(s, "/v1/desired_lrp_routing_infos/list", s.routingInfos)
	route(s, "/v1/desired_lrp/update", s.updateDesiredLRP)
	route(s, "/v1/desired_lrp/remove", s.removeDesiredLRP)
	route(s, "/v1/desired_lrp/cancel_update", s.cancelUpdate)
	route(s, "/v1/desired_lrp/rollback", s.rollback)
	route(s, "/v1/lrp_deployments/create", s.createLRPDeployment)
	route(s, "/v1/lrp_deployments/update", s.updateLRPDeployment)
	route(s, "/v1/lrp_deployments/activate", s.activateLRPDeployment)
	route(s, "/v1/lrp_deployments/delete", s.deleteLRPDeployment)
	route(s, "/v1/lrp_deployments/get_by_process_guid", s.lrpDeploymentByProcessGUID)
	route(s, "/v1/lrp_deployments/list", s.lrpDeployments)

	// The controls of a rollout under way (ROLLOUTS-NEXT.md section 3; rollout_control.go), on
	// the JSON API's paths.
	route(s, "/v1/rollouts/pause", s.pauseRollout)
	route(s, "/v1/rollouts/resume", s.resumeRollout)
	route(s, "/v1/rollouts/abort", s.abortRollout)
	route(s, "/v1/rollouts/set_pace", s.setRolloutPace)
	route(s, "/v1/rollouts/promote", s.promoteRollout)
	route(s, "/v1/rollout_groups/create", s.createRolloutGroup)
	route(s, "/v1/rollout_groups/get", s.rolloutGroup)
	route(s, "/v1/rollout_groups/list", s.rolloutGroups)
	route(s, "/v1/rollout_groups/pause", s.controlRolloutGroup(model.GroupControlPause))
	route(s, "/v1/rollout_groups/resume", s.controlRolloutGroup(model.GroupControlResume))
	route(s, "/v1/rollout_groups/abort", s.controlRolloutGroup(model.GroupControlAbort))

	// Tasks (task.go) and their event streams (task_events.go).
	route(s, "/v1/tasks/desire.r2", needsTasks(s, s.desireTask))
	route(s, "/v1/tasks/list.r3", needsTasks(s, v3(s.listTasks)))
	route(s, "/v1/tasks/list.r2", needsTasks(s, v2(s.listTasks)))
	route(s, "/v1/tasks/get_by_task_guid.r3", needsTasks(s, v3(s.taskByGUID)))
	route(s, "/v1/tasks/get_by_task_guid.r2", needsTasks(s, v2(s.taskByGUID)))
	route(s, "/v1/tasks/start", needsTasks(s, s.startTask))
	route(s, "/v1/tasks/complete", needsTasks(s, s.completeTask))
	route(s, "/v1/tasks/reject", needsTasks(s, s.rejectTask))
	route(s, "/v1/tasks/fail", needsTasks(s, s.failTask))
	route(s, "/v1/tasks/cancel", needsTasks(s, s.cancelTask))
	route(s, "/v1/tasks/resolving", needsTasks(s, s.resolvingTask))
	route(s, "/v1/tasks/delete", needsTasks(s, s.deleteTask))
	s.mux.HandleFunc("POST /v1/events/tasks.r1", s.taskEvents(false))
	s.mux.HandleFunc("POST /v1/events/tasks", s.taskEvents(true))
}
