package protocol_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// A rollout group created through the protocol rolls LRPs a BBS client desired: each
// member's definition is patched in its protobuf too, so the protocol answers what the
// member runs (the new root_fs and env, every other field as the client gave it). get, list
// and the controls answer as the JSON API does, errors as BBS errors.
func TestRolloutGroupThroughTheProtocol(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Cells: 2,
		Capacity: model.CellCapacity{MemoryMB: 2048, DiskMB: 2048, Containers: 40}})
	s := &server{t: t, url: c.ProtocolURL, store: c.Store}
	for i := range 3 {
		s.desire(simDesiredLRP(fmt.Sprintf("web-%d", i), 2, "1"))
	}
	stack := "preloaded:cflinuxfs4-v2"
	var created pb.RolloutGroupResponse
	s.post("/v1/rollout_groups/create", &pb.CreateRolloutGroupRequest{GroupId: "stack",
		Selector: &pb.RolloutGroupSelector{Domain: "cf-apps", MetricTags: map[string]string{"source_id": "web-1"}},
		Patch:    &pb.DefinitionPatch{RootFs: &stack, EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "VERSION", Value: "2"}}},
		Waves:    []*pb.RolloutWave{{Percent: 100}}, MaxConcurrentLrps: 1}, &created)
	if created.GetError() != nil || len(created.GetRolloutGroup().GetWaves()) != 1 ||
		len(created.GetRolloutGroup().GetWaves()[0].GetMembers()) != 1 || created.GetRolloutGroup().GetSpec().GetMaxConcurrentLrps() != 1 {
		t.Fatalf("create: %v", &created)
	}
	testwait.Until(t, 60*time.Second, 100*time.Millisecond, "the group to complete", func() bool {
		var resp pb.RolloutGroupResponse
		s.post("/v1/rollout_groups/get", &pb.RolloutGroupRequest{GroupId: "stack"}, &resp)
		return resp.GetRolloutGroup().GetState() == model.GroupCompleted
	})
	got := s.get("r2", "web-1")
	if got.GetRootFs() != stack || got.GetMetricTags()["source_id"].GetStatic() != "web-1" || len(got.GetEnvironmentVariables()) != 2 ||
		got.GetEnvironmentVariables()[1].GetValue() != "2" || got.GetCheckDefinition() == nil {
		t.Fatalf("the member as the protocol answers it: %v", got)
	}
	if other := s.get("r2", "web-0"); other.GetRootFs() != "preloaded:cflinuxfs4" {
		t.Fatalf("an LRP outside the selection changed: %v", other)
	}
	var list pb.RolloutGroupsResponse
	s.post("/v1/rollout_groups/list", &pb.RolloutGroupsRequest{}, &list)
	if len(list.GetRolloutGroups()) != 1 || list.GetRolloutGroups()[0].GetWaves()[0].GetCounts()[model.MemberCompleted] != 1 {
		t.Fatalf("list: %v", &list)
	}
	for _, tc := range []struct {
		path string
		req  *pb.RolloutGroupRequest
		want pb.Error_Type
	}{
		{"/v1/rollout_groups/abort", &pb.RolloutGroupRequest{GroupId: "stack"}, pb.Error_ResourceConflict},
		{"/v1/rollout_groups/pause", &pb.RolloutGroupRequest{GroupId: "none"}, pb.Error_ResourceNotFound},
		{"/v1/rollout_groups/get", &pb.RolloutGroupRequest{GroupId: "bad id"}, pb.Error_InvalidRequest},
	} {
		var resp pb.RolloutGroupResponse
		s.post(tc.path, tc.req, &resp)
		if resp.GetError().GetType() != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.path, tc.req, resp.GetError(), tc.want)
		}
	}
	var refused pb.RolloutGroupResponse
	s.post("/v1/rollout_groups/create", &pb.CreateRolloutGroupRequest{GroupId: "nothing", Selector: &pb.RolloutGroupSelector{ProcessGuids: []string{"web-1"}},
		Patch: &pb.DefinitionPatch{RootFs: &stack}}, &refused)
	if refused.GetError().GetType() != pb.Error_InvalidRequest {
		t.Fatalf("a patch that changes nothing: %v", &refused)
	}
}
