package protocol_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// snapshot is everything the desired-LRP routes can change: the LRPs (with their
// definitions, through the protocol), instances, rollouts and events.
func (s *server) snapshot() []byte {
	s.t.Helper()
	var list pb.DesiredLRPsResponse
	s.post("/v1/desired_lrps/list.r3", nil, &list)
	var deps pb.LRPDeploymentsResponse
	s.post("/v1/lrp_deployments/list", nil, &deps)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.DesiredLRPsResponse{DesiredLrps: list.GetDesiredLrps()})
	if err != nil {
		s.t.Fatal(err)
	}
	d, err := proto.MarshalOptions{Deterministic: true}.Marshal(&deps)
	if err != nil {
		s.t.Fatal(err)
	}
	var counts struct {
		Instances, Rollouts, Events int
	}
	if err := s.store.DB().QueryRowContext(s.t.Context(), `SELECT
    (SELECT count(*) FROM actual_lrps), (SELECT count(*) FROM rollouts), (SELECT count(*) FROM events)`).
		Scan(&counts.Instances, &counts.Rollouts, &counts.Events); err != nil {
		s.t.Fatal(err)
	}
	return append(append(b, d...), []byte(strings.Repeat("i", counts.Instances)+strings.Repeat("r", counts.Rollouts)+strings.Repeat("e", counts.Events))...)
}

// Every refused request answers 200 with BBS's error type — its exact message where clients
// match it or BBS's validation words it, ours where BBS has none — and changes nothing.
func TestRefusedRequestsChangeNothing(t *testing.T) {
	s := newServer(t)
	s.desire(ccDesiredLRP(ccProcess))
	s.desire(minimalDesiredLRP("app"))
	// A rollout in progress on "app", for the conflicts.
	if err := s.update("app", &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("app"), "v2")}); err != nil {
		t.Fatal(err)
	}

	lrp := func(edit func(d *pb.DesiredLRP)) *pb.DesireLRPRequest {
		d := minimalDesiredLRP("new")
		edit(d)
		return &pb.DesireLRPRequest{DesiredLrp: d}
	}
	update := func(guid string, u *pb.DesiredLRPUpdate) *pb.UpdateDesiredLRPRequest {
		return &pb.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: u}
	}
	i32 := func(i int32) *int32 { return &i }
	str := func(s string) *string { return &s }
	runWithoutUser := &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app"}}
	invalid := pb.Error_InvalidRequest
	for _, c := range []struct {
		name string
		path string
		req  proto.Message
		typ  pb.Error_Type
		msg  string // the exact message; prefixed "~" when only its start is ours to fix
	}{
		// BBS's own words.
		{"desire an LRP twice", "/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{DesiredLrp: minimalDesiredLRP("app")},
			pb.Error_ResourceExists, "the requested resource already exists"},
		{"desire nothing", "/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{}, invalid, "Invalid field: desired_lrp"},
		{"desire an empty LRP", "/v1/desired_lrp/desire.r2", &pb.DesireLRPRequest{DesiredLrp: &pb.DesiredLRP{}}, invalid,
			"Invalid field: domain, Invalid field: rootfs, Invalid field: rootfs, Invalid field: metric_tags, " +
				"Invalid field: domain, Invalid field: process_guid, invalid action type"},
		{"negative instances", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.Instances = -1 }), invalid, "Invalid field: instances"},
		{"no metric tags", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.MetricTags = nil }), invalid, "Invalid field: metric_tags"},
		{"a metric tag both static and dynamic", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.MetricTags["x"] = &pb.MetricTagValue{Static: "a", Dynamic: pb.MetricTagValue_INDEX}
		}), invalid, "Invalid field: metric_tags, Invalid field: static, Invalid field: dynamic"},
		{"rootfs without a scheme", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.RootFs = "cflinuxfs4" }), invalid, "Invalid field: rootfs"},
		{"annotation over 10 KiB", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.Annotation = strings.Repeat("a", 10*1024+1) }),
			invalid, "Invalid field: annotation"},
		{"routes over 128 KiB", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.Routes = &pb.ProtoRoutes{Routes: map[string][]byte{"a": bytes.Repeat([]byte("1"), 64*1024), "b": bytes.Repeat([]byte("1"), 64*1024+1)}}
		}), invalid, "Invalid field: routes"},
		{"log rate limit under -1", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.LogRateLimit = &pb.LogRateLimit{BytesPerSecond: -2} }),
			invalid, "Invalid field: log_rate_limit_bytes_per_second, Invalid field: log_rate_limit"},
		{"negative max pids and memory", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.MaxPids, d.MemoryMb = -1, -1 }),
			invalid, "Invalid field: memory_mb, Invalid field: max_pids"},
		{"a run action without a user", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.Action = runWithoutUser }),
			invalid, "Invalid field: action, Invalid field: user"},
		{"an exclusive image layer without a download user", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.ImageLayers = []*pb.ImageLayer{{Url: "u", DestinationPath: "/", LayerType: pb.ImageLayer_EXCLUSIVE, MediaType: pb.ImageLayer_TGZ,
				DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "d"}}
		}), invalid, "Invalid field: legacy_download_user"},
		{"an egress rule without ports", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.EgressRules = []*pb.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"10.0.0.300"}}}
		}), invalid, "Invalid field: egress_rules, Missing required field: ports or port_range, Invalid field: destinations [ Invalid IP ]"},
		{"a process guid with a dot", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.ProcessGuid = "a.b" }), invalid, "Invalid field: process_guid"},
		// Ours, where BBS accepts and our model does not.
		{"more than 10,000 instances", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.Instances = 10001 }),
			invalid, "instances must be between 0 and 10000"},
		{"a route that is not JSON", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.Routes = &pb.ProtoRoutes{Routes: map[string][]byte{"cf-router": []byte("{")}}
		}), invalid, `routes["cf-router"] is not valid JSON`},
		{"port 0", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) { d.Ports = []uint32{0} }), invalid, "ports[0] must be between 1 and 65535"},
		{"an action of two kinds", "/v1/desired_lrp/desire.r2", lrp(func(d *pb.DesiredLRP) {
			d.Action.TryAction = &pb.TryAction{Action: runWithoutUser}
		}), invalid, "~action must have exactly one kind"},

		{"get a missing LRP", "/v1/desired_lrps/get_by_process_guid.r3", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"get a missing LRP (r2)", "/v1/desired_lrps/get_by_process_guid.r2", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"get without a guid", "/v1/desired_lrps/get_by_process_guid.r3", &pb.DesiredLRPByProcessGuidRequest{}, invalid, "Invalid field: process_guid"},
		{"get a missing scheduling info", "/v1/desired_lrp_scheduling_infos/get_by_process_guid", &pb.DesiredLRPByProcessGuidRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},

		{"update a missing LRP", "/v1/desired_lrp/update", update("missing", &pb.DesiredLRPUpdate{Instances: i32(1)}),
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"update without a guid", "/v1/desired_lrp/update", update("", nil), invalid, "Invalid field: process_guid"},
		{"update to negative instances", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{Instances: i32(-1), Annotation: str("x")}),
			invalid, "Invalid field: instances"},
		{"update an image user alone", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{ImageUsername: str("u")}),
			invalid, "Invalid field: image_password"},
		{"update to a bad metric tag", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{MetricTags: map[string]*pb.MetricTagValue{"x": {}}}),
			invalid, "Invalid field: metric_tags, Invalid field: static, Invalid field: dynamic"},
		{"update to a definition without an id", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("x"), "")}),
			invalid, "definition.definition_id is required"},
		{"update to a definition BBS refuses", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{Definition: &pb.LRPDefinition{
			DefinitionId: "v9", RootFs: "preloaded:cflinuxfs4", Action: runWithoutUser}}), invalid, "Invalid field: action, Invalid field: user"},
		{"update to a definition id already taken", "/v1/desired_lrp/update", update(ccProcess, &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("x"), ccProcess)}),
			pb.Error_ResourceExists, "the requested resource already exists"},
		{"update to a definition during a rollout", "/v1/desired_lrp/update", update("app", &pb.DesiredLRPUpdate{Definition: definitionOf(t, minimalDesiredLRP("app"), "v3"),
			Instances: i32(5)}), pb.Error_ResourceConflict, `LRP "app" is rolling out to "v2"; cancel it or wait`},

		{"remove a missing LRP", "/v1/desired_lrp/remove", &pb.RemoveDesiredLRPRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"remove without a guid", "/v1/desired_lrp/remove", &pb.RemoveDesiredLRPRequest{}, invalid, "Invalid field: process_guid"},
		{"cancel with no update in progress", "/v1/desired_lrp/cancel_update", &pb.CancelUpdateDesiredLRPRequest{ProcessGuid: ccProcess},
			pb.Error_ResourceConflict, `LRP "` + ccProcess + `" has no update in progress`},
		{"cancel for a missing LRP", "/v1/desired_lrp/cancel_update", &pb.CancelUpdateDesiredLRPRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"roll back to a definition never stored", "/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: ccProcess, DefinitionId: "v0"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"roll back during a rollout", "/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: "app", DefinitionId: "app"},
			pb.Error_ResourceConflict, `LRP "app" is rolling out to "v2"; cancel it or wait`},
		{"roll back without a definition", "/v1/desired_lrp/rollback", &pb.RollbackDesiredLRPRequest{ProcessGuid: "app"}, invalid, "Invalid field: definition_id"},

		{"create a deployment without a definition", "/v1/lrp_deployments/create", &pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
			ProcessGuid: "dep", Domain: "d", DefinitionId: "v1"}}, invalid, "definition is required"},
		{"create a deployment that exists", "/v1/lrp_deployments/create", &pb.CreateLRPDeploymentRequest{LrpDeploymentDefinition: &pb.LRPDeploymentDefinition{
			ProcessGuid: "app", Domain: "d", DefinitionId: "v1", Definition: definitionOf(t, minimalDesiredLRP("x"), "")}},
			pb.Error_ResourceExists, "the requested resource already exists"},
		{"activate a definition the LRP lacks", "/v1/lrp_deployments/activate", &pb.ActivateLRPDeploymentDefinitionRequest{ProcessGuid: ccProcess, DefinitionId: "v7"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"update a deployment with an id and no definition", "/v1/lrp_deployments/update", &pb.UpdateLRPDeploymentRequest{ProcessGuid: ccProcess,
			Update: &pb.LRPDeploymentUpdate{DefinitionId: str("v2")}}, invalid, "definition_id and definition must be given together"},
		{"delete a missing deployment", "/v1/lrp_deployments/delete", &pb.DeleteLRPDeploymentRequest{ProcessGuid: "missing"},
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.snapshot()
			resp := &pb.DesiredLRPLifecycleResponse{} // field 1 of every answer here
			s.post(c.path, c.req, resp)
			e := resp.GetError()
			ok := e.GetType() == c.typ && e.GetMessage() == c.msg
			if strings.HasPrefix(c.msg, "~") {
				ok = e.GetType() == c.typ && strings.HasPrefix(e.GetMessage(), c.msg[1:])
			}
			if !ok {
				t.Errorf("error = %v, want %s %q", e, c.typ, c.msg)
			}
			if !bytes.Equal(s.snapshot(), before) {
				t.Errorf("the refused request changed the store")
			}
		})
	}
}
