package protocol_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// The JSON API and the BBS protocol serve one store by the same rules: an LRP desired
// through either reads back through the other with the same fields.

type obj = map[string]any

// jsonAPI is the JSON API over the protocol server's store and services, as a process serves
// both.
func (s *server) jsonAPI() string {
	s.t.Helper()
	a := api.NewServer(api.Deps{Store: s.store, LRPs: s.lrps, Tasks: s.tasks.svc, Log: zaptest.NewLogger(s.t)})
	a.MarkReady()
	ts := httptest.NewServer(a)
	s.t.Cleanup(ts.Close)
	return ts.URL
}

// postJSON posts body to the JSON API and decodes its answer, which must have status want.
func postJSON(t *testing.T, url, path string, body any, want int) obj {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out obj
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: decode: %v", path, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %v, want %d", path, resp.StatusCode, out, want)
	}
	return out
}

// jsonLRP reads guid through the JSON API, without what identifies this copy of it.
func jsonLRP(t *testing.T, url, guid string) obj {
	t.Helper()
	d := postJSON(t, url, "/v1/desired_lrps/get_by_process_guid", obj{"process_guid": guid}, http.StatusOK)["desired_lrp"].(obj)
	delete(d, "process_guid")
	delete(d, "definition_id")
	delete(d, "modification_tag")
	return d
}

// A JSON API client's LRP, every field of API.md set in BBS's JSON shape.
func jsonAPILRP(guid string) obj {
	return obj{
		"process_guid": guid, "domain": "cf-apps", "instances": 1, "annotation": "etag-1",
		"routes": obj{
			"cf-router": []obj{{"hostnames": []string{"a.example.com"}, "port": 8080}},
			"diego-ssh": obj{"container_port": 2222, "private_key": "k"},
		},
		"metric_tags": obj{"source_id": obj{"static": "metrics-1"}, "instance_id": obj{"dynamic": "INDEX"}},
		"rootfs":      "docker:///busybox",
		"env":         []obj{{"name": "PORT", "value": "8080"}},
		"setup": obj{"serial": obj{"actions": []obj{
			{"download": obj{"from": "http://blobs/droplet.tgz", "to": "/home/vcap", "cache_key": "droplet", "user": "vcap"}},
		}}},
		"action": obj{"codependent": obj{"actions": []obj{
			{"run": obj{"path": "/bin/sh", "args": []string{"-c", "exec ./server"}, "user": "vcap", "resource_limits": obj{"nofile": 1024}}},
			{"try": obj{"action": obj{"run": obj{"path": "/bin/sidecar", "user": "vcap"}}}},
		}}},
		"monitor":             obj{"timeout": obj{"action": obj{"run": obj{"path": "/bin/healthcheck", "user": "vcap"}}, "timeout_ms": 30000}},
		"check_definition":    obj{"checks": []obj{{"tcp_check": obj{"port": 8080}}, {"http_check": obj{"port": 8080, "path": "/health"}}}},
		"start_timeout_ms":    60000,
		"memory_mb":           128,
		"disk_mb":             256,
		"max_pids":            100,
		"cpu_weight":          50,
		"privileged":          true,
		"ports":               []int{8080, 2222},
		"log_source":          "APP",
		"log_guid":            "log-1",
		"metrics_guid":        "metrics-1",
		"egress_rules":        []obj{{"protocol": "tcp", "destinations": []string{"10.0.0.0/8"}, "ports": []int{443}}},
		"cached_dependencies": []obj{{"from": "http://blobs/buildpack", "to": "/tmp/bp", "cache_key": "bp"}},
		"volume_mounts":       []obj{{"driver": "nfs", "container_dir": "/data", "mode": "rw"}},
		"network":             obj{"properties": obj{"policy_group_id": "pg"}},
		"placement_tags":      []string{"zone-a"},
	}
}

// An LRP desired through the JSON API reads through the protocol with its fields in BBS's
// messages, and desiring what the protocol served, through the protocol, makes the same LRP
// as the JSON API sees it.
func TestJSONAPIDesireReadsThroughTheProtocol(t *testing.T) {
	s := newServer(t)
	url := s.jsonAPI()
	postJSON(t, url, "/v1/desired_lrp/desire", obj{"desired_lrp": jsonAPILRP("json-1")}, http.StatusOK)

	got := s.get("r3", "json-1")
	run := func(path string, args ...string) *pb.Action {
		return &pb.Action{RunAction: &pb.RunAction{Path: path, Args: args, User: "vcap"}}
	}
	server := run("/bin/sh", "-c", "exec ./server")
	server.RunAction.ResourceLimits = &pb.ResourceLimits{Nofile: proto.Uint64(1024)}
	want := &pb.DesiredLRP{
		ProcessGuid: "json-1", Domain: "cf-apps", Instances: 1, Annotation: "etag-1", DefinitionId: "json-1",
		Routes: &pb.ProtoRoutes{Routes: map[string][]byte{
			"cf-router": []byte(`[{"hostnames":["a.example.com"],"port":8080}]`),
			"diego-ssh": []byte(`{"container_port":2222,"private_key":"k"}`),
		}},
		MetricTags:      map[string]*pb.MetricTagValue{"source_id": {Static: "metrics-1"}, "instance_id": {Dynamic: pb.MetricTagValue_INDEX}},
		ModificationTag: got.GetModificationTag(),
		RootFs:          "docker:///busybox", EnvironmentVariables: []*pb.EnvironmentVariable{{Name: "PORT", Value: "8080"}},
		Setup: &pb.Action{SerialAction: &pb.SerialAction{Actions: []*pb.Action{{DownloadAction: &pb.DownloadAction{
			From: "http://blobs/droplet.tgz", To: "/home/vcap", CacheKey: "droplet", User: "vcap"}}}}},
		Action: &pb.Action{CodependentAction: &pb.CodependentAction{Actions: []*pb.Action{
			server, {TryAction: &pb.TryAction{Action: run("/bin/sidecar")}},
		}}},
		Monitor: &pb.Action{TimeoutAction: &pb.TimeoutAction{Action: run("/bin/healthcheck"), TimeoutMs: 30000}},
		CheckDefinition: &pb.CheckDefinition{Checks: []*pb.Check{{TcpCheck: &pb.TCPCheck{Port: 8080}},
			{HttpCheck: &pb.HTTPCheck{Port: 8080, Path: "/health"}}}},
		StartTimeoutMs: 60000, MemoryMb: 128, DiskMb: 256, MaxPids: 100, CpuWeight: 50, Privileged: true,
		Ports: []uint32{8080, 2222}, LogSource: "APP", LogGuid: "log-1", MetricsGuid: "metrics-1",
		EgressRules:        []*pb.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"10.0.0.0/8"}, Ports: []uint32{443}}},
		CachedDependencies: []*pb.CachedDependency{{From: "http://blobs/buildpack", To: "/tmp/bp", CacheKey: "bp"}},
		VolumeMounts:       []*pb.VolumeMount{{Driver: "nfs", ContainerDir: "/data", Mode: "rw"}},
		Network:            &pb.Network{Properties: map[string]string{"policy_group_id": "pg"}},
		PlacementTags:      []string{"zone-a"},
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the JSON API's LRP through the protocol: %s", diffProto(got, want))
	}

	again := proto.Clone(got).(*pb.DesiredLRP)
	again.ProcessGuid, again.DefinitionId, again.ModificationTag = "json-2", "", nil
	s.desire(again)
	if a, b := jsonLRP(t, url, "json-1"), jsonLRP(t, url, "json-2"); !reflect.DeepEqual(a, b) {
		t.Fatalf("desired through the JSON API:\n%v\nthrough the protocol, from what it served:\n%v", a, b)
	}
}

// An LRP desired through the protocol reads through the JSON API with the fields our model
// has, in the JSON API's shapes; desiring that through the JSON API makes the same LRP.
func TestProtocolDesireReadsThroughTheJSONAPI(t *testing.T) {
	s := newServer(t)
	url := s.jsonAPI()
	s.desire(ccDesiredLRP(ccProcess))
	got := jsonLRP(t, url, ccProcess)

	check := func(field string, want any) {
		t.Helper()
		b, _ := json.Marshal(want)
		var w any
		json.Unmarshal(b, &w)
		if !reflect.DeepEqual(got[field], w) {
			t.Errorf("%s = %v, want %v", field, got[field], w)
		}
	}
	check("rootfs", "preloaded:cflinuxfs4")
	check("instances", 2)
	check("max_pids", 1024)
	check("ports", []int{8080, 2222})
	check("routes", obj{
		"cf-router":       []obj{{"hostnames": []string{"app.example.com"}, "port": 8080, "route_service_url": "https://rs.example.com/?a=1&b=2", "isolation_segment": nil, "protocol": "http1", "options": obj{}}},
		"tcp-router":      []obj{},
		"internal-router": []obj{{"hostname": "app.apps.internal"}},
		"diego-ssh":       obj{"container_port": 2222, "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", "host_fingerprint": "a6:d1:08", "host_256_fingerprint": "Qc4Z"},
	})
	check("env", []obj{{"name": "VCAP_APPLICATION", "value": `{"application_id":"` + appGUID + `"}`}, {"name": "MEMORY_LIMIT", "value": "256m"}, {"name": "EMPTY", "value": ""}})
	check("setup", obj{"serial": obj{"actions": []obj{{"download": obj{"artifact": "droplet", "from": "https://cc/droplets/x", "to": ".",
		"cache_key": "droplets-x", "user": "vcap", "checksum_algorithm": "sha256", "checksum_value": "0123abcd"}}}}})
	check("check_definition", obj{"log_source": "HEALTH/PROC/WEB", "checks": []obj{
		{"http_check": obj{"port": 8080, "path": "/healthz", "request_timeout_ms": 1000}},
		{"tcp_check": obj{"port": 2222, "connect_timeout_ms": 500}}},
		"readiness_checks": []obj{{"http_check": obj{"port": 8080, "path": "/ready"}}}})
	check("egress_rules", []obj{
		{"protocol": "tcp", "destinations": []string{"10.0.0.0-10.255.255.255"}, "ports": []int{80, 443}, "log": true, "annotations": []string{"security_group_guid:x"}},
		{"protocol": "udp", "destinations": []string{"10.0.0.2/32"}, "port_range": obj{"start": 53, "end": 53}},
		{"protocol": "icmp", "destinations": []string{"0.0.0.0/0"}, "icmp_info": obj{}},
		{"protocol": "all", "destinations": []string{"192.168.1.1"}},
	})
	check("volume_mounts", []obj{{"driver": "nfsv3driver", "container_dir": "/data", "mode": "rw",
		"shared": obj{"volume_id": "vol-1", "mount_config": `{"source":"nfs://server/export"}`}}})
	tags := got["metric_tags"].(obj)
	if !reflect.DeepEqual(tags["instance_id"], obj{"dynamic": "INDEX"}) || !reflect.DeepEqual(tags["process_instance_id"], obj{"dynamic": "INSTANCE_GUID"}) ||
		!reflect.DeepEqual(tags["organization_name"], obj{"static": "org & co"}) || len(tags) != 12 {
		t.Errorf("metric_tags = %v", tags)
	}

	again := jsonLRP(t, url, ccProcess)
	again["process_guid"] = "json-copy"
	postJSON(t, url, "/v1/desired_lrp/desire", obj{"desired_lrp": again}, http.StatusOK)
	if copied := jsonLRP(t, url, "json-copy"); !reflect.DeepEqual(copied, got) {
		t.Fatalf("desired through the protocol:\n%v\nthrough the JSON API, from what it served:\n%v", got, copied)
	}
}
