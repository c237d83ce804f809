package protocol_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"github.com/updatable-lrps/bbs/tasks"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// recordingStore is a store that keeps what is written, for the fuzzer: a request answered
// with an error must have written nothing, and what is written must pass the model's
// validation. It holds one LRP, "app", whose definition came through the protocol (with its
// protobuf), and lists a second one, "json", created through the JSON API (without).
type recordingStore struct {
	mu      sync.Mutex
	writes  int
	invalid []error // model validation failures of what was written
}

func (s *recordingStore) write(validate func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if err := validate(); err != nil {
		s.invalid = append(s.invalid, err)
	}
}

func (s *recordingStore) WithdrawWeight(context.Context, string) (bool, error) { return false, nil }

// The rollout group calls: a create writes (what the model refuses must never get here), and
// there is no group to read or steer.
func (s *recordingStore) CreateRolloutGroup(_ context.Context, spec model.RolloutGroupSpec) (*model.RolloutGroup, error) {
	s.write(spec.Validate)
	return &model.RolloutGroup{GroupID: spec.GroupID, State: model.GroupPending, Spec: spec}, nil
}
func (s *recordingStore) ControlRolloutGroup(_ context.Context, id, _, _ string) (*model.RolloutGroup, error) {
	return nil, model.Errorf(model.ErrResourceNotFound, "rollout group %q not found", id)
}
func (s *recordingStore) RolloutGroup(_ context.Context, id string) (*model.RolloutGroup, error) {
	return nil, model.Errorf(model.ErrResourceNotFound, "rollout group %q not found", id)
}
func (s *recordingStore) RolloutGroups(context.Context) ([]model.RolloutGroup, error) {
	return nil, nil
}

func (s *recordingStore) Ping(context.Context) error { return nil }
func (s *recordingStore) UpsertDomain(_ context.Context, d model.Domain) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}
func (s *recordingStore) FreshDomains(context.Context) ([]string, error) {
	return []string{"cf-apps"}, nil
}
func (s *recordingStore) Cells(context.Context) ([]model.CellPresence, error) {
	return []model.CellPresence{{CellID: "c", Zone: "z"}}, nil
}
func (s *recordingStore) UpsertCell(context.Context, model.CellPresence, time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}
func (s *recordingStore) RemoveCell(context.Context, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}

// fuzzLRP is the store's LRP of guid: "app" with a protocol-written definition, "json" with
// one from the JSON API.
func fuzzLRP(guid string) *model.DesiredLRP {
	d := &model.DesiredLRP{
		ProcessGUID: guid, Domain: "cf-apps", Instances: 1,
		Routes:          model.Routes{"diego-ssh": json.RawMessage(`{"container_port":2222}`)},
		MetricTags:      map[string]json.RawMessage{"source_id": json.RawMessage(`{"static":"s"}`)},
		ModificationTag: model.ModificationTag{Epoch: "e", Index: 1},
		LRPDefinition: model.LRPDefinition{DefinitionID: guid, RootFS: "preloaded:cflinuxfs4", MemoryMB: 64,
			Action:      &model.Action{Run: &model.RunAction{Path: "/bin/app", User: "vcap"}},
			EgressRules: json.RawMessage(`[{"protocol":"tcp","destinations":["10.0.0.0/8"],"ports":[80]}]`)},
	}
	if guid == "app" {
		b, _ := proto.Marshal(&pb.LRPDefinition{RootFs: "preloaded:cflinuxfs4", MemoryMb: 64, LegacyDownloadUser: "vcap",
			Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app", User: "vcap"}},
			ImageLayers: []*pb.ImageLayer{
				{Url: "https://l/1", DestinationPath: "/", LayerType: pb.ImageLayer_SHARED, MediaType: pb.ImageLayer_TGZ},
				{Url: "https://l/2", DestinationPath: "/x", LayerType: pb.ImageLayer_EXCLUSIVE, MediaType: pb.ImageLayer_TGZ,
					DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "abc"},
			}})
		d.Protobuf = b
	}
	return d
}

func (s *recordingStore) lookup(guid string) (*model.DesiredLRP, error) {
	if guid != "app" {
		return nil, model.Errorf(model.ErrResourceNotFound, "desired LRP %q not found", guid)
	}
	return fuzzLRP(guid), nil
}

func (s *recordingStore) DesireLRP(_ context.Context, d *model.DesiredLRP) (*model.DesiredLRP, error) {
	if d.ProcessGUID == "app" {
		return nil, model.Errorf(model.ErrResourceExists, "desired LRP %q already exists", d.ProcessGUID)
	}
	s.write(func() error {
		if err := d.Validate(); err != nil {
			return err
		}
		return storable(d.RolloutStrategy)
	})
	return d, nil
}
func (s *recordingStore) DesiredLRPByProcessGUID(_ context.Context, guid string) (*model.DesiredLRP, error) {
	return s.lookup(guid)
}
func (s *recordingStore) EachDesiredLRP(_ context.Context, _ model.DesiredLRPFilter, fn func(*model.DesiredLRP) error) error {
	for _, guid := range []string{"app", "json"} {
		if err := fn(fuzzLRP(guid)); err != nil {
			return err
		}
	}
	return nil
}
func (s *recordingStore) DesiredLRPRoutingInfos(context.Context, model.DesiredLRPFilter) ([]model.DesiredLRP, error) {
	return []model.DesiredLRP{*fuzzLRP("app"), *fuzzLRP("json")}, nil
}
func (s *recordingStore) EachSchedulingInfo(_ context.Context, _ model.DesiredLRPFilter, fn func(*model.DesiredLRPSchedulingInfo) error) error {
	return fn(&model.DesiredLRPSchedulingInfo{ProcessGUID: "app", Domain: "cf-apps", RootFS: "preloaded:cflinuxfs4",
		VolumeDrivers: []string{"nfs"}, Routes: model.Routes{"r": json.RawMessage(`[]`)}})
}
func (s *recordingStore) UpdateDesiredLRP(_ context.Context, guid string, u *model.DesiredLRPUpdate) (*db.UpdateResult, error) {
	before, err := s.lookup(guid)
	if err != nil {
		return nil, err
	}
	s.write(func() error {
		if err := u.Validate(); err != nil {
			return err
		}
		return storable(u.RolloutStrategy)
	})
	return &db.UpdateResult{Before: before, After: before}, nil
}

// storable checks that the store can keep a strategy: it writes it as JSON.
func storable(st *model.RolloutStrategy) error {
	_, err := json.Marshal(st)
	return err
}

func (s *recordingStore) RemoveDesiredLRP(_ context.Context, guid string) (*db.RemoveResult, error) {
	d, err := s.lookup(guid)
	if err != nil {
		return nil, err
	}
	s.write(func() error { return nil })
	return &db.RemoveResult{Removed: d}, nil
}
func (s *recordingStore) RolloutByProcessGUID(_ context.Context, guid string) (*model.Rollout, error) {
	return nil, model.Errorf(model.ErrResourceNotFound, "no rollout of %q", guid)
}
func (s *recordingStore) RecordRolloutControl(_ context.Context, guid, _ string, _ func(*model.Rollout) error) (*model.Rollout, error) {
	return nil, model.Errorf(model.ErrNoRolloutInProgress, "LRP %q has no rollout in progress", guid)
}
func (s *recordingStore) SetRolloutPace(_ context.Context, id string, n int32) (*model.Rollout, error) {
	s.write(func() error {
		if n < 1 {
			return model.Errorf(model.ErrInvalidRequest, "max_in_flight %d", n)
		}
		return nil
	})
	return &model.Rollout{ID: id}, nil
}

func (s *recordingStore) StartRollout(_ context.Context, req db.RolloutRequest) (*db.RolloutStart, error) {
	d, err := s.lookup(req.ProcessGUID)
	if err != nil {
		return nil, err
	}
	s.write(func() error {
		if req.Definition != nil {
			if err := req.Definition.Validate(); err != nil {
				return err
			}
		}
		if err := req.Strategy.Validate(); err != nil {
			return err
		}
		if err := req.Strategy.Supported(); err != nil {
			return err
		}
		return storable(req.Strategy)
	})
	return &db.RolloutStart{Rollout: &model.Rollout{ProcessGUID: req.ProcessGUID, ToDefinitionID: req.DefinitionID}, Desired: d}, nil
}
func (s *recordingStore) LRPDeploymentByProcessGUID(_ context.Context, guid string) (*model.LRPDeployment, error) {
	d, err := s.lookup(guid)
	if err != nil {
		return nil, err
	}
	return &model.LRPDeployment{ProcessGUID: guid, Domain: d.Domain, ActiveDefinitionID: guid,
		Definitions: map[string]model.LRPDefinition{guid: d.LRPDefinition, "old": fuzzLRP("json").LRPDefinition}}, nil
}
func (s *recordingStore) LRPDeployments(ctx context.Context, _ model.DesiredLRPFilter) ([]model.LRPDeployment, error) {
	d, err := s.LRPDeploymentByProcessGUID(ctx, "app")
	return []model.LRPDeployment{*d}, err
}

// fuzzTask is the store's task of guid: "t", RUNNING on cell c, desired through the protocol
// (with its definition's protobuf, image layers and all), and "j", COMPLETED, desired through
// the JSON API (without).
func fuzzTask(guid string) *model.Task {
	t := &model.Task{TaskGUID: guid, Domain: "cf-tasks", State: model.TaskRunning, CellID: "c", CreatedAt: 1, UpdatedAt: 2,
		TaskDefinition: model.TaskDefinition{RootFS: "preloaded:cflinuxfs4", MemoryMB: 64,
			Action:      &model.Action{Run: &model.RunAction{Path: "/bin/true", User: "vcap"}},
			EgressRules: json.RawMessage(`[{"protocol":"tcp","destinations":["10.0.0.0/8"],"ports":[80]}]`)}}
	if guid == "t" {
		t.Protobuf, _ = proto.Marshal(&pb.TaskDefinition{RootFs: "preloaded:cflinuxfs4", MemoryMb: 64, LegacyDownloadUser: "vcap",
			Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/true", User: "vcap"}},
			ImageLayers: []*pb.ImageLayer{{Url: "https://l/1", DestinationPath: "/x", LayerType: pb.ImageLayer_EXCLUSIVE,
				MediaType: pb.ImageLayer_TGZ, DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "abc"}}})
	} else {
		t.State, t.CellID, t.Failed, t.FailureReason = model.TaskCompleted, "", true, "x"
	}
	return t
}

func (s *recordingStore) task(guid string) (*model.Task, error) {
	if guid != "t" && guid != "j" {
		return nil, model.Errorf(model.ErrResourceNotFound, "no task %q", guid)
	}
	return fuzzTask(guid), nil
}

// changeTask is every task change of the fake store: a write to a task that exists, which
// the store does not check further (the routes' refusals come before the store).
func (s *recordingStore) changeTask(guid string) (*db.TaskChange, error) {
	t, err := s.task(guid)
	if err != nil {
		return nil, err
	}
	s.write(func() error { return nil })
	return &db.TaskChange{Before: *t, After: *t}, nil
}

func (s *recordingStore) DesireTask(_ context.Context, t *model.Task) (*model.Task, error) {
	if _, err := s.task(t.TaskGUID); err == nil {
		return nil, model.Errorf(model.ErrResourceExists, "task %q already exists", t.TaskGUID)
	}
	s.write(t.Validate)
	return t, nil
}
func (s *recordingStore) Tasks(context.Context, model.TaskFilter) ([]model.Task, error) {
	return []model.Task{*fuzzTask("t"), *fuzzTask("j")}, nil
}
func (s *recordingStore) TaskByGUID(_ context.Context, guid string) (*model.Task, error) {
	return s.task(guid)
}
func (s *recordingStore) StartTask(_ context.Context, guid, _ string) (bool, *db.TaskChange, error) {
	ch, err := s.changeTask(guid)
	return err == nil, ch, err
}
func (s *recordingStore) CompleteTask(_ context.Context, guid, _ string, _ bool, _, _ string) (*db.TaskChange, error) {
	return s.changeTask(guid)
}
func (s *recordingStore) FailTask(_ context.Context, guid, _ string) (*db.TaskChange, error) {
	return s.changeTask(guid)
}
func (s *recordingStore) CancelTask(_ context.Context, guid string) (*db.TaskChange, error) {
	return s.changeTask(guid)
}
func (s *recordingStore) RejectTask(_ context.Context, guid, _ string, _ int) (*db.TaskChange, error) {
	return s.changeTask(guid)
}
func (s *recordingStore) ResolvingTask(_ context.Context, guid string) (*db.TaskChange, error) {
	return s.changeTask(guid)
}
func (s *recordingStore) DeleteTask(_ context.Context, guid string) (*model.Task, error) {
	ch, err := s.changeTask(guid)
	if err != nil {
		return nil, err
	}
	return &ch.Before, nil
}

// The instances the fake store holds: two definitions at index 0 of one LRP (a rollout), a
// suspect and an evacuating record, so that every list and group path has work.
var fuzzInstances = []model.ActualLRP{
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d1", Index: 0, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i1", CellID: "c"}, State: model.StateRunning,
		Presence: model.PresenceOrdinary, AvailabilityZone: "z",
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d1", Index: 0, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i0", CellID: "c0"}, State: model.StateRunning,
		Presence: model.PresenceEvacuating},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d2", Index: 0, Domain: "cf-apps"},
		State: model.StateUnclaimed, Presence: model.PresenceOrdinary},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d2", Index: 1, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i2", CellID: "gone"}, State: model.StateRunning,
		Presence: model.PresenceSuspect},
}

func (s *recordingStore) ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error) {
	var out []model.ActualLRP
	err := s.EachActualLRP(ctx, f, func(a *model.ActualLRP) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

func (s *recordingStore) EachActualLRP(_ context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error {
	for _, a := range fuzzInstances {
		if (f.ProcessGUID == "" || f.ProcessGUID == a.ProcessGUID) && (f.CellID == "" || f.CellID == a.CellID) &&
			(f.Domain == "" || f.Domain == a.Domain) && (f.DefinitionID == "" || f.DefinitionID == a.DefinitionID) &&
			(f.Index == nil || *f.Index == a.Index) {
			if err := fn(&a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *recordingStore) ActualLRPGroupByProcessGUIDAndIndex(ctx context.Context, guid string, index int32) (*model.ActualLRPGroup, error) {
	lrps, _ := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid, Index: &index})
	groups := model.GroupActualLRPs(lrps)
	if len(groups) == 0 {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance")
	}
	return &groups[0], nil
}

func (s *recordingStore) RetireActualLRP(_ context.Context, key model.ActualLRPKey) (*model.ActualLRP, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return &fuzzInstances[0], nil
}

// countingStopper counts the stops retire asks for: writes too.
type countingStopper struct{ store *recordingStore }

func (s countingStopper) StopInstances(context.Context, []model.ActualLRP) error {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	s.store.writes++
	return nil
}

// endedEvents is an event source whose subscriptions have already ended (as when a
// subscriber falls behind): a stream that starts returns at once, so that the fuzzer can
// call the stream routes like the others.
type endedEvents struct{}

func (endedEvents) Subscribe() (<-chan model.Event, func()) {
	ch := make(chan model.Event)
	close(ch)
	return ch, func() {}
}

// fuzzRoutes are the routes the fuzzer calls, with the message each answers (nil: an event
// stream).
var fuzzRoutes = []struct {
	path string
	resp func() proto.Message
}{
	{"/v1/ping", func() proto.Message { return &pb.PingResponse{} }},
	{"/v1/domains/list", func() proto.Message { return &pb.DomainsResponse{} }},
	{"/v1/domains/upsert", func() proto.Message { return &pb.UpsertDomainResponse{} }},
	{"/v1/cells/list.r1", func() proto.Message { return &pb.CellsResponse{} }},
	{"/v1/actual_lrps/list", func() proto.Message { return &pb.ActualLRPsResponse{} }},
	{"/v1/actual_lrps/list_by_process_guids", func() proto.Message { return &pb.ActualLRPsByProcessGuidsResponse{} }},
	{"/v1/actual_lrp_groups/list", func() proto.Message { return &pb.ActualLRPGroupsResponse{} }},
	{"/v1/actual_lrp_groups/list_by_process_guid", func() proto.Message { return &pb.ActualLRPGroupsResponse{} }},
	{"/v1/actual_lrp_groups/get_by_process_guid_and_index", func() proto.Message { return &pb.ActualLRPGroupResponse{} }},
	{"/v1/actual_lrps/retire", func() proto.Message { return &pb.ActualLRPLifecycleResponse{} }},
	{"POST /v1/events/lrp_instances.r1", nil},
	{"GET /v1/events.r1", nil},
	{"/v1/desired_lrp/desire.r2", func() proto.Message { return &pb.DesiredLRPLifecycleResponse{} }},
	{"/v1/desired_lrps/get_by_process_guid.r3", func() proto.Message { return &pb.DesiredLRPResponse{} }},
	{"/v1/desired_lrps/get_by_process_guid.r2", func() proto.Message { return &pb.DesiredLRPResponse{} }},
	{"/v1/desired_lrps/list.r3", func() proto.Message { return &pb.DesiredLRPsResponse{} }},
	{"/v1/desired_lrps/list.r2", func() proto.Message { return &pb.DesiredLRPsResponse{} }},
	{"/v1/desired_lrp_scheduling_infos/list", func() proto.Message { return &pb.DesiredLRPSchedulingInfosResponse{} }},
	{"/v1/desired_lrp_scheduling_infos/get_by_process_guid", func() proto.Message { return &pb.DesiredLRPSchedulingInfoByProcessGuidResponse{} }},
	{"/v1/desired_lrp_routing_infos/list", func() proto.Message { return &pb.DesiredLRPsResponse{} }},
	{"/v1/desired_lrp/update", func() proto.Message { return &pb.DesiredLRPLifecycleResponse{} }},
	{"/v1/desired_lrp/remove", func() proto.Message { return &pb.DesiredLRPLifecycleResponse{} }},
	{"/v1/desired_lrp/cancel_update", func() proto.Message { return &pb.DesiredLRPLifecycleResponse{} }},
	{"/v1/desired_lrp/rollback", func() proto.Message { return &pb.DesiredLRPLifecycleResponse{} }},
	{"/v1/lrp_deployments/create", func() proto.Message { return &pb.LRPDeploymentLifecycleResponse{} }},
	{"/v1/lrp_deployments/update", func() proto.Message { return &pb.LRPDeploymentLifecycleResponse{} }},
	{"/v1/lrp_deployments/activate", func() proto.Message { return &pb.LRPDeploymentLifecycleResponse{} }},
	{"/v1/lrp_deployments/delete", func() proto.Message { return &pb.LRPDeploymentLifecycleResponse{} }},
	{"/v1/lrp_deployments/get_by_process_guid", func() proto.Message { return &pb.LRPDeploymentResponse{} }},
	{"/v1/lrp_deployments/list", func() proto.Message { return &pb.LRPDeploymentsResponse{} }},
	// Tasks: after the others, so that the corpus keeps naming the routes it named.
	{"/v1/tasks/desire.r2", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/list.r3", func() proto.Message { return &pb.TasksResponse{} }},
	{"/v1/tasks/list.r2", func() proto.Message { return &pb.TasksResponse{} }},
	{"/v1/tasks/get_by_task_guid.r3", func() proto.Message { return &pb.TaskResponse{} }},
	{"/v1/tasks/get_by_task_guid.r2", func() proto.Message { return &pb.TaskResponse{} }},
	{"/v1/tasks/start", func() proto.Message { return &pb.StartTaskResponse{} }},
	{"/v1/tasks/complete", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/reject", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/fail", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/cancel", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/resolving", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"/v1/tasks/delete", func() proto.Message { return &pb.TaskLifecycleResponse{} }},
	{"POST /v1/events/tasks.r1", nil},
	{"POST /v1/events/tasks", nil},
	// Rollout controls: after the others, as the tasks.
	{"/v1/rollouts/pause", func() proto.Message { return &pb.RolloutControlResponse{} }},
	{"/v1/rollouts/resume", func() proto.Message { return &pb.RolloutControlResponse{} }},
	{"/v1/rollouts/abort", func() proto.Message { return &pb.RolloutControlResponse{} }},
	{"/v1/rollouts/set_pace", func() proto.Message { return &pb.RolloutControlResponse{} }},
	{"/v1/rollouts/promote", func() proto.Message { return &pb.RolloutControlResponse{} }},
	// Rollout groups: after the rollout controls.
	{"/v1/rollout_groups/create", func() proto.Message { return &pb.RolloutGroupResponse{} }},
	{"/v1/rollout_groups/get", func() proto.Message { return &pb.RolloutGroupResponse{} }},
	{"/v1/rollout_groups/list", func() proto.Message { return &pb.RolloutGroupsResponse{} }},
	{"/v1/rollout_groups/pause", func() proto.Message { return &pb.RolloutGroupResponse{} }},
	{"/v1/rollout_groups/resume", func() proto.Message { return &pb.RolloutGroupResponse{} }},
	{"/v1/rollout_groups/abort", func() proto.Message { return &pb.RolloutGroupResponse{} }},
}

// fuzzRoute is the index of path in fuzzRoutes, for the seeds.
func fuzzRoute(path string) uint8 {
	for i, r := range fuzzRoutes {
		if r.path == path {
			return uint8(i)
		}
	}
	panic("no fuzz route " + path)
}

// fuzzSeeds are valid requests of the desired-LRP routes, which the fuzzer mutates.
func fuzzSeeds() map[string][]proto.Message {
	instances, annotation := int32(3), "2"
	lrp := func(guid string) *pb.DesiredLRP {
		return &pb.DesiredLRP{ProcessGuid: guid, Domain: "cf-apps", RootFs: "preloaded:cflinuxfs4", Instances: 1,
			Action:     &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app", User: "vcap"}},
			MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: guid}, "i": {Dynamic: pb.MetricTagValue_INDEX}},
			Routes:     &pb.ProtoRoutes{Routes: map[string][]byte{"cf-router": []byte(`[]`)}}}
	}
	def := &pb.LRPDefinition{DefinitionId: "v2", RootFs: "preloaded:cflinuxfs4",
		Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app", User: "vcap"}}}
	// A strategy this server carries out, and one with every field (canary steps and analysis
	// are refused as not available yet).
	two, zero, ratio, word := int32(2), int64(0), 1.5, "pause"
	strategy := &pb.RolloutStrategy{MaxInFlight: &two, MinReadyMs: &zero, OnFailure: &word,
		Failure: &pb.FailurePolicy{MaxCrashes: &two}}
	full := &pb.RolloutStrategy{MaxInFlight: &two, MinReadyMs: &zero, IndexDeadlineMs: &zero, ProgressDeadlineMs: &zero,
		OnFailure: &word, Failure: &pb.FailurePolicy{MaxCrashes: &two, MaxFailedIndices: &two},
		Canary: &pb.CanaryStrategy{Steps: []*pb.CanaryStep{{Instances: &two, Weight: &two, PauseMs: &zero, Analysis: true, Promote: &word}}},
		Analysis: &pb.RolloutAnalysis{IntervalMs: &zero, MinRequests: &zero, MaxErrorRateRatio: &ratio, MaxP99DeltaMs: &zero,
			MaxCrashRate: &ratio, OnInconclusive: &word},
		Window: &word, BreakGlass: &word}
	withStrategy := lrp("new")
	withStrategy.RolloutStrategy = strategy
	return map[string][]proto.Message{
		"/v1/desired_lrp/desire.r2": {&pb.DesireLRPRequest{DesiredLrp: lrp("new")}, &pb.DesireLRPRequest{DesiredLrp: withStrategy}},
		"/v1/desired_lrp/update": {
			&pb.UpdateDesiredLRPRequest{ProcessGuid: "app", Update: &pb.DesiredLRPUpdate{Instances: &instances, Annotation: &annotation,
				Routes: &pb.ProtoRoutes{}, MetricTags: lrp("app").MetricTags}},
			&pb.UpdateDesiredLRPRequest{ProcessGuid: "app", Update: &pb.DesiredLRPUpdate{Definition: def}},
			&pb.UpdateDesiredLRPRequest{ProcessGuid: "app", Update: &pb.DesiredLRPUpdate{ImageUsername: &annotation, ImagePassword: &annotation}},
			&pb.UpdateDesiredLRPRequest{ProcessGuid: "app", Update: &pb.DesiredLRPUpdate{Definition: def, Strategy: strategy, RolloutStrategy: strategy}},
			&pb.UpdateDesiredLRPRequest{ProcessGuid: "app", Update: &pb.DesiredLRPUpdate{Definition: def, Strategy: full}},
		},
		"/v1/desired_lrps/get_by_process_guid.r2": {&pb.DesiredLRPByProcessGuidRequest{ProcessGuid: "app"}},
		"/v1/desired_lrp/rollback": {&pb.RollbackDesiredLRPRequest{ProcessGuid: "app", DefinitionId: "old"},
			&pb.RollbackDesiredLRPRequest{ProcessGuid: "app", DefinitionId: "old", Strategy: strategy}},
		"/v1/lrp_deployments/activate": {&pb.ActivateLRPDeploymentDefinitionRequest{ProcessGuid: "app", DefinitionId: "old", Strategy: strategy}},
		"/v1/lrp_deployments/create": {&pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
			ProcessGuid: "new", Domain: "d", DefinitionId: "v1", Definition: def, RolloutStrategy: strategy}}},
		"/v1/lrp_deployments/update": {
			&pb.UpdateLRPDeploymentRequest{ProcessGuid: "app", Update: &pb.LRPDeploymentUpdate{DefinitionId: &def.DefinitionId, Definition: def}},
			&pb.UpdateLRPDeploymentRequest{ProcessGuid: "app", Update: &pb.LRPDeploymentUpdate{DefinitionId: &def.DefinitionId, Definition: def},
				Strategy: strategy, RolloutStrategy: full},
		},
		"/v1/rollouts/pause":    {&pb.PauseRolloutRequest{ProcessGuid: "app"}},
		"/v1/rollouts/resume":   {&pb.ResumeRolloutRequest{ProcessGuid: "app"}},
		"/v1/rollouts/abort":    {&pb.AbortRolloutRequest{ProcessGuid: "app", Reason: "p99"}},
		"/v1/rollouts/set_pace": {&pb.SetRolloutPaceRequest{ProcessGuid: "app", MaxInFlight: &two}},
		"/v1/rollouts/promote":  {&pb.PromoteRolloutRequest{ProcessGuid: "app", Full: true}},
		"/v1/rollout_groups/create": {&pb.CreateRolloutGroupRequest{GroupId: "g", Selector: &pb.RolloutGroupSelector{Domain: "cf-apps",
			ProcessGuids: []string{"app"}, MetricTags: map[string]string{"space": "s"}},
			Patch:    &pb.DefinitionPatch{RootFs: &def.RootFs, EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "A", Value: "b"}}},
			Strategy: strategy, Waves: []*pb.RolloutWave{{Percent: 10}, {Percent: 100}}, PauseBetweenWavesMs: 1000,
			MaxConcurrentLrps: 5, MaxConcurrentPerCell: 2, MaxFailedPercent: 5}},
		"/v1/rollout_groups/abort": {&pb.RolloutGroupRequest{GroupId: "g", Reason: "bad stack"}},
		"/v1/tasks/desire.r2": {&pb.DesireTaskRequest{TaskGuid: "new", Domain: "cf-tasks", TaskDefinition: &pb.TaskDefinition{
			RootFs: "preloaded:cflinuxfs4", Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/true", User: "vcap"}},
			CompletionCallbackUrl: "https://cc/completed", MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: "s"}},
			ImageLayers: []*pb.ImageLayer{{Url: "https://l", DestinationPath: "/", LayerType: pb.ImageLayer_SHARED, MediaType: pb.ImageLayer_TGZ}}}}},
		"/v1/tasks/get_by_task_guid.r2": {&pb.TaskByGuidRequest{TaskGuid: "t"}},
		"/v1/tasks/start":               {&pb.StartTaskRequest{TaskGuid: "t", CellId: "c"}},
		"/v1/tasks/complete":            {&pb.CompleteTaskRequest{TaskGuid: "t", CellId: "c", Result: "r"}},
		"/v1/tasks/reject":              {&pb.RejectTaskRequest{TaskGuid: "t", RejectionReason: "full"}},
		"/v1/tasks/cancel":              {&pb.TaskGuidRequest{TaskGuid: "j"}},
	}
}

// FuzzRequests posts arbitrary bytes to every route: the answer is always a 200 protobuf
// message of the route's response type, never a panic or a 500, and an answer carrying an
// error wrote nothing. `make fuzz` runs it; `make test` replays testdata/fuzz.
func FuzzRequests(f *testing.F) {
	f.Add(uint8(2), []byte{})
	f.Add(uint8(2), []byte{0x0a, 0x07, 'c', 'f', '-', 'a', 'p', 'p', 's', 0x10, 0x78})
	f.Add(uint8(2), []byte{0x08, 0x01})
	f.Add(uint8(2), []byte{0x0a, 0x02, 0xc3, 0x28})
	f.Add(uint8(0), []byte{0xff})
	f.Add(uint8(3), []byte{0xf8, 0x3e, 0x01})                                                      // an unknown field 999
	f.Add(uint8(4), []byte{0x1a, 0x01, 'p', 0x20, 0x00})                                           // actual_lrps/list {process_guid p, index 0}
	f.Add(uint8(4), []byte{0x20, 0xff, 0xff, 0xff, 0xff, 0x0f})                                    // index -1
	f.Add(uint8(5), []byte{0x0a, 0x01, 'p', 0x0a, 0x01, 'p', 0x0a, 0x00})                          // list_by_process_guids p, p, ""
	f.Add(uint8(8), []byte{0x0a, 0x01, 'p', 0x10, 0x01})                                           // group of p at index 1
	f.Add(uint8(9), []byte{0x0a, 0x0b, 0x0a, 0x01, 'p', 0x1a, 0x06, 'c', 'f', '-', 'a', 'p', 'p'}) // retire p/0 in cf-app
	f.Add(uint8(9), []byte{0x0a, 0x00})                                                            // retire an empty key
	f.Add(uint8(10), []byte{0x0a, 0x01, 'c'})                                                      // instance events of cell c
	f.Add(uint8(11), []byte{0x0a, 0x01})                                                           // group events, truncated
	for path, msgs := range fuzzSeeds() {
		for _, m := range msgs {
			b, err := proto.Marshal(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(fuzzRoute(path), b)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rt := fuzzRoutes[int(which)%len(fuzzRoutes)]
		store := &recordingStore{}
		d := deps(store, countingStopper{store}, &recorders.Rollouts{}, zap.NewNop())
		d.Events, d.Tasks = endedEvents{}, tasks.NewService(store, nil, model.DefaultMaxTaskRetries, zap.NewNop())
		s := protocol.NewServer(d)
		s.MarkReady()
		method, path := http.MethodPost, rt.path
		if m, p, ok := strings.Cut(rt.path, " "); ok {
			method, path = m, p
		}
		req := httptest.NewRequest(method, path, strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if rt.resp == nil {
			// An event stream: BBS's bare 500 for a request that does not parse, else the
			// stream's headers (and, its subscription over, nothing more). The task streams
			// read no request.
			readsBody := !strings.HasPrefix(path, "/v1/events/tasks")
			parses := !readsBody || proto.Unmarshal(body, &pb.EventsByCellId{}) == nil
			switch {
			case w.Code == http.StatusInternalServerError && w.Body.Len() == 0 && readsBody:
			case w.Code == http.StatusOK && w.Header().Get("Content-Type") == "text/event-stream; charset=utf-8" && parses:
			default:
				t.Fatalf("%s: %d %q %q", rt.path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
			}
			if store.writes != 0 {
				t.Fatalf("%s: a stream wrote %d times", rt.path, store.writes)
			}
			return
		}
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/x-protobuf" {
			t.Fatalf("%s: %d %q", rt.path, w.Code, w.Header().Get("Content-Type"))
		}
		resp := rt.resp()
		if err := proto.Unmarshal(w.Body.Bytes(), resp); err != nil {
			t.Fatalf("%s: answer does not decode as %T: %v", rt.path, resp, err)
		}
		if len(store.invalid) > 0 {
			t.Fatalf("%s: wrote what the model's validation refuses: %v", rt.path, store.invalid)
		}
		if e, ok := resp.(interface{ GetError() *pb.Error }); ok && e.GetError() != nil {
			if store.writes != 0 {
				t.Fatalf("%s: answered %v but wrote %d times", rt.path, e.GetError(), store.writes)
			}
			if e.GetError().GetType() == pb.Error_UnknownError {
				t.Fatalf("%s: unknown error for bad input: %v", rt.path, e.GetError())
			}
		}
	})
}
