package protocol_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// Cloud Controller's update always carries instances, annotation, metric tags and routes,
// the diego-ssh route copied back from its read (BBS-PROTOCOL.md §4.2): the LRP takes them,
// keeps its definition, and bumps its modification tag.
func TestCloudControllerUpdate(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)
	read := s.get("r2", ccProcess)

	instances, annotation := int32(3), "1761234999.5"
	tags := proto.Clone(in).(*pb.DesiredLRP).MetricTags
	tags["app_name"] = &pb.MetricTagValue{Static: "renamed"}
	routes := &pb.ProtoRoutes{Routes: map[string][]byte{
		"cf-router": []byte(`[{"hostnames":["renamed.example.com"],"port":8080}]`),
		"diego-ssh": read.GetRoutes().GetRoutes()["diego-ssh"],
	}}
	if err := s.update(ccProcess, &pb.DesiredLRPUpdate{Instances: &instances, Annotation: &annotation, MetricTags: tags, Routes: routes}); err != nil {
		t.Fatalf("update: %v", err)
	}
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), ccProcess)
	if err != nil {
		t.Fatal(err)
	}
	want := stored(in, m.ModificationTag)
	want.Instances, want.Annotation, want.MetricTags, want.Routes = instances, annotation, tags, routes
	if m.ModificationTag.Index != 1 {
		t.Errorf("modification tag %+v, want index 1", m.ModificationTag)
	}
	if got := s.get("r3", ccProcess); !proto.Equal(got, want) {
		t.Fatalf("after the update: %s", diffProto(got, want))
	}
	if lrps, err := s.store.ActualLRPs(t.Context(), model.ActualLRPFilter{ProcessGUID: ccProcess}); err != nil || len(lrps) != 3 {
		t.Fatalf("instances after scaling to 3: %d, %v", len(lrps), err)
	}

	// Only what an update carries changes: instances alone leave routes and tags; routes
	// present and empty clear them; metric tags cannot be cleared (an empty map is no map).
	one := int32(1)
	for _, u := range []*pb.DesiredLRPUpdate{{Instances: &one}, {Routes: &pb.ProtoRoutes{}}, {MetricTags: map[string]*pb.MetricTagValue{}}, nil} {
		if err := s.update(ccProcess, u); err != nil {
			t.Fatalf("update %v: %v", u, err)
		}
	}
	got := s.get("r3", ccProcess)
	want.Instances, want.Routes, want.ModificationTag.Index = 1, &pb.ProtoRoutes{}, 5
	if !proto.Equal(got, want) {
		t.Fatalf("after the partial updates: %s", diffProto(got, want))
	}
}

// BBS writes an update's image credentials into the LRP's run info: here into the active
// definition's protobuf, and nowhere else.
func TestUpdateImageCredentials(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)
	user, password := "new-user", "new-password"
	if err := s.update(ccProcess, &pb.DesiredLRPUpdate{ImageUsername: &user, ImagePassword: &password}); err != nil {
		t.Fatalf("update: %v", err)
	}
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), ccProcess)
	if err != nil {
		t.Fatal(err)
	}
	want := stored(in, m.ModificationTag)
	want.ImageUsername, want.ImagePassword = user, password
	if got := s.get("r3", ccProcess); !proto.Equal(got, want) || m.ModificationTag.Index != 1 {
		t.Fatalf("after the credentials update (tag %+v): %s", m.ModificationTag, diffProto(got, want))
	}

	// An LRP desired through the JSON API has no protobuf yet: the update makes one from the
	// model.
	if _, err := s.store.DesireLRP(t.Context(), &model.DesiredLRP{ProcessGUID: "json", Domain: "cf-apps",
		LRPDefinition: model.LRPDefinition{RootFS: "docker:///private/image", MemoryMB: 64,
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/app", User: "root"}}}}); err != nil {
		t.Fatal(err)
	}
	before := s.get("r3", "json")
	if err := s.update("json", &pb.DesiredLRPUpdate{ImageUsername: &user, ImagePassword: &password}); err != nil {
		t.Fatalf("update: %v", err)
	}
	after := s.get("r3", "json")
	before.ImageUsername, before.ImagePassword, before.ModificationTag.Index = user, password, 1
	if !proto.Equal(after, before) {
		t.Fatalf("credentials on a JSON API LRP: %s", diffProto(after, before))
	}
}

// An update with our definition (field 1000) starts a rolling update through the same path
// as the JSON API's: the new definition is stored as sent and becomes active, the previous
// one is named, the workflow is started, and the other fields apply in the same transaction.
// Another definition while it runs is a conflict with our message; cancel signals the
// workflow; the LRP's deployment shows both definitions as they were sent.
func TestUpdateWithADefinitionStartsARollingUpdate(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)

	next := proto.Clone(in).(*pb.DesiredLRP)
	next.EnvironmentVariables = append(next.EnvironmentVariables, &pb.EnvironmentVariable{Name: "VERSION", Value: "2"})
	next.MemoryMb = 512
	v2 := definitionOf(t, next, "v2")
	instances := int32(3)
	if err := s.update(ccProcess, &pb.DesiredLRPUpdate{Definition: v2, Instances: &instances}); err != nil {
		t.Fatalf("update with a definition: %v", err)
	}
	if calls := s.rollouts.Calls(); len(calls) != 1 || calls[0] != "start:"+ccProcess+":v2" {
		t.Fatalf("workflow calls = %v", calls)
	}
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), ccProcess)
	if err != nil {
		t.Fatal(err)
	}
	want := stored(next, m.ModificationTag)
	want.Instances, want.DefinitionId, want.PreviousDefinitionId = 3, "v2", ccProcess
	if got := s.get("r3", ccProcess); !proto.Equal(got, want) {
		t.Fatalf("during the rollout: %s", diffProto(got, want))
	}
	var info pb.DesiredLRPSchedulingInfoByProcessGuidResponse
	s.post("/v1/desired_lrp_scheduling_infos/get_by_process_guid", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: ccProcess}, &info)
	if i := info.GetDesiredLrpSchedulingInfo(); i.GetDefinitionId() != "v2" || i.GetPreviousDefinitionId() != ccProcess ||
		i.GetDesiredLrpResource().GetMemoryMb() != 512 || i.GetInstances() != 3 {
		t.Fatalf("scheduling info = %v", i)
	}
	var dep pb.LRPDeploymentResponse
	s.post("/v1/lrp_deployments/get_by_process_guid", &pb.LRPDeploymentByProcessGuidRequest{ProcessGuid: ccProcess}, &dep)
	defs := dep.GetLrpDeployment().GetDefinitions()
	if v1 := definitionOf(t, in, ccProcess); len(defs) != 2 || !proto.Equal(defs[ccProcess], v1) || !proto.Equal(defs["v2"], v2) {
		t.Fatalf("deployment's definitions: %v", defs)
	}

	v3 := definitionOf(t, next, "v3")
	err2 := s.update(ccProcess, &pb.DesiredLRPUpdate{Definition: v3})
	if err2.GetType() != pb.Error_ResourceConflict || err2.GetMessage() != `LRP "`+ccProcess+`" is rolling out to "v2"; cancel it or wait` {
		t.Fatalf("a definition during a rollout: %v", err2)
	}

	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/cancel_update", &pb.CancelUpdateDesiredLRPRequest{ProcessGuid: ccProcess}, &resp)
	if resp.GetError() != nil {
		t.Fatalf("cancel_update: %v", resp.GetError())
	}
	if calls := s.rollouts.Calls(); len(calls) != 2 || calls[1] != "cancel:"+ccProcess+":v2" {
		t.Fatalf("workflow calls = %v", calls)
	}
}

// Seed 000's deployments: created with one definition, given more (superseding a rollout
// under way), activated, listed and deleted through the protocol.
func TestLRPDeployments(t *testing.T) {
	s := newServer(t)
	cc := ccDesiredLRP(ccProcess)
	v1 := definitionOf(t, cc, "v1")
	var life pb.LRPDeploymentLifecycleResponse
	s.post("/v1/lrp_deployments/create", &pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
		ProcessGuid: "dep", Domain: "cf-apps", Instances: 1, Routes: cc.Routes, Annotation: "a", DefinitionId: "v1", Definition: v1}}, &life)
	if life.GetError() != nil {
		t.Fatalf("create: %v", life.GetError())
	}
	get := func() *pb.LRPDeployment {
		t.Helper()
		var resp pb.LRPDeploymentResponse
		s.post("/v1/lrp_deployments/get_by_process_guid", &pb.LRPDeploymentByProcessGuidRequest{ProcessGuid: "dep"}, &resp)
		if resp.GetError() != nil {
			t.Fatalf("get: %v", resp.GetError())
		}
		return resp.GetLrpDeployment()
	}
	dep := get()
	want := &pb.LRPDeployment{ProcessGuid: "dep", Domain: "cf-apps", Instances: 1, Routes: cc.Routes, Annotation: "a",
		ModificationTag: dep.GetModificationTag(), Definitions: map[string]*pb.LRPDefinition{"v1": v1}, ActiveDefinitionId: "v1"}
	if !proto.Equal(dep, want) {
		t.Fatalf("created: %s", diffProto(dep, want))
	}

	for i, id := range []string{"v2", "v3"} {
		def := definitionOf(t, cc, id)
		def.MemoryMb = int32(300 + i)
		s.post("/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "dep",
			Update: &pb.LRPDeploymentUpdate{DefinitionId: &def.DefinitionId, Definition: def}}, &life)
		if life.GetError() != nil {
			t.Fatalf("update to %s: %v", id, life.GetError())
		}
	}
	s.post("/v1/lrp_deployments/activate", &pb.ActivateLRPDeploymentDefinitionRequest{ProcessGuid: "dep", DefinitionId: "v1"}, &life)
	if life.GetError() != nil {
		t.Fatalf("activate: %v", life.GetError())
	}
	if calls := s.rollouts.Calls(); len(calls) != 3 || calls[0] != "start:dep:v2" || calls[1] != "supersede:dep:v3" || calls[2] != "supersede:dep:v1" {
		t.Fatalf("workflow calls = %v", calls)
	}
	if dep := get(); dep.GetActiveDefinitionId() != "v1" || len(dep.GetDefinitions()) != 3 || dep.GetDefinitions()["v3"].GetMemoryMb() != 301 {
		t.Fatalf("after the updates: active %s, definitions %v", dep.GetActiveDefinitionId(), dep.GetDefinitions())
	}
	// The definition id beside a definition must agree with the one inside it.
	other := definitionOf(t, cc, "v4")
	id := "v5"
	s.post("/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: "dep",
		Update: &pb.LRPDeploymentUpdate{DefinitionId: &id, Definition: other}}, &life)
	if life.GetError().GetType() != pb.Error_InvalidRequest {
		t.Fatalf("mismatched ids: %v", life.GetError())
	}

	var list pb.LRPDeploymentsResponse
	s.post("/v1/lrp_deployments/list", &pb.LRPDeploymentsRequest{Domain: "cf-apps"}, &list)
	if len(list.GetLrpDeployments()) != 1 {
		t.Fatalf("list: %v", list.GetLrpDeployments())
	}
	s.post("/v1/lrp_deployments/delete", &pb.DeleteLRPDeploymentRequest{ProcessGuid: "dep"}, &life)
	if life.GetError() != nil {
		t.Fatalf("delete: %v", life.GetError())
	}
	var gone pb.LRPDeploymentResponse
	s.post("/v1/lrp_deployments/get_by_process_guid", &pb.LRPDeploymentByProcessGuidRequest{ProcessGuid: "dep"}, &gone)
	if gone.GetError().GetType() != pb.Error_ResourceNotFound {
		t.Fatalf("after delete: %v", gone.GetError())
	}
}

// Removing an LRP stops the instances cells hold and deletes it; a second remove is
// ResourceNotFound, which Cloud Controller ignores.
func TestRemoveDesiredLRP(t *testing.T) {
	s := newServer(t)
	s.desire(minimalDesiredLRP("app"))
	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/remove", &pb.RemoveDesiredLRPRequest{ProcessGuid: "app"}, &resp)
	if resp.GetError() != nil {
		t.Fatalf("remove: %v", resp.GetError())
	}
	s.post("/v1/desired_lrp/remove", &pb.RemoveDesiredLRPRequest{ProcessGuid: "app"}, &resp)
	if resp.GetError().GetType() != pb.Error_ResourceNotFound || resp.GetError().GetMessage() != "the requested resource could not be found" {
		t.Fatalf("second remove: %v", resp.GetError())
	}
}
