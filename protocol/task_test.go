package protocol_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"github.com/updatable-lrps/bbs/tasks"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// taskHooks stands in for the cells of the task service: it records the cells told to stop
// a task.
type taskHooks struct {
	svc     *tasks.Service
	mu      sync.Mutex
	cancels []string // "cell/guid"
}

// service is the task service the test server and the JSON API would share, over store.
func (h *taskHooks) service(store *db.Store, log *zap.Logger) *tasks.Service {
	h.svc = tasks.NewService(store, h, model.DefaultMaxTaskRetries, log)
	return h.svc
}

func (h *taskHooks) CancelTask(_ context.Context, cellID, guid string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancels = append(h.cancels, cellID+"/"+guid)
	return nil
}

func (h *taskHooks) recorded() (cancels []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.cancels)
}

// stagingGUID is a Cloud Controller staging guid (a build's).
const stagingGUID = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

// ccStagingTask is a staging task as Cloud Controller desires it (BBS-PROTOCOL.md §4.2 point
// 8), with every field a TaskDefinition has — those our model has no place for included —
// and a field 999 of a newer client: what the store must give back exactly.
func ccStagingTask(guid string) *pb.DesireTaskRequest {
	download := func(artifact, from, to string) *pb.Action {
		return &pb.Action{DownloadAction: &pb.DownloadAction{Artifact: artifact, From: from, To: to, User: "vcap",
			CacheKey: artifact + "-key", ChecksumAlgorithm: "sha256", ChecksumValue: "abcd"}}
	}
	upload := func(artifact, from, to string) *pb.Action {
		return &pb.Action{UploadAction: &pb.UploadAction{Artifact: artifact, From: from, To: to, User: "vcap"}}
	}
	def := &pb.TaskDefinition{
		RootFs: "preloaded:cflinuxfs4",
		EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "VCAP_APPLICATION", Value: `{"application_id":"` + appGUID + `"}`},
			{Name: "CF_STACK", Value: "cflinuxfs4"}},
		Action: &pb.Action{TimeoutAction: &pb.TimeoutAction{TimeoutMs: 900000, LogSource: "STG", Action: &pb.Action{SerialAction: &pb.SerialAction{
			Actions: []*pb.Action{
				download("app package", "https://cc/packages/x", "/tmp/app"),
				{EmitProgressAction: &pb.EmitProgressAction{StartMessage: "Staging...", SuccessMessage: "Staging complete",
					FailureMessagePrefix: "Staging failed", Action: &pb.Action{RunAction: &pb.RunAction{Path: "/tmp/lifecycle/builder",
						Args: []string{"-buildpackOrder=ruby"}, User: "vcap", ResourceLimits: &pb.ResourceLimits{Nofile: proto.Uint64(16384)}}}}},
				{ParallelAction: &pb.ParallelAction{Actions: []*pb.Action{
					upload("droplet", "/tmp/droplet", "https://cc/droplets/x"),
					upload("build artifacts cache", "/tmp/output-cache", "https://cc/cache/x"),
				}}},
			}}}}},
		DiskMb:                4096,
		MemoryMb:              1024,
		CpuWeight:             50,
		LogSource:             "STG",
		LogGuid:               appGUID,
		MetricsGuid:           appGUID,
		ResultFile:            "/tmp/result.json",
		CompletionCallbackUrl: "https://cloud-controller-ng.service.cf.internal:9023/internal/v3/staging/" + guid + "/build_completed?start=true",
		Annotation:            `{"lifecycle":"buildpack"}`,
		EgressRules: []*pb.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"0.0.0.0-9.255.255.255"}, Ports: []uint32{443}},
			{Protocol: "all", Destinations: []string{"10.0.0.1"}, Log: true}},
		CachedDependencies: []*pb.CachedDependency{{Name: "ruby_buildpack", From: "https://cc/buildpacks/ruby", To: "/tmp/buildpacks/ruby",
			CacheKey: "ruby-buildpack"}},
		LegacyDownloadUser:            "vcap",
		TrustedSystemCertificatesPath: "/etc/cf-system-certificates",
		VolumeMounts: []*pb.VolumeMount{{Driver: "nfsv3driver", ContainerDir: "/data", Mode: "r",
			Shared: &pb.SharedDevice{VolumeId: "vol-1", MountConfig: `{"source":"nfs://server/export"}`}}},
		Network:               &pb.Network{Properties: map[string]string{"app_id": appGUID, "space_id": "space-guid", "org_id": "org-guid"}},
		PlacementTags:         []string{"isolation-segment-1"},
		MaxPids:               1024,
		CertificateProperties: &pb.CertificateProperties{OrganizationalUnit: []string{"organization:org-guid", "space:space-guid", "app:" + appGUID}},
		ImageUsername:         "registry-user",
		ImagePassword:         "registry-password",
		ImageLayers: []*pb.ImageLayer{
			{Name: "lifecycle", Url: "https://cc/lifecycle.tgz", DestinationPath: "/tmp/lifecycle", LayerType: pb.ImageLayer_SHARED,
				MediaType: pb.ImageLayer_TGZ, DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "1111"},
			{Name: "app package", Url: "https://cc/packages/x.zip", DestinationPath: "/tmp/app", LayerType: pb.ImageLayer_EXCLUSIVE,
				MediaType: pb.ImageLayer_ZIP, DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "2222"},
		},
		LogRateLimit: &pb.LogRateLimit{BytesPerSecond: 16384},
		MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: appGUID}, "app_name": {Static: "my-app"},
			"instance_id": {Dynamic: pb.MetricTagValue_INDEX}},
		VolumeMountedFiles: []*pb.File{{Path: "/etc/cf-service-bindings/db/uri", Content: "postgres://db"}},
	}
	def.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 999, protowire.BytesType), "newer"))
	return &pb.DesireTaskRequest{TaskGuid: guid, Domain: "cf-app-staging", TaskDefinition: def}
}

// minimalTask is the least a desire needs to pass BBS's validation and ours.
func minimalTask(guid, domain string) *pb.DesireTaskRequest {
	return &pb.DesireTaskRequest{TaskGuid: guid, Domain: domain, TaskDefinition: &pb.TaskDefinition{
		RootFs: "preloaded:cflinuxfs4", MemoryMb: 64, DiskMb: 64,
		Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/true", User: "vcap"}}}}
}

// desireTask desires a task through the protocol, failing the test on an error.
func (s *server) desireTask(req *pb.DesireTaskRequest) {
	s.t.Helper()
	var resp pb.TaskLifecycleResponse
	s.post("/v1/tasks/desire.r2", req, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("desire task %s: %v", req.GetTaskGuid(), resp.GetError())
	}
}

// getTask reads guid through get_by_task_guid at revision rev ("r3" or "r2").
func (s *server) getTask(rev, guid string) *pb.Task {
	s.t.Helper()
	var resp pb.TaskResponse
	s.post("/v1/tasks/get_by_task_guid."+rev, &pb.TaskByGuidRequest{TaskGuid: guid}, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("get task %s (%s): %v", guid, rev, resp.GetError())
	}
	return resp.GetTask()
}

// listTasks lists tasks through list at revision rev.
func (s *server) listTasks(rev string, req *pb.TasksRequest) []*pb.Task {
	s.t.Helper()
	var resp pb.TasksResponse
	s.post("/v1/tasks/list."+rev, req, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("list tasks %v (%s): %v", req, rev, resp.GetError())
	}
	return resp.GetTasks()
}

// taskCall posts a task lifecycle request and returns its error (nil when it worked).
func (s *server) taskCall(path string, req proto.Message) *pb.Error {
	s.t.Helper()
	var resp pb.TaskLifecycleResponse
	s.post(path, req, &resp)
	return resp.GetError()
}

// encoded is m's canonical bytes, to compare messages byte for byte (unknown fields too).
func encoded(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A staging task desired through the protocol comes back from .r3 and the list with its
// definition byte for byte — unknown field included — and as PENDING; the store and the JSON
// API see the model fields cells run.
func TestTaskRoundTripsEveryField(t *testing.T) {
	s := newServer(t)
	in := ccStagingTask(stagingGUID)
	s.desireTask(in)

	got := s.getTask("r3", stagingGUID)
	if string(encoded(t, got.GetTaskDefinition())) != string(encoded(t, in.GetTaskDefinition())) {
		t.Fatalf("get_by_task_guid.r3's definition differs from the one desired: %s", diffProto(got.GetTaskDefinition(), in.GetTaskDefinition()))
	}
	if got.GetTaskGuid() != stagingGUID || got.GetDomain() != "cf-app-staging" || got.GetState() != pb.Task_Pending ||
		got.GetCreatedAt() == 0 || got.GetUpdatedAt() != got.GetCreatedAt() || got.GetCellId() != "" {
		t.Errorf("task = %v, want a PENDING task of cf-app-staging", got)
	}
	list := s.listTasks("r3", &pb.TasksRequest{Domain: "cf-app-staging"})
	if len(list) != 1 || !proto.Equal(list[0], got) {
		t.Errorf("list.r3 = %v, want the task as get_by_task_guid.r3 serves it", list)
	}

	m, err := s.store.TaskByGUID(t.Context(), stagingGUID)
	if err != nil {
		t.Fatal(err)
	}
	if m.RootFS != "preloaded:cflinuxfs4" || m.MemoryMB != 1024 || m.DiskMB != 4096 || m.CPUWeight != 50 ||
		m.ResultFile != "/tmp/result.json" || m.CompletionCallbackURL != in.GetTaskDefinition().GetCompletionCallbackUrl() ||
		m.LogGUID != appGUID || m.LogSource != "STG" || m.Annotation != `{"lifecycle":"buildpack"}` || m.MaxPids != 1024 ||
		!slices.Equal(m.PlacementTags, []string{"isolation-segment-1"}) || len(m.Env) != 2 {
		t.Errorf("the model's fields = %+v", m.TaskDefinition)
	}
	if m.Action == nil || m.Action.Timeout == nil || m.Action.Timeout.Action.Serial == nil || len(m.Action.Timeout.Action.Serial.Actions) != 3 {
		t.Errorf("the model's action = %+v", m.Action)
	}
	if tag, err := model.ParseMetricTag(m.MetricTags["source_id"]); err != nil || tag.Static != appGUID {
		t.Errorf("the model's source_id tag = %s (%v)", m.MetricTags["source_id"], err)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("the stored model does not pass the model's validation: %v", err)
	}
	// The JSON API's view: BBS's JSON shape, the definition flattened in.
	var js map[string]any
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, &js); err != nil || js["result_file"] != "/tmp/result.json" || js["rootfs"] != "preloaded:cflinuxfs4" ||
		js["state"] != "PENDING" || js["egress_rules"] == nil || js["network"] == nil {
		t.Errorf("the JSON API's task = %s", b)
	}
}

// A task desired through the JSON API (the model, with no protobuf) reads through the
// protocol with every field the model has.
func TestTaskDesiredThroughTheModel(t *testing.T) {
	s := newServer(t)
	in := &model.Task{TaskGUID: "json-task", Domain: "cf-tasks", TaskDefinition: model.TaskDefinition{
		RootFS: "docker:///busybox", Env: []model.EnvironmentVariable{{Name: "A", Value: "1"}},
		Action:   &model.Action{Run: &model.RunAction{Path: "/bin/sh", Args: []string{"-c", "echo hi"}, User: "root"}},
		MemoryMB: 128, DiskMB: 256, CPUWeight: 10, Privileged: true, LogSource: "APP/TASK/x", LogGUID: "app", MetricsGUID: "app",
		ResultFile: "/tmp/out", CompletionCallbackURL: "http://cc/internal/v4/tasks/json-task/completed", Annotation: "a",
		EgressRules:        json.RawMessage(`[{"protocol":"tcp","destinations":["10.0.0.0/8"],"ports":[80]}]`),
		CachedDependencies: json.RawMessage(`[{"from":"https://x","to":"/y","cache_key":"k"}]`),
		Network:            json.RawMessage(`{"properties":{"app_id":"app"}}`),
		PlacementTags:      []string{"p"}, MaxPids: 10,
		MetricTags: map[string]json.RawMessage{"source_id": json.RawMessage(`{"static":"app"}`)},
	}}
	if _, err := s.tasks.svc.Desire(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	want := &pb.TaskDefinition{
		RootFs: "docker:///busybox", EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "A", Value: "1"}},
		Action:   &pb.Action{RunAction: &pb.RunAction{Path: "/bin/sh", Args: []string{"-c", "echo hi"}, User: "root"}},
		MemoryMb: 128, DiskMb: 256, CpuWeight: 10, Privileged: true, LogSource: "APP/TASK/x", LogGuid: "app", MetricsGuid: "app",
		ResultFile: "/tmp/out", CompletionCallbackUrl: "http://cc/internal/v4/tasks/json-task/completed", Annotation: "a",
		EgressRules:        []*pb.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"10.0.0.0/8"}, Ports: []uint32{80}}},
		CachedDependencies: []*pb.CachedDependency{{From: "https://x", To: "/y", CacheKey: "k"}},
		Network:            &pb.Network{Properties: map[string]string{"app_id": "app"}},
		PlacementTags:      []string{"p"}, MaxPids: 10,
		MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: "app"}},
	}
	for _, rev := range []string{"r3", "r2"} {
		got := s.getTask(rev, "json-task")
		if !proto.Equal(got.GetTaskDefinition(), want) {
			t.Errorf("%s: %s", rev, diffProto(got.GetTaskDefinition(), want))
		}
		if got.GetDomain() != "cf-tasks" || got.GetState() != pb.Task_Pending {
			t.Errorf("%s: task = %v", rev, got)
		}
	}
}

// The .r2 reads serve V2 tasks, as Cloud Controller reads them: the image layers become
// cached dependencies (SHARED, ahead of the task's own) and downloads run before the action
// (EXCLUSIVE). Everything else is as .r3 serves it; a task without layers is the same.
func TestTaskR2DowngradesImageLayers(t *testing.T) {
	s := newServer(t)
	in := ccStagingTask(stagingGUID)
	s.desireTask(in)
	s.desireTask(minimalTask("plain", "cf-tasks"))

	want := proto.CloneOf(in.GetTaskDefinition())
	want.ImageLayers = nil
	want.CachedDependencies = append([]*pb.CachedDependency{{Name: "lifecycle", From: "https://cc/lifecycle.tgz", To: "/tmp/lifecycle",
		CacheKey: "sha256:1111", ChecksumAlgorithm: "sha256", ChecksumValue: "1111"}}, want.CachedDependencies...)
	want.Action = &pb.Action{SerialAction: &pb.SerialAction{Actions: []*pb.Action{
		{ParallelAction: &pb.ParallelAction{Actions: []*pb.Action{{DownloadAction: &pb.DownloadAction{Artifact: "app package",
			From: "https://cc/packages/x.zip", To: "/tmp/app", CacheKey: "sha256:2222", User: "vcap", ChecksumAlgorithm: "sha256", ChecksumValue: "2222"}}}}},
		in.GetTaskDefinition().GetAction(),
	}}}
	r3 := s.getTask("r3", stagingGUID)
	got := s.getTask("r2", stagingGUID)
	if !proto.Equal(got.GetTaskDefinition(), want) {
		t.Fatalf("get_by_task_guid.r2: %s", diffProto(got.GetTaskDefinition(), want))
	}
	got.TaskDefinition, r3.TaskDefinition = nil, nil
	if !proto.Equal(got, r3) {
		t.Errorf("the r2 task's state differs from r3's: %s", diffProto(got, r3))
	}
	list := s.listTasks("r2", nil)
	if len(list) != 2 {
		t.Fatalf("list.r2 = %v", list)
	}
	for _, task := range list {
		switch task.GetTaskGuid() {
		case stagingGUID:
			if !proto.Equal(task.GetTaskDefinition(), want) {
				t.Errorf("list.r2: %s", diffProto(task.GetTaskDefinition(), want))
			}
		default:
			if !proto.Equal(task.GetTaskDefinition(), minimalTask("plain", "").GetTaskDefinition()) {
				t.Errorf("list.r2 changed a task without image layers: %v", task)
			}
		}
	}
}

// A task's life as a client and a rep drive it: desired, started on a cell (twice: the
// second tells the cell not to start it again), listed by cell, completed (its callback
// starts), resolved and deleted; a second task cancelled while it runs (its cell is told to
// stop it) and rejected ones.
func TestTaskLifecycle(t *testing.T) {
	s := newServer(t)
	s.desireTask(ccStagingTask(stagingGUID))
	s.desireTask(minimalTask("other", "cf-tasks"))

	start := func(guid, cell string) bool {
		var resp pb.StartTaskResponse
		s.post("/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: guid, CellId: cell}, &resp)
		if resp.GetError() != nil {
			t.Fatalf("start %s on %s: %v", guid, cell, resp.GetError())
		}
		return resp.GetShouldStart()
	}
	if !start(stagingGUID, "cell-1") {
		t.Fatal("should_start = false for a PENDING task")
	}
	if start(stagingGUID, "cell-1") {
		t.Error("should_start = true for a task the cell already runs")
	}
	if got := s.listTasks("r3", &pb.TasksRequest{CellId: "cell-1"}); len(got) != 1 || got[0].GetState() != pb.Task_Running || got[0].GetCellId() != "cell-1" {
		t.Errorf("tasks of cell-1 = %v", got)
	}
	if got := s.listTasks("r3", &pb.TasksRequest{Domain: "cf-tasks"}); len(got) != 1 || got[0].GetTaskGuid() != "other" {
		t.Errorf("tasks of cf-tasks = %v", got)
	}
	if err := s.taskCall("/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: stagingGUID, CellId: "cell-1", Result: `{"ok":true}`}); err != nil {
		t.Fatal(err)
	}
	done := s.getTask("r3", stagingGUID)
	if done.GetState() != pb.Task_Completed || done.GetResult() != `{"ok":true}` || done.GetFailed() || done.GetCellId() != "" || done.GetFirstCompletedAt() == 0 {
		t.Errorf("completed task = %v", done)
	}
	if err := s.taskCall("/v1/tasks/resolving", &pb.TaskGuidRequest{TaskGuid: stagingGUID}); err != nil {
		t.Fatal(err)
	}
	if got := s.getTask("r3", stagingGUID).GetState(); got != pb.Task_Resolving {
		t.Errorf("state after resolving = %v", got)
	}
	if err := s.taskCall("/v1/tasks/delete", &pb.TaskGuidRequest{TaskGuid: stagingGUID}); err != nil {
		t.Fatal(err)
	}
	var gone pb.TaskResponse
	s.post("/v1/tasks/get_by_task_guid.r3", &pb.TaskByGuidRequest{TaskGuid: stagingGUID}, &gone)
	if gone.GetError().GetType() != pb.Error_ResourceNotFound || gone.GetTask() != nil {
		t.Errorf("a deleted task reads %v", &gone)
	}

	// Rejected by a cell, it waits for another; started and cancelled, its cell stops it.
	if err := s.taskCall("/v1/tasks/reject", &pb.RejectTaskRequest{TaskGuid: "other", RejectionReason: "no room"}); err != nil {
		t.Fatal(err)
	}
	if got := s.getTask("r3", "other"); got.GetState() != pb.Task_Pending || got.GetRejectionCount() != 1 || got.GetRejectionReason() != "no room" {
		t.Errorf("rejected task = %v", got)
	}
	start("other", "cell-2")
	if err := s.taskCall("/v1/tasks/cancel", &pb.TaskGuidRequest{TaskGuid: "other"}); err != nil {
		t.Fatal(err)
	}
	if got := s.getTask("r3", "other"); got.GetState() != pb.Task_Completed || !got.GetFailed() || got.GetFailureReason() != "task was cancelled" {
		t.Errorf("cancelled task = %v", got)
	}
	if cancels := s.tasks.recorded(); !slices.Equal(cancels, []string{"cell-2/other"}) {
		t.Errorf("cells told to stop = %v, want cell-2/other", cancels)
	}

	// The deprecated fail completes a PENDING task as failed.
	s.desireTask(minimalTask("failing", "cf-tasks"))
	if err := s.taskCall("/v1/tasks/fail", &pb.FailTaskRequest{TaskGuid: "failing", FailureReason: "gave up"}); err != nil {
		t.Fatal(err)
	}
	if got := s.getTask("r3", "failing"); got.GetState() != pb.Task_Completed || !got.GetFailed() || got.GetFailureReason() != "gave up" {
		t.Errorf("failed task = %v", got)
	}
}
