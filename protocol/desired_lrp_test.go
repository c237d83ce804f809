package protocol_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// desire desires d through the protocol, failing the test on an error.
func (s *server) desire(d *pb.DesiredLRP) {
	s.t.Helper()
	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{DesiredLrp: d}, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("desire %s: %v", d.GetProcessGuid(), resp.GetError())
	}
}

// get reads guid through get_by_process_guid at revision rev ("r3" or "r2").
func (s *server) get(rev, guid string) *pb.DesiredLRP {
	s.t.Helper()
	var resp pb.DesiredLRPResponse
	s.post("/v1/desired_lrps/get_by_process_guid."+rev, &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: guid}, &resp)
	if resp.GetError() != nil {
		s.t.Fatalf("get %s (%s): %v", guid, rev, resp.GetError())
	}
	return resp.GetDesiredLrp()
}

// update sends an update through the protocol and returns its error (nil when it worked).
func (s *server) update(guid string, u *pb.DesiredLRPUpdate) *pb.Error {
	s.t.Helper()
	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/update", &pb.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: u}, &resp)
	return resp.GetError()
}

// stored is how BBS returns d once desired: with its modification tag, and our definition id
// (the process guid when d named none).
func stored(d *pb.DesiredLRP, tag model.ModificationTag) *pb.DesiredLRP {
	want := proto.Clone(d).(*pb.DesiredLRP)
	want.ModificationTag = &pb.ModificationTag{Epoch: tag.Epoch, Index: tag.Index}
	if want.DefinitionId == "" {
		want.DefinitionId = d.GetProcessGuid()
	}
	if want.Routes == nil {
		want.Routes = &pb.ProtoRoutes{}
	}
	return want
}

// Cloud Controller's DesiredLRP, every field set, comes back from .r3 exactly as it was sent
// (plus what BBS adds: the modification tag; and our definition id), from the list too, and
// the route values byte for byte.
func TestDesiredLRPRoundTripsEveryField(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)

	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), ccProcess)
	if err != nil {
		t.Fatal(err)
	}
	want := stored(in, m.ModificationTag)
	got := s.get("r3", ccProcess)
	if !proto.Equal(got, want) {
		t.Fatalf("get_by_process_guid.r3 differs from what was desired: %s", diffProto(got, want))
	}
	for name, v := range in.GetRoutes().GetRoutes() {
		if !bytes.Equal(got.GetRoutes().GetRoutes()[name], v) {
			t.Errorf("routes[%s] = %q, want %q", name, got.GetRoutes().GetRoutes()[name], v)
		}
	}
	var list pb.DesiredLRPsResponse
	s.post("/v1/desired_lrps/list.r3", &pb.DesiredLRPsRequest{Domain: "cf-apps"}, &list)
	if len(list.GetDesiredLrps()) != 1 || !proto.Equal(list.GetDesiredLrps()[0], want) {
		t.Fatalf("list.r3 = %d LRPs: %s", len(list.GetDesiredLrps()), diffProto(list.GetDesiredLrps()[0], want))
	}

	// The executor-facing model fields come from the protobuf, so cells run it.
	if m.RootFS != "preloaded:cflinuxfs4" || m.MemoryMB != 256 || m.DiskMB != 1024 || m.MaxPids != 1024 ||
		len(m.Action.Codependent.Actions) != 2 || m.Action.Codependent.Actions[0].Run.Path != "/tmp/lifecycle/launcher" ||
		m.Setup.Serial.Actions[0].Download.From != "https://cc/droplets/x" || m.Monitor.Timeout.TimeoutMs != 600000 ||
		len(m.CheckDefinition.Checks) != 2 || m.CheckDefinition.Checks[0].HTTPCheck.Path != "/healthz" ||
		len(m.Env) != 3 || len(m.Ports) != 2 || m.LogGUID != appGUID || m.StartTimeoutMs != 60000 {
		t.Fatalf("model = %+v", m)
	}
	var limits map[string]int
	if err := json.Unmarshal(m.Action.Codependent.Actions[0].Run.ResourceLimits, &limits); err != nil || limits["nofile"] != 16384 {
		t.Fatalf("model resource limits = %s", m.Action.Codependent.Actions[0].Run.ResourceLimits)
	}
	if d, err := model.ParseMetricTag(m.MetricTags["instance_id"]); err != nil || d.Dynamic != model.MetricTagIndex {
		t.Fatalf("model metric tag instance_id = %s", m.MetricTags["instance_id"])
	}
	var rules []map[string]any
	if err := json.Unmarshal(m.EgressRules, &rules); err != nil || len(rules) != 4 || rules[0]["protocol"] != "tcp" {
		t.Fatalf("model egress rules = %s", m.EgressRules)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("the stored model does not pass the model's validation: %v", err)
	}
}

// .r2 serves the V2 model: SHARED image layers become cached dependencies ahead of the LRP's
// own, EXCLUSIVE ones download actions run in parallel before the setup (BBS's downgrade).
func TestDesiredLRPR2DowngradesImageLayers(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)
	r3 := s.get("r3", ccProcess)

	want := proto.Clone(r3).(*pb.DesiredLRP)
	want.ImageLayers = nil
	want.CachedDependencies = append([]*pb.CachedDependency{
		{Name: "lifecycle", From: "https://cc/lifecycle.tgz", To: "/tmp/lifecycle", CacheKey: "sha256:1111",
			ChecksumAlgorithm: "sha256", ChecksumValue: "1111"},
		{Name: "buildpack", From: "https://cc/bp.zip", To: "/tmp/bp", CacheKey: "https://cc/bp.zip"},
	}, in.CachedDependencies...)
	want.Setup = &pb.Action{SerialAction: &pb.SerialAction{Actions: []*pb.Action{
		{ParallelAction: &pb.ParallelAction{Actions: []*pb.Action{{DownloadAction: &pb.DownloadAction{
			Artifact: "droplet", From: "https://cc/droplet.tgz", To: "/home/vcap", CacheKey: "sha512:2222", User: "vcap",
			ChecksumAlgorithm: "sha512", ChecksumValue: "2222"}}}}},
		in.Setup,
	}}}
	if got := s.get("r2", ccProcess); !proto.Equal(got, want) {
		t.Fatalf("get_by_process_guid.r2: %s", diffProto(got, want))
	}
	var list pb.DesiredLRPsResponse
	s.post("/v1/desired_lrps/list.r2", &pb.DesiredLRPsRequest{}, &list)
	if len(list.GetDesiredLrps()) != 1 || !proto.Equal(list.GetDesiredLrps()[0], want) {
		t.Fatalf("list.r2: %v", list.GetDesiredLrps())
	}

	// Without image layers, and without a setup, the two revisions agree or the downloads
	// become the setup.
	plain := minimalDesiredLRP("plain")
	s.desire(plain)
	if r2, r3 := s.get("r2", "plain"), s.get("r3", "plain"); !proto.Equal(r2, r3) {
		t.Fatalf("an LRP without image layers: r2 %v, r3 %v", r2, r3)
	}
	exclusive := minimalDesiredLRP("exclusive")
	exclusive.LegacyDownloadUser = "vcap"
	exclusive.ImageLayers = []*pb.ImageLayer{{Url: "https://l", DestinationPath: "/", LayerType: pb.ImageLayer_EXCLUSIVE,
		MediaType: pb.ImageLayer_TAR, DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "ff"}}
	s.desire(exclusive)
	setup := s.get("r2", "exclusive").GetSetup()
	if dl := setup.GetParallelAction().GetActions(); len(dl) != 1 || dl[0].GetDownloadAction().GetCacheKey() != "sha256:ff" {
		t.Fatalf("r2 setup = %v", setup)
	}
}

// Every read fills metrics_guid from the source_id tag and the other way round (BBS's
// PopulateMetricsGuid); the stored LRP keeps what was sent.
func TestReadsPopulateMetricsGUID(t *testing.T) {
	s := newServer(t)
	onlyTag := minimalDesiredLRP("only-tag")
	s.desire(onlyTag)
	if got := s.get("r3", "only-tag"); got.GetMetricsGuid() != "only-tag" {
		t.Errorf("metrics_guid = %q, want the source_id tag's value", got.GetMetricsGuid())
	}
	onlyGUID := minimalDesiredLRP("only-guid")
	onlyGUID.MetricTags = map[string]*pb.MetricTagValue{"app": {Static: "x"}}
	onlyGUID.MetricsGuid = "m"
	// BBS refuses a metrics guid beside tags without a matching source_id.
	var resp pb.DesiredLRPLifecycleResponse
	s.post("/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{DesiredLrp: onlyGUID}, &resp)
	if resp.GetError().GetMessage() != "Invalid field: metric_tags, Invalid field: source_id should match metrics_guid" {
		t.Fatalf("error = %v", resp.GetError())
	}
	// An LRP desired through the JSON API with a metrics guid and no tags gets the tag.
	jsonLRP := &model.DesiredLRP{ProcessGUID: "json", Domain: "cf-apps", Instances: 0, LRPDefinition: model.LRPDefinition{
		RootFS: "docker:///busybox", MetricsGUID: "m", Action: &model.Action{Run: &model.RunAction{Path: "/bin/sh"}}}}
	if _, err := s.store.DesireLRP(t.Context(), jsonLRP); err != nil {
		t.Fatal(err)
	}
	if got := s.get("r3", "json"); got.GetMetricTags()["source_id"].GetStatic() != "m" {
		t.Errorf("metric tags = %v, want source_id m", got.GetMetricTags())
	}
}

// Scheduling infos carry BBS's subset, key, resource, routes, tag and volume placement always
// set; routing infos the fields 1, 2, 4, 15, 17, 21 and 35; both with our definition ids.
func TestSchedulingAndRoutingInfos(t *testing.T) {
	s := newServer(t)
	in := ccDesiredLRP(ccProcess)
	s.desire(in)
	s.desire(minimalDesiredLRP("other"))
	m, err := s.store.DesiredLRPByProcessGUID(t.Context(), ccProcess)
	if err != nil {
		t.Fatal(err)
	}
	tag := &pb.ModificationTag{Epoch: m.ModificationTag.Epoch}
	wantInfo := &pb.DesiredLRPSchedulingInfo{
		DesiredLrpKey:      &pb.DesiredLRPKey{ProcessGuid: ccProcess, Domain: "cf-apps", LogGuid: appGUID},
		Annotation:         in.Annotation,
		Instances:          2,
		DesiredLrpResource: &pb.DesiredLRPResource{MemoryMb: 256, DiskMb: 1024, RootFs: "preloaded:cflinuxfs4", MaxPids: 1024},
		Routes:             in.Routes,
		ModificationTag:    tag,
		VolumePlacement:    &pb.VolumePlacement{DriverNames: []string{"nfsv3driver"}},
		PlacementTags:      []string{"isolation-segment-1"},
		DefinitionId:       ccProcess,
	}
	var infos pb.DesiredLRPSchedulingInfosResponse
	s.post("/v1/desired_lrp_scheduling_infos/list", &pb.DesiredLRPsRequest{AppGuids: []string{appGUID}}, &infos)
	if len(infos.GetDesiredLrpSchedulingInfos()) != 1 || !proto.Equal(infos.GetDesiredLrpSchedulingInfos()[0], wantInfo) {
		t.Fatalf("scheduling infos: %v", infos.GetDesiredLrpSchedulingInfos())
	}
	var one pb.DesiredLRPSchedulingInfoByProcessGuidResponse
	s.post("/v1/desired_lrp_scheduling_infos/get_by_process_guid", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: ccProcess}, &one)
	if !proto.Equal(one.GetDesiredLrpSchedulingInfo(), wantInfo) {
		t.Fatalf("scheduling info: %s", diffProto(one.GetDesiredLrpSchedulingInfo(), wantInfo))
	}
	// The empty parts are there all the same.
	s.post("/v1/desired_lrp_scheduling_infos/get_by_process_guid", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: "other"}, &one)
	if i := one.GetDesiredLrpSchedulingInfo(); i.Routes == nil || i.VolumePlacement == nil || i.ModificationTag == nil {
		t.Fatalf("scheduling info of an LRP without routes or volumes = %v", i)
	}
	var all pb.DesiredLRPSchedulingInfosResponse
	s.post("/v1/desired_lrp_scheduling_infos/list", nil, &all)
	if len(all.GetDesiredLrpSchedulingInfos()) != 2 {
		t.Fatalf("all scheduling infos: %d", len(all.GetDesiredLrpSchedulingInfos()))
	}

	wantRouting := &pb.DesiredLRP{ProcessGuid: ccProcess, Domain: "cf-apps", Instances: 2, Routes: in.Routes, LogGuid: appGUID,
		ModificationTag: tag, MetricTags: in.MetricTags, DefinitionId: ccProcess}
	var routing pb.DesiredLRPsResponse
	// Only the process guids filter routing infos, as in BBS.
	s.post("/v1/desired_lrp_routing_infos/list", &pb.DesiredLRPsRequest{Domain: "elsewhere", ProcessGuids: []string{ccProcess}}, &routing)
	if len(routing.GetDesiredLrps()) != 1 || !proto.Equal(routing.GetDesiredLrps()[0], wantRouting) {
		t.Fatalf("routing infos: %v", routing.GetDesiredLrps())
	}
}

// Lists filter by domain, process guids and app guids (a prefix of process guids).
func TestListFilters(t *testing.T) {
	s := newServer(t)
	for _, guid := range []string{appGUID + "-v1", appGUID + "-v2", "other-v1"} {
		s.desire(minimalDesiredLRP(guid))
	}
	d := minimalDesiredLRP("tasks-1")
	d.Domain = "cf-tasks"
	s.desire(d)
	for _, c := range []struct {
		req  *pb.DesiredLRPsRequest
		want int
	}{
		{&pb.DesiredLRPsRequest{}, 4},
		{&pb.DesiredLRPsRequest{Domain: "cf-apps"}, 3},
		{&pb.DesiredLRPsRequest{AppGuids: []string{appGUID}}, 2},
		{&pb.DesiredLRPsRequest{AppGuids: []string{appGUID, "other"}, Domain: "cf-apps"}, 3},
		{&pb.DesiredLRPsRequest{ProcessGuids: []string{"tasks-1", "no-such"}}, 1},
		{&pb.DesiredLRPsRequest{ProcessGuids: []string{"no such guid, any text"}}, 0},
	} {
		var r3, r2 pb.DesiredLRPsResponse
		var infos pb.DesiredLRPSchedulingInfosResponse
		s.post("/v1/desired_lrps/list.r3", c.req, &r3)
		s.post("/v1/desired_lrps/list.r2", c.req, &r2)
		s.post("/v1/desired_lrp_scheduling_infos/list", c.req, &infos)
		if len(r3.GetDesiredLrps()) != c.want || len(r2.GetDesiredLrps()) != c.want || len(infos.GetDesiredLrpSchedulingInfos()) != c.want {
			t.Errorf("%v: %d, %d and %d LRPs, want %d", c.req, len(r3.GetDesiredLrps()), len(r2.GetDesiredLrps()),
				len(infos.GetDesiredLrpSchedulingInfos()), c.want)
		}
	}
}

// An unknown field of a newer client's DesiredLRP is kept with the definition and served.
func TestUnknownFieldsOfADesiredLRPComeBack(t *testing.T) {
	s := newServer(t)
	in := minimalDesiredLRP("newer")
	// Field 40, a string: what a future BBS might add.
	in.ProtoReflect().SetUnknown([]byte{0xc2, 0x02, 0x03, 'n', 'e', 'w'})
	s.desire(in)
	got := s.get("r3", "newer")
	if !bytes.Equal(got.ProtoReflect().GetUnknown(), []byte{0xc2, 0x02, 0x03, 'n', 'e', 'w'}) {
		t.Fatalf("unknown fields = %x", got.ProtoReflect().GetUnknown())
	}
}
