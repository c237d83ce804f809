package pb_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/updatable-lrps/bbs/protocol/pb"
)

// bbsFields is BBS-PROTOCOL.md §3 (with the events of §1.2 and Error of §2.2) transcribed by
// hand, message by message: "name=number" or "name=number:type". A type is a scalar kind
// (string, int32, uint32, int64, uint64, bool, bytes), "map", or the short name of a message or
// enum; a leading "[]" means repeated. The test checks each entry against the generated
// descriptors, and that no BBS message has a field (below 1000) the table does not list, so a
// wrong, missing or extra number cannot hide.
var bbsFields = map[string]string{
	// Shared parts.
	"ModificationTag":       "epoch=1:string index=2:uint32",
	"EnvironmentVariable":   "name=1:string value=2:string",
	"ProtoRoutes":           "routes=1:map",
	"DesiredLRPKey":         "process_guid=1:string domain=2:string log_guid=3:string",
	"DesiredLRPResource":    "memory_mb=1:int32 disk_mb=2:int32 root_fs=3:string max_pids=4:int32",
	"VolumePlacement":       "driver_names=1:[]string",
	"MetricTagValue":        "static=1:string dynamic=2:DynamicValue",
	"LogRateLimit":          "bytes_per_second=1:int64",
	"CertificateProperties": "organizational_unit=1:[]string",
	"Network":               "properties=1:map",
	"File":                  "path=1:string content=2:string",
	"Sidecar":               "action=1:Action disk_mb=2:int32 memory_mb=3:int32",

	"DesiredLRP": `process_guid=1:string domain=2:string root_fs=3:string instances=4:int32
		environment_variables=5:[]EnvironmentVariable setup=6:Action action=7:Action
		deprecated_start_timeout_s=8:uint32 monitor=9:Action disk_mb=10:int32 memory_mb=11:int32
		cpu_weight=12:uint32 privileged=13:bool ports=14:[]uint32 routes=15:ProtoRoutes
		log_source=16:string log_guid=17:string metrics_guid=18:string annotation=19:string
		egress_rules=20:[]SecurityGroupRule modification_tag=21:ModificationTag
		cached_dependencies=22:[]CachedDependency legacy_download_user=23:string
		trusted_system_certificates_path=24:string volume_mounts=25:[]VolumeMount
		network=26:Network start_timeout_ms=27:int64 PlacementTags=28:[]string max_pids=29:int32
		certificate_properties=30:CertificateProperties image_username=31:string
		image_password=32:string check_definition=33:CheckDefinition image_layers=34:[]ImageLayer
		metric_tags=35:map sidecars=36:[]Sidecar log_rate_limit=37:LogRateLimit
		volume_mounted_files=38:[]File update_strategy=39:UpdateStrategy`,
	"DesiredLRPSchedulingInfo": `desired_lrp_key=1:DesiredLRPKey annotation=2:string instances=3:int32
		desired_lrp_resource=4:DesiredLRPResource routes=5:ProtoRoutes
		modification_tag=6:ModificationTag volume_placement=7:VolumePlacement
		PlacementTags=8:[]string`,
	"DesiredLRPRunInfo": `desired_lrp_key=1:DesiredLRPKey environment_variables=2 setup=3 action=4
		monitor=5 deprecated_start_timeout_s=6 privileged=7 cpu_weight=8 ports=9:[]uint32
		egress_rules=10 log_source=11 metrics_guid=12 created_at=13:int64 cached_dependencies=14
		legacy_download_user=15 trusted_system_certificates_path=16 volume_mounts=17 network=18
		start_timeout_ms=19 certificate_properties=20 image_username=21 image_password=22
		check_definition=23 image_layers=24 metric_tags=25 sidecars=26 log_rate_limit=27
		volume_mounted_files=28`,
	"DesiredLRPUpdate": `instances=1:int32 routes=2:ProtoRoutes annotation=3:string metric_tags=4:map
		image_username=5:string image_password=6:string`,

	// Actions.
	"Action": `download_action=1:DownloadAction upload_action=2:UploadAction run_action=3:RunAction
		timeout_action=4:TimeoutAction emit_progress_action=5:EmitProgressAction
		try_action=6:TryAction parallel_action=7:ParallelAction serial_action=8:SerialAction
		codependent_action=9:CodependentAction`,
	"DownloadAction": `artifact=1 from=2 to=3 cache_key=4 log_source=5 user=6 checksum_algorithm=7
		checksum_value=8`,
	"UploadAction": "artifact=1 from=2 to=3 log_source=4 user=5",
	"RunAction": `path=1:string args=2:[]string dir=3 env=4:[]EnvironmentVariable
		resource_limits=5:ResourceLimits user=6 log_source=7 suppress_log_output=8:bool
		volume_mounted_files=9:[]File`,
	"ResourceLimits":     "nofile=1:uint64 nproc=2:uint64",
	"TimeoutAction":      "action=1:Action deprecated_timeout_ns=2:int64 log_source=3 timeout_ms=4:int64",
	"EmitProgressAction": "action=1 start_message=2 success_message=3 failure_message_prefix=4 log_source=5",
	"TryAction":          "action=1:Action log_source=2",
	"ParallelAction":     "actions=1:[]Action log_source=2",
	"SerialAction":       "actions=1:[]Action log_source=2",
	"CodependentAction":  "actions=1:[]Action log_source=2",

	// Checks.
	"CheckDefinition": "checks=1:[]Check log_source=2:string readiness_checks=3:[]Check",
	"Check":           "tcp_check=1:TCPCheck http_check=2:HTTPCheck",
	"TCPCheck":        "port=1:uint32 connect_timeout_ms=2:uint64 interval_ms=3:uint64",
	"HTTPCheck":       "port=1:uint32 request_timeout_ms=2:uint64 path=3:string interval_ms=4:uint64",

	// Other DesiredLRP parts.
	"SecurityGroupRule": `protocol=1:string destinations=2:[]string ports=3:[]uint32
		port_range=4:PortRange icmp_info=5:ICMPInfo log=6:bool annotations=7:[]string`,
	"PortRange": "start=1:uint32 end=2:uint32",
	"ICMPInfo":  "type=1:int32 code=2:int32",
	"CachedDependency": `name=1 from=2 to=3 cache_key=4 log_source=5 checksum_algorithm=6
		checksum_value=7`,
	"VolumeMount": `driver=1:string container_dir=3:string mode=6:string shared=7:SharedDevice
		dedicated=8:DedicatedDevice`,
	"SharedDevice":    "volume_id=1 mount_config=2",
	"DedicatedDevice": "mounter_id=1 mount_config=2 device_config=3",
	"ImageLayer": `name=1:string url=2:string destination_path=3:string layer_type=4:Type
		media_type=5:MediaType digest_algorithm=6:DigestAlgorithm digest_value=7:string`,

	// ActualLRP.
	"ActualLRP": `actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey
		actual_lrp_net_info=3:ActualLRPNetInfo crash_count=4:int32 crash_reason=5:string
		state=6:string placement_error=7:string since=8:int64 modification_tag=9:ModificationTag
		presence=10:Presence actual_lrp_internal_routes=11:[]ActualLRPInternalRoute
		metric_tags=12:map routable=13:bool availability_zone=14:string`,
	"ActualLRPKey":         "process_guid=1:string index=2:int32 domain=3:string",
	"ActualLRPInstanceKey": "instance_guid=1:string cell_id=2:string",
	"ActualLRPNetInfo": `address=1:string ports=2:[]PortMapping instance_address=3:string
		preferred_address=4:PreferredAddress instance_ipv6_address=5:string`,
	"ActualLRPInternalRoute": "hostname=1:string",
	"PortMapping": `container_port=1:uint32 host_port=2:uint32 container_tls_proxy_port=3:uint32
		host_tls_proxy_port=4:uint32`,
	"ActualLRPGroup": "instance=1:ActualLRP evacuating=2:ActualLRP",

	// Cells.
	"CellPresence": `cell_id=1:string rep_address=2:string zone=3:string capacity=4:CellCapacity
		rootfs_providers=5:[]Provider placement_tags=6:[]string optional_placement_tags=7:[]string
		rep_url=8:string annotations=9:map`,
	"CellCapacity": "memory_mb=1:int32 disk_mb=2:int32 containers=3:int32",
	"Provider":     "name=1:string properties=2:[]string",

	// Tasks.
	"Task": `task_definition=1:TaskDefinition task_guid=2:string domain=3:string created_at=4:int64
		updated_at=5:int64 first_completed_at=6:int64 state=7:State cell_id=8:string
		result=9:string failed=10:bool failure_reason=11:string rejection_count=12:int32
		rejection_reason=13:string`,
	"TaskDefinition": `root_fs=1:string environment_variables=2:[]EnvironmentVariable action=3:Action
		disk_mb=4:int32 memory_mb=5:int32 cpu_weight=6:uint32 privileged=7:bool log_source=8
		log_guid=9 metrics_guid=10 result_file=11 completion_callback_url=12 annotation=13
		egress_rules=14 cached_dependencies=15 legacy_download_user=16
		trusted_system_certificates_path=17 volume_mounts=18 network=19
		placement_tags=20:[]string max_pids=21:int32 certificate_properties=22 image_username=23
		image_password=24 image_layers=25:[]ImageLayer log_rate_limit=26:LogRateLimit
		metric_tags=27:map volume_mounted_files=28:[]File`,

	// Requests and responses.
	"Error":                "type=1:Type message=2:string",
	"PingResponse":         "available=1:bool",
	"UpsertDomainRequest":  "domain=1:string ttl=2:uint32",
	"UpsertDomainResponse": "error=1:Error",
	"DomainsResponse":      "error=1:Error domains=2:[]string",
	"DesiredLRPsRequest":   "domain=1:string process_guids=2:[]string app_guids=3:[]string",
	"DesiredLRPsResponse":  "error=1:Error desired_lrps=2:[]DesiredLRP",
	"DesiredLRPResponse":   "error=1:Error desired_lrp=2:DesiredLRP",
	"DesiredLRPSchedulingInfosResponse": `error=1:Error
		desired_lrp_scheduling_infos=2:[]DesiredLRPSchedulingInfo`,
	"DesiredLRPSchedulingInfoByProcessGuidResponse": `error=1:Error
		desired_lrp_scheduling_info=2:DesiredLRPSchedulingInfo`,
	"DesiredLRPByProcessGuidRequest":             "process_guid=1:string",
	"RemoveDesiredLRPRequest":                    "process_guid=1:string",
	"DesireLRPRequest":                           "desired_lrp=1:DesiredLRP",
	"UpdateDesiredLRPRequest":                    "process_guid=1:string update=2:DesiredLRPUpdate",
	"DesiredLRPLifecycleResponse":                "error=1:Error",
	"ActualLRPLifecycleResponse":                 "error=1:Error",
	"TaskLifecycleResponse":                      "error=1:Error",
	"RemoveEvacuatingActualLRPResponse":          "error=1:Error",
	"ActualLRPsRequest":                          "domain=1:string cell_id=2:string process_guid=3:string index=4:int32",
	"ActualLRPsResponse":                         "error=1:Error actual_lrps=2:[]ActualLRP",
	"ActualLRPsByProcessGuidsResponse":           "error=1:Error actual_lrps=2:[]ActualLRP",
	"ActualLRPsByProcessGuidsRequest":            "process_guids=1:[]string",
	"ActualLRPGroupsRequest":                     "domain=1:string cell_id=2:string",
	"ActualLRPGroupsByProcessGuidRequest":        "process_guid=1:string",
	"ActualLRPGroupByProcessGuidAndIndexRequest": "process_guid=1:string index=2:int32",
	"ActualLRPGroupsResponse":                    "error=1:Error actual_lrp_groups=2:[]ActualLRPGroup",
	"ActualLRPGroupResponse":                     "error=1:Error actual_lrp_group=2:ActualLRPGroup",
	"ClaimActualLRPRequest": `process_guid=1:string index=2:int32
		actual_lrp_instance_key=3:ActualLRPInstanceKey`,
	"StartActualLRPRequest": `actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey
		actual_lrp_net_info=3:ActualLRPNetInfo actual_lrp_internal_routes=4:[]ActualLRPInternalRoute
		metric_tags=5:map Routable=6:bool availability_zone=7:string`,
	"CrashActualLRPRequest": `actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey
		error_message=3:string`,
	"FailActualLRPRequest":   "actual_lrp_key=1:ActualLRPKey error_message=2:string",
	"RetireActualLRPRequest": "actual_lrp_key=1:ActualLRPKey",
	"RemoveActualLRPRequest": `process_guid=1:string index=2:int32
		actual_lrp_instance_key=3:ActualLRPInstanceKey`,
	"EvacuationResponse":               "error=1:Error keep_container=2:bool",
	"EvacuateClaimedActualLRPRequest":  "actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey",
	"EvacuateStoppedActualLRPRequest":  "actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey",
	"RemoveEvacuatingActualLRPRequest": "actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey",
	"EvacuateCrashedActualLRPRequest":  "actual_lrp_key=1 actual_lrp_instance_key=2 error_message=3:string",
	"EvacuateRunningActualLRPRequest": `actual_lrp_key=1:ActualLRPKey
		actual_lrp_instance_key=2:ActualLRPInstanceKey actual_lrp_net_info=3:ActualLRPNetInfo
		actual_lrp_internal_routes=5:[]ActualLRPInternalRoute metric_tags=6:map Routable=7:bool
		availability_zone=8:string`,
	"CellsResponse":        "error=1:Error cells=2:[]CellPresence",
	"DesireTaskRequest":    "task_definition=1:TaskDefinition task_guid=2:string domain=3:string",
	"TasksRequest":         "domain=1:string cell_id=2:string",
	"TaskByGuidRequest":    "task_guid=1:string",
	"TaskGuidRequest":      "task_guid=1:string",
	"TasksResponse":        "error=1:Error tasks=2:[]Task",
	"TaskResponse":         "error=1:Error task=2:Task",
	"StartTaskRequest":     "task_guid=1:string cell_id=2:string",
	"StartTaskResponse":    "error=1:Error should_start=2:bool",
	"CompleteTaskRequest":  "task_guid=1:string cell_id=2:string failed=3:bool failure_reason=4:string result=5:string",
	"RejectTaskRequest":    "task_guid=1:string rejection_reason=2:string",
	"FailTaskRequest":      "task_guid=1:string failure_reason=2:string",
	"TaskCallbackResponse": "task_guid=1 failed=2:bool failure_reason=3 result=4 annotation=5 created_at=6:int64",
	"EventsByCellId":       "cell_id=1:string",

	// Events (§1.2).
	"DesiredLRPCreatedEvent":        "desired_lrp=1:DesiredLRP trace_id=2:string",
	"DesiredLRPChangedEvent":        "before=1:DesiredLRP after=2:DesiredLRP trace_id=3:string",
	"DesiredLRPRemovedEvent":        "desired_lrp=1:DesiredLRP trace_id=2:string",
	"ActualLRPInstanceCreatedEvent": "actual_lrp=1:ActualLRP trace_id=2:string",
	"ActualLRPInstanceChangedEvent": `actual_lrp_key=1:ActualLRPKey
		actual_lrp_instance_key=2:ActualLRPInstanceKey before=3:ActualLRPInfo after=4:ActualLRPInfo
		trace_id=5:string`,
	"ActualLRPInstanceRemovedEvent": "actual_lrp=1:ActualLRP trace_id=2:string",
	"ActualLRPCrashedEvent": `actual_lrp_key=1:ActualLRPKey actual_lrp_instance_key=2:ActualLRPInstanceKey
		crash_count=3:int32 crash_reason=4:string since=5:int64`,
	"ActualLRPCreatedEvent": "actual_lrp_group=1:ActualLRPGroup",
	"ActualLRPChangedEvent": "before=1:ActualLRPGroup after=2:ActualLRPGroup",
	"ActualLRPRemovedEvent": "actual_lrp_group=1:ActualLRPGroup",
	"TaskCreatedEvent":      "task=1:Task",
	"TaskChangedEvent":      "before=1:Task after=2:Task",
	"TaskRemovedEvent":      "task=1:Task",
	"ActualLRPInfo": `actual_lrp_net_info=3:ActualLRPNetInfo crash_count=4:int32 crash_reason=5:string
		state=6:string placement_error=7:string since=8:int64 modification_tag=9:ModificationTag
		presence=10:Presence Routable=11:bool availability_zone=12:string`,
}

// ourFields lists our extensions (extensions.proto's register): the fields we added to BBS
// messages, all at 1000 and above, and the messages that exist only in our protocol.
var ourFields = map[string]string{
	"ActualLRPKey":      "definition_id=1000:string",
	"ActualLRPsRequest": "definition_id=1000:string",
	"DesiredLRP": `definition_id=1000:string previous_definition_id=1001:string
		rollout_strategy=1002:RolloutStrategy`,
	"DesiredLRPSchedulingInfo": "definition_id=1000:string previous_definition_id=1001:string healthy_definition_id=1002:string",
	"DesiredLRPUpdate": `definition=1000:LRPDefinition strategy=1001:RolloutStrategy
		rollout_strategy=1002:RolloutStrategy`,
}

var ourMessages = map[string]string{
	"LRPDefinition": `definition_id=1000:string root_fs=3:string
		environment_variables=5:[]EnvironmentVariable setup=6:Action action=7:Action
		deprecated_start_timeout_s=8:uint32 monitor=9:Action disk_mb=10:int32 memory_mb=11:int32
		cpu_weight=12:uint32 privileged=13:bool ports=14:[]uint32 log_source=16:string
		log_guid=17:string metrics_guid=18:string egress_rules=20:[]SecurityGroupRule
		cached_dependencies=22:[]CachedDependency legacy_download_user=23:string
		trusted_system_certificates_path=24:string volume_mounts=25:[]VolumeMount
		network=26:Network start_timeout_ms=27:int64 PlacementTags=28:[]string max_pids=29:int32
		certificate_properties=30:CertificateProperties image_username=31:string
		image_password=32:string check_definition=33:CheckDefinition image_layers=34:[]ImageLayer
		sidecars=36:[]Sidecar log_rate_limit=37:LogRateLimit volume_mounted_files=38:[]File
		update_strategy=39:UpdateStrategy`,
	"CancelUpdateDesiredLRPRequest": "process_guid=1:string",
	"RollbackDesiredLRPRequest":     "process_guid=1:string definition_id=2:string strategy=3:RolloutStrategy",
	"LRPDeployment": `process_guid=1:string domain=2:string instances=3:int32 routes=4:ProtoRoutes
		annotation=5:string modification_tag=6:ModificationTag definitions=7:map
		active_definition_id=8:string healthy_definition_id=9:string
		rollout_strategy=10:RolloutStrategy`,
	"LRPDeploymentDefinition": `process_guid=1:string domain=2:string instances=3:int32
		routes=4:ProtoRoutes annotation=5:string definition_id=6:string definition=7:LRPDefinition
		rollout_strategy=8:RolloutStrategy`,
	"LRPDeploymentUpdate": `instances=1:int32 routes=2:ProtoRoutes annotation=3:string
		definition_id=4:string definition=5:LRPDefinition`,
	"CreateLRPDeploymentRequest": "lrp_deployment_definition=1:LRPDeploymentDefinition",
	"UpdateLRPDeploymentRequest": `process_guid=1:string update=2:LRPDeploymentUpdate
		strategy=3:RolloutStrategy rollout_strategy=4:RolloutStrategy`,
	"ActivateLRPDeploymentDefinitionRequest": "process_guid=1:string definition_id=2:string strategy=3:RolloutStrategy",
	"DeleteLRPDeploymentRequest":             "process_guid=1:string",
	"LRPDeploymentLifecycleResponse":         "error=1:Error",
	"LRPDeploymentByProcessGuidRequest":      "process_guid=1:string",
	"LRPDeploymentResponse":                  "error=1:Error lrp_deployment=2:LRPDeployment",
	"LRPDeploymentsRequest":                  "domain=1:string process_guids=2:[]string",
	"LRPDeploymentsResponse":                 "error=1:Error lrp_deployments=2:[]LRPDeployment",

	// Rollout strategies and controls (ROLLOUTS-NEXT.md sections 1 and 3).
	"RolloutStrategy": `max_in_flight=1:int32 min_ready_ms=2:int64 index_deadline_ms=3:int64
		progress_deadline_ms=4:int64 on_failure=5:string failure=6:FailurePolicy
		canary=7:CanaryStrategy analysis=8:RolloutAnalysis window=9:string break_glass=10:string`,
	"FailurePolicy":  "max_crashes=1:int32 max_failed_indices=2:int32",
	"CanaryStrategy": "steps=1:[]CanaryStep",
	"CanaryStep":     "instances=1:int32 weight=2:int32 pause_ms=3:int64 analysis=4:bool promote=5:string",
	"RolloutAnalysis": `interval_ms=1:int64 min_requests=2:int64 max_error_rate_ratio=3:double
		max_p99_delta_ms=4:int64 max_crash_rate=5:double background=6:bool on_inconclusive=7:string`,
	"PauseRolloutRequest":    "process_guid=1:string",
	"ResumeRolloutRequest":   "process_guid=1:string",
	"AbortRolloutRequest":    "process_guid=1:string reason=2:string",
	"SetRolloutPaceRequest":  "process_guid=1:string max_in_flight=2:int32",
	"PromoteRolloutRequest":  "process_guid=1:string full=2:bool",
	"RolloutControlResponse": "error=1:Error",

	// Rollout groups (ROLLOUTS-NEXT.md section 6), rollout_group.proto.
	"RolloutGroupSelector": "domain=1:string process_guids=2:[]string metric_tags=3:map",
	"DefinitionPatch":      "root_fs=1:string environment_variables=2:[]EnvironmentVariable",
	"RolloutWave":          "percent=1:double",
	"CreateRolloutGroupRequest": `group_id=1:string selector=2:RolloutGroupSelector patch=3:DefinitionPatch
		strategy=4:RolloutStrategy waves=5:[]RolloutWave pause_between_waves_ms=6:int64 max_concurrent_lrps=7:int32
		max_concurrent_per_cell=8:int32 max_failed_percent=9:double window=10:string`,
	"RolloutGroupRequest":  "group_id=1:string reason=2:string",
	"RolloutGroupsRequest": "",
	"RolloutGroupMember":   "process_guid=1:string state=2:string definition_id=3:string rollout_id=4:string reason=5:string",
	"RolloutGroupWave":     "percent=1:double state=2:string counts=3:map members=4:[]RolloutGroupMember",
	"RolloutGroupBudget":   "lrps_in_use=1:int32 max_concurrent_lrps=2:int32 per_cell_max_in_use=3:int32 max_concurrent_per_cell=4:int32",
	"RolloutGroup": `group_id=1:string state=2:string reason=3:string wave=4:int32 waves=5:[]RolloutGroupWave
		budgets=6:RolloutGroupBudget spec=7:CreateRolloutGroupRequest wave_opens_at=8:int64 created_at=9:int64 finished_at=10:int64`,
	"RolloutGroupResponse":  "error=1:Error rollout_group=2:RolloutGroup",
	"RolloutGroupsResponse": "error=1:Error rollout_groups=2:[]RolloutGroup",
}

type fieldSpec struct {
	name   string
	number protoreflect.FieldNumber
	typ    string // "" when the table does not say
}

func parseFields(t *testing.T, msg, spec string) []fieldSpec {
	t.Helper()
	var out []fieldSpec
	for _, tok := range strings.Fields(spec) {
		name, rest, ok := strings.Cut(tok, "=")
		if !ok {
			t.Fatalf("%s: bad entry %q", msg, tok)
		}
		num, typ, _ := strings.Cut(rest, ":")
		n, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("%s: bad number in %q", msg, tok)
		}
		out = append(out, fieldSpec{name, protoreflect.FieldNumber(n), typ})
	}
	return out
}

func messageDescriptor(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("models." + name))
	if err != nil {
		t.Fatalf("message models.%s: %v", name, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		t.Fatalf("models.%s is a %T, not a message", name, d)
	}
	return md
}

// typeOf renders a field's type in the table's notation.
func typeOf(fd protoreflect.FieldDescriptor) string {
	var s string
	switch {
	case fd.IsMap():
		return "map"
	case fd.Kind() == protoreflect.MessageKind:
		s = string(fd.Message().Name())
	case fd.Kind() == protoreflect.EnumKind:
		s = string(fd.Enum().Name())
	default:
		s = fd.Kind().String()
	}
	if fd.IsList() {
		s = "[]" + s
	}
	return s
}

func checkFields(t *testing.T, md protoreflect.MessageDescriptor, specs []fieldSpec) {
	t.Helper()
	for _, f := range specs {
		fd := md.Fields().ByName(protoreflect.Name(f.name))
		if fd == nil {
			t.Errorf("%s has no field %s (want number %d)", md.Name(), f.name, f.number)
			continue
		}
		if fd.Number() != f.number {
			t.Errorf("%s.%s is number %d, want %d", md.Name(), f.name, fd.Number(), f.number)
		}
		if f.typ != "" && typeOf(fd) != f.typ {
			t.Errorf("%s.%s has type %s, want %s", md.Name(), f.name, typeOf(fd), f.typ)
		}
		// A wrong name that happens to carry the right number is caught above; a right
		// name on the wrong number shows here as well, from the other side.
		if other := md.Fields().ByNumber(f.number); other != nil && other.Name() != protoreflect.Name(f.name) {
			t.Errorf("%s: number %d belongs to %s, want %s", md.Name(), f.number, other.Name(), f.name)
		}
	}
}

// TestBBSFieldNumbers checks every field of every message of BBS-PROTOCOL.md §3 and that the
// BBS messages have no unlisted field below 1000.
func TestBBSFieldNumbers(t *testing.T) {
	for _, msg := range sortedKeys(bbsFields) {
		t.Run(msg, func(t *testing.T) {
			md := messageDescriptor(t, msg)
			specs := parseFields(t, msg, bbsFields[msg])
			checkFields(t, md, specs)
			listed := map[protoreflect.FieldNumber]bool{}
			for _, f := range specs {
				listed[f.number] = true
			}
			fields := md.Fields()
			for i := 0; i < fields.Len(); i++ {
				fd := fields.Get(i)
				if fd.Number() < 1000 && !listed[fd.Number()] {
					t.Errorf("%s.%s = %d is not in BBS-PROTOCOL.md §3", msg, fd.Name(), fd.Number())
				}
			}
		})
	}
	if got := len(bbsFields); got != 118 {
		t.Errorf("the table has %d BBS messages, BBS-PROTOCOL.md counts 118", got)
	}
}

// TestExtensionFieldNumbers checks our extensions: the fields we added to BBS messages are the
// ones listed, all at 1000 or above, and our own messages have exactly the listed fields.
func TestExtensionFieldNumbers(t *testing.T) {
	for _, msg := range sortedKeys(bbsFields) {
		md := messageDescriptor(t, msg)
		specs := parseFields(t, msg, ourFields[msg])
		checkFields(t, md, specs)
		listed := map[protoreflect.FieldNumber]bool{}
		for _, f := range specs {
			if f.number < 1000 {
				t.Errorf("our field %s.%s has number %d, below 1000", msg, f.name, f.number)
			}
			listed[f.number] = true
		}
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if fd.Number() >= 1000 && !listed[fd.Number()] {
				t.Errorf("%s.%s = %d is not in the register of our fields", msg, fd.Name(), fd.Number())
			}
		}
	}
	for msg := range ourFields {
		if _, ok := bbsFields[msg]; !ok {
			t.Errorf("ourFields names %s, which is not a BBS message", msg)
		}
	}
	for _, msg := range sortedKeys(ourMessages) {
		md := messageDescriptor(t, msg)
		specs := parseFields(t, msg, ourMessages[msg])
		checkFields(t, md, specs)
		if md.Fields().Len() != len(specs) {
			t.Errorf("%s has %d fields, the table lists %d", msg, md.Fields().Len(), len(specs))
		}
	}
}

// TestEveryMessageIsListed makes the two tables the complete inventory of the package.
func TestEveryMessageIsListed(t *testing.T) {
	n := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("models", func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(fd.Path(), "protocol/pb/") {
			return true
		}
		var walk func(ms protoreflect.MessageDescriptors)
		walk = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				md := ms.Get(i)
				if md.IsMapEntry() {
					continue
				}
				n++
				name := string(md.Name())
				_, bbs := bbsFields[name]
				_, ours := ourMessages[name]
				if !bbs && !ours {
					t.Errorf("%s (%s) is in neither table", md.FullName(), fd.Path())
				}
				walk(md.Messages())
			}
		}
		walk(fd.Messages())
		return true
	})
	if want := len(bbsFields) + len(ourMessages); n != want {
		t.Errorf("the package has %d messages, the tables %d", n, want)
	}
}

// TestExplicitPresence checks §2.1 point 2: these fields are emitted even at their zero value,
// and no other field of a BBS message has explicit presence.
func TestExplicitPresence(t *testing.T) {
	want := map[string]bool{
		"ActualLRP.routable":                       true,
		"ActualLRPInfo.Routable":                   true,
		"StartActualLRPRequest.Routable":           true,
		"EvacuateRunningActualLRPRequest.Routable": true,
		"DesiredLRPUpdate.instances":               true,
		"DesiredLRPUpdate.annotation":              true,
		"DesiredLRPUpdate.image_username":          true,
		"DesiredLRPUpdate.image_password":          true,
		"ActualLRPsRequest.index":                  true,
		"ResourceLimits.nofile":                    true,
		"ResourceLimits.nproc":                     true,
		// Ours.
		"LRPDeploymentUpdate.instances":     true,
		"LRPDeploymentUpdate.annotation":    true,
		"LRPDeploymentUpdate.definition_id": true,
		// A strategy's scalars: "not given" resolves over the LRP's and the server's, a 0 is
		// a value (a weight of 0 is a dark canary).
		"RolloutStrategy.max_in_flight":        true,
		"RolloutStrategy.min_ready_ms":         true,
		"RolloutStrategy.index_deadline_ms":    true,
		"RolloutStrategy.progress_deadline_ms": true,
		"RolloutStrategy.on_failure":           true,
		"RolloutStrategy.window":               true,
		"RolloutStrategy.break_glass":          true,
		"FailurePolicy.max_crashes":            true,
		"FailurePolicy.max_failed_indices":     true,
		"CanaryStep.instances":                 true,
		"CanaryStep.weight":                    true,
		"CanaryStep.pause_ms":                  true,
		"CanaryStep.promote":                   true,
		"RolloutAnalysis.interval_ms":          true,
		"RolloutAnalysis.min_requests":         true,
		"RolloutAnalysis.max_error_rate_ratio": true,
		"RolloutAnalysis.max_p99_delta_ms":     true,
		"RolloutAnalysis.max_crash_rate":       true,
		"RolloutAnalysis.background":           true,
		"RolloutAnalysis.on_inconclusive":      true,
		"SetRolloutPaceRequest.max_in_flight":  true,
		// A patch that leaves the rootfs as it is differs from one that sets it.
		"DefinitionPatch.root_fs": true,
	}
	for _, msg := range append(sortedKeys(bbsFields), sortedKeys(ourMessages)...) {
		md := messageDescriptor(t, msg)
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			// Message fields always have presence; what matters is the scalars.
			if fd.Kind() == protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
				continue
			}
			name := fmt.Sprintf("%s.%s", msg, fd.Name())
			if fd.HasPresence() != want[name] {
				t.Errorf("%s: explicit presence is %v, want %v", name, fd.HasPresence(), want[name])
			}
			delete(want, name)
		}
	}
	for name := range want {
		t.Errorf("%s: no such scalar field", name)
	}
}

// TestUnpackedPorts checks §2.1 point 3: the repeated uint32 ports are written unpacked, and no
// other repeated scalar is.
func TestUnpackedPorts(t *testing.T) {
	unpacked := map[string]bool{
		"DesiredLRP.ports":        true,
		"DesiredLRPRunInfo.ports": true,
		"SecurityGroupRule.ports": true,
		"LRPDefinition.ports":     true, // ours, as DesiredLRP's
	}
	for _, msg := range append(sortedKeys(bbsFields), sortedKeys(ourMessages)...) {
		md := messageDescriptor(t, msg)
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			if !fd.IsList() || fd.Kind() == protoreflect.MessageKind ||
				fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind {
				continue
			}
			name := fmt.Sprintf("%s.%s", msg, fd.Name())
			if fd.IsPacked() == unpacked[name] {
				t.Errorf("%s: packed is %v, want %v", name, fd.IsPacked(), !unpacked[name])
			}
		}
	}
}

// TestEnumValues checks the enums of §2.2 and §3, value by value and with nothing extra.
func TestEnumValues(t *testing.T) {
	enums := map[string]string{
		"Error.Type": `UnknownError=0 InvalidRecord=3 InvalidRequest=4 InvalidResponse=5
			InvalidProtobufMessage=6 InvalidJSON=7 FailedToOpenEnvelope=8 InvalidStateTransition=9
			ResourceConflict=11 ResourceExists=12 ResourceNotFound=13 RouterError=14
			ActualLRPCannotBeClaimed=15 ActualLRPCannotBeStarted=16 ActualLRPCannotBeCrashed=17
			ActualLRPCannotBeFailed=18 ActualLRPCannotBeRemoved=19 ActualLRPCannotBeUnclaimed=21
			RunningOnDifferentCell=24 GUIDGeneration=26 Deserialize=27 Deadlock=28 Unrecoverable=29
			LockCollision=30 Timeout=31`,
		"ActualLRP.Presence":                "ORDINARY=0 EVACUATING=1 SUSPECT=2",
		"ActualLRPNetInfo.PreferredAddress": "UNKNOWN=0 INSTANCE=1 HOST=2",
		"ImageLayer.Type":                   "LayerTypeInvalid=0 SHARED=1 EXCLUSIVE=2",
		"ImageLayer.MediaType":              "MediaTypeInvalid=0 TGZ=1 TAR=2 ZIP=3",
		"ImageLayer.DigestAlgorithm":        "DigestAlgorithmInvalid=0 SHA256=1 SHA512=2",
		"MetricTagValue.DynamicValue":       "DynamicValueInvalid=0 INDEX=1 INSTANCE_GUID=2",
		"Task.State":                        "Invalid=0 Pending=1 Running=2 Completed=3 Resolving=4",
		"UpdateStrategy":                    "ROLLING=0 RECREATE=1",
	}
	for _, name := range sortedKeys(enums) {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("models." + name))
		if err != nil {
			t.Errorf("enum models.%s: %v", name, err)
			continue
		}
		ed := d.(protoreflect.EnumDescriptor)
		pairs := strings.Fields(enums[name])
		for _, p := range pairs {
			v, n, _ := strings.Cut(p, "=")
			num, _ := strconv.Atoi(n)
			vd := ed.Values().ByName(protoreflect.Name(v))
			if vd == nil {
				t.Errorf("%s has no value %s", name, v)
			} else if vd.Number() != protoreflect.EnumNumber(num) {
				t.Errorf("%s.%s = %d, want %d", name, v, vd.Number(), num)
			}
		}
		if ed.Values().Len() != len(pairs) {
			t.Errorf("%s has %d values, want %d", name, ed.Values().Len(), len(pairs))
		}
	}

	// The retired Error.Type numbers stay reserved.
	ed := messageDescriptor(t, "Error").Enums().ByName("Type")
	for _, n := range []protoreflect.EnumNumber{1, 2, 10, 20, 22, 23, 25} {
		if !ed.ReservedRanges().Has(n) {
			t.Errorf("Error.Type: number %d is not reserved", n)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
