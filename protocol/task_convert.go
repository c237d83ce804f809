package protocol

import (
	"fmt"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// Tasks between BBS's messages and our model, as desired_lrp_convert.go does for desired
// LRPs: a definition a client desires is kept twice, as model fields (which cells run and
// the JSON API shows) and as its own protobuf (model.TaskDefinition.Protobuf), which the
// protocol answers with, so that what the model has no place for — image layers, certificate
// properties, the log rate limit, volume-mounted files, image credentials, the legacy
// download user, the trusted certificates path, fields a newer client knows and we do not —
// comes back as it was sent. A task desired through the JSON API has no protobuf: the
// protocol builds one from the model. The task's state is always the model's.

// taskStates are BBS's Task.State of each of ours.
var taskStates = map[model.TaskState]pb.Task_State{
	model.TaskPending:   pb.Task_Pending,
	model.TaskRunning:   pb.Task_Running,
	model.TaskCompleted: pb.Task_Completed,
	model.TaskResolving: pb.Task_Resolving,
}

// taskToModel is a task a client desires, as the model holds it.
func taskToModel(req *pb.DesireTaskRequest) *model.Task {
	return &model.Task{
		TaskGUID:       req.GetTaskGuid(),
		Domain:         req.GetDomain(),
		TaskDefinition: taskDefinitionToModel(req.GetTaskDefinition()),
	}
}

// taskDefinitionToModel is def as the model holds it: the fields it has, and def itself as
// the definition's protobuf.
func taskDefinitionToModel(def *pb.TaskDefinition) model.TaskDefinition {
	b, err := canonical.Marshal(def)
	if err != nil {
		panic(fmt.Sprintf("protocol: encode a decoded task definition: %v", err))
	}
	return model.TaskDefinition{
		RootFS:                def.GetRootFs(),
		Env:                   envToModel(def.GetEnvironmentVariables()),
		Action:                actionToModel(def.GetAction()),
		MemoryMB:              def.GetMemoryMb(),
		DiskMB:                def.GetDiskMb(),
		CPUWeight:             def.GetCpuWeight(),
		Privileged:            def.GetPrivileged(),
		LogSource:             def.GetLogSource(),
		LogGUID:               def.GetLogGuid(),
		MetricsGUID:           def.GetMetricsGuid(),
		ResultFile:            def.GetResultFile(),
		CompletionCallbackURL: def.GetCompletionCallbackUrl(),
		Annotation:            def.GetAnnotation(),
		EgressRules:           listToJSON(def.GetEgressRules()),
		CachedDependencies:    listToJSON(def.GetCachedDependencies()),
		VolumeMounts:          listToJSON(def.GetVolumeMounts()),
		Network:               messageToJSON(def.GetNetwork()),
		PlacementTags:         def.GetPlacementTags(),
		MaxPids:               def.GetMaxPids(),
		MetricTags:            metricTagsToModel(def.GetMetricTags()),
		Protobuf:              b,
	}
}

// taskDefinitionFromModel is m as BBS's message: the protobuf a client sent, or, for a task
// desired through the JSON API, one built from the model's fields.
func taskDefinitionFromModel(m *model.TaskDefinition, guid string) (*pb.TaskDefinition, error) {
	def := &pb.TaskDefinition{}
	if m.Protobuf != nil {
		if err := proto.Unmarshal(m.Protobuf, def); err != nil {
			return nil, fmt.Errorf("decode the stored protobuf of task %q's definition: %w", guid, err)
		}
		return def, nil
	}
	def = &pb.TaskDefinition{
		RootFs:                m.RootFS,
		EnvironmentVariables:  envFromModel(m.Env),
		Action:                actionFromModel(m.Action),
		DiskMb:                m.DiskMB,
		MemoryMb:              m.MemoryMB,
		CpuWeight:             m.CPUWeight,
		Privileged:            m.Privileged,
		LogSource:             m.LogSource,
		LogGuid:               m.LogGUID,
		MetricsGuid:           m.MetricsGUID,
		ResultFile:            m.ResultFile,
		CompletionCallbackUrl: m.CompletionCallbackURL,
		Annotation:            m.Annotation,
		EgressRules:           listFromJSON(m.EgressRules, func() *pb.SecurityGroupRule { return &pb.SecurityGroupRule{} }),
		CachedDependencies:    listFromJSON(m.CachedDependencies, func() *pb.CachedDependency { return &pb.CachedDependency{} }),
		VolumeMounts:          listFromJSON(m.VolumeMounts, func() *pb.VolumeMount { return &pb.VolumeMount{} }),
		PlacementTags:         m.PlacementTags,
		MaxPids:               m.MaxPids,
		MetricTags:            metricTagsFromModel(m.MetricTags),
	}
	if n := (&pb.Network{}); messageFromJSON(m.Network, n) {
		def.Network = n
	}
	return def, nil
}

// taskFromModel is t as BBS's Task (V3, as the .r3 routes and the r1 stream serve it): its
// definition and its state.
func taskFromModel(t *model.Task) (*pb.Task, error) {
	def, err := taskDefinitionFromModel(&t.TaskDefinition, t.TaskGUID)
	if err != nil {
		return nil, err
	}
	return &pb.Task{
		TaskDefinition:   def,
		TaskGuid:         t.TaskGUID,
		Domain:           t.Domain,
		CreatedAt:        t.CreatedAt,
		UpdatedAt:        t.UpdatedAt,
		FirstCompletedAt: t.FirstCompletedAt,
		State:            taskStates[t.State],
		CellId:           t.CellID,
		Result:           t.Result,
		Failed:           t.Failed,
		FailureReason:    t.FailureReason,
		RejectionCount:   t.RejectionCount,
		RejectionReason:  t.RejectionReason,
	}, nil
}

// servedTask is t as a route of the revision serves it: V3, or V2 (v2) for the deprecated
// .r2 reads and r0 stream.
func servedTask(t *model.Task, v2 bool) (*pb.Task, error) {
	pt, err := taskFromModel(t)
	if err != nil || !v2 {
		return pt, err
	}
	return taskToV2(pt), nil
}

// taskToV2 is BBS's V3 to V2 downgrade of a Task: its image layers become cached
// dependencies and downloads before its action, as a DesiredLRP's do before its setup.
func taskToV2(t *pb.Task) *pb.Task {
	if len(t.GetTaskDefinition().GetImageLayers()) == 0 {
		return t
	}
	v2 := proto.CloneOf(t)
	def := v2.TaskDefinition
	def.CachedDependencies, def.Action = layersToV2(def.GetImageLayers(), def.GetLegacyDownloadUser(), def.GetCachedDependencies(), def.GetAction())
	def.ImageLayers = nil
	return v2
}
