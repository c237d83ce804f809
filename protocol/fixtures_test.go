package protocol_test

import (
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Cloud Controller's process guids: "<app guid>-<version guid>", 73 characters.
const (
	appGUID   = "2b3c4d5e-6f70-4812-9abc-def012345678"
	ccProcess = appGUID + "-9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
)

// ccDesiredLRP is a DesiredLRP as Cloud Controller desires an app's web process, with every
// field BBS-PROTOCOL.md §4.2 lists — those our cells ignore included — plus image layers,
// sidecars and an update strategy: what the store must give back exactly.
func ccDesiredLRP(guid string) *pb.DesiredLRP {
	run := func(path string, args ...string) *pb.Action {
		return &pb.Action{RunAction: &pb.RunAction{Path: path, Args: args, User: "vcap", LogSource: "APP/PROC/WEB",
			Env:            []*pb.EnvironmentVariable{{Name: "PORT", Value: "8080"}},
			ResourceLimits: &pb.ResourceLimits{Nofile: proto.Uint64(16384)}}}
	}
	sshd := run("/tmp/lifecycle/diego-sshd", "--address=0.0.0.0:2222", "--allowUnauthenticatedClients=false")
	sshd.RunAction.SuppressLogOutput = true
	sshd.RunAction.VolumeMountedFiles = []*pb.File{{Path: "/etc/cf-ssh/authorized", Content: "ssh-rsa AAAA"}}
	return &pb.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "cf-apps",
		RootFs:      "preloaded:cflinuxfs4",
		Instances:   2,
		EnvironmentVariables: []*pb.EnvironmentVariable{
			{Name: "VCAP_APPLICATION", Value: `{"application_id":"` + appGUID + `"}`},
			{Name: "MEMORY_LIMIT", Value: "256m"}, {Name: "EMPTY", Value: ""},
		},
		Setup: &pb.Action{SerialAction: &pb.SerialAction{Actions: []*pb.Action{
			{DownloadAction: &pb.DownloadAction{Artifact: "droplet", From: "https://cc/droplets/x", To: ".", CacheKey: "droplets-x",
				User: "vcap", ChecksumAlgorithm: "sha256", ChecksumValue: "0123abcd"}},
		}}},
		Action: &pb.Action{CodependentAction: &pb.CodependentAction{Actions: []*pb.Action{
			run("/tmp/lifecycle/launcher", "app", "bundle exec rackup", `{"start_command":"rackup"}`), sshd,
		}}},
		Monitor: &pb.Action{TimeoutAction: &pb.TimeoutAction{TimeoutMs: 600000, Action: &pb.Action{ParallelAction: &pb.ParallelAction{
			Actions: []*pb.Action{run("/tmp/lifecycle/healthcheck", "-port=8080")}}}}},
		StartTimeoutMs: 60000,
		DiskMb:         1024,
		MemoryMb:       256,
		CpuWeight:      3,
		Privileged:     false,
		Ports:          []uint32{8080, 2222},
		Routes: &pb.ProtoRoutes{Routes: map[string][]byte{
			"cf-router":       []byte(`[{"hostnames":["app.example.com"],"port":8080,"route_service_url":"https://rs.example.com/?a=1&b=2","isolation_segment":null,"protocol":"http1","options":{}}]`),
			"tcp-router":      []byte(`[]`),
			"internal-router": []byte(`[{"hostname":"app.apps.internal"}]`),
			"diego-ssh":       []byte(`{"container_port":2222,"private_key":"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n","host_fingerprint":"a6:d1:08","host_256_fingerprint":"Qc4Z"}`),
		}},
		LogSource:   "CELL",
		LogGuid:     appGUID,
		MetricsGuid: appGUID,
		Annotation:  "1761234567.123456",
		EgressRules: []*pb.SecurityGroupRule{
			{Protocol: "tcp", Destinations: []string{"10.0.0.0-10.255.255.255"}, Ports: []uint32{80, 443}, Log: true, Annotations: []string{"security_group_guid:x"}},
			{Protocol: "udp", Destinations: []string{"10.0.0.2/32"}, PortRange: &pb.PortRange{Start: 53, End: 53}},
			{Protocol: "icmp", Destinations: []string{"0.0.0.0/0"}, IcmpInfo: &pb.ICMPInfo{Type: 0, Code: 0}},
			{Protocol: "all", Destinations: []string{"192.168.1.1"}},
		},
		CachedDependencies: []*pb.CachedDependency{{Name: "ruby_buildpack", From: "https://cc/buildpacks/ruby", To: "/tmp/lifecycle",
			CacheKey: "buildpack-cflinuxfs4-lifecycle", LogSource: "", ChecksumAlgorithm: "sha256", ChecksumValue: "beef"}},
		LegacyDownloadUser:            "vcap",
		TrustedSystemCertificatesPath: "/etc/cf-system-certificates",
		VolumeMounts: []*pb.VolumeMount{{Driver: "nfsv3driver", ContainerDir: "/data", Mode: "rw",
			Shared: &pb.SharedDevice{VolumeId: "vol-1", MountConfig: `{"source":"nfs://server/export"}`}}},
		Network: &pb.Network{Properties: map[string]string{"policy_group_id": appGUID, "app_id": appGUID,
			"space_id": "space-guid", "org_id": "org-guid", "ports": "8080,2222", "container_workload": "app"}},
		PlacementTags:         []string{"isolation-segment-1"},
		MaxPids:               1024,
		CertificateProperties: &pb.CertificateProperties{OrganizationalUnit: []string{"organization:org-guid", "space:space-guid", "app:" + appGUID}},
		ImageUsername:         "registry-user",
		ImagePassword:         "registry-password",
		CheckDefinition: &pb.CheckDefinition{
			LogSource: "HEALTH/PROC/WEB",
			Checks: []*pb.Check{
				{HttpCheck: &pb.HTTPCheck{Port: 8080, RequestTimeoutMs: 1000, Path: "/healthz", IntervalMs: 2000}},
				{TcpCheck: &pb.TCPCheck{Port: 2222, ConnectTimeoutMs: 500, IntervalMs: 5000}},
			},
			ReadinessChecks: []*pb.Check{{HttpCheck: &pb.HTTPCheck{Port: 8080, Path: "/ready", IntervalMs: 1000}}},
		},
		ImageLayers: []*pb.ImageLayer{
			{Name: "lifecycle", Url: "https://cc/lifecycle.tgz", DestinationPath: "/tmp/lifecycle", LayerType: pb.ImageLayer_SHARED,
				MediaType: pb.ImageLayer_TGZ, DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "1111"},
			{Name: "buildpack", Url: "https://cc/bp.zip", DestinationPath: "/tmp/bp", LayerType: pb.ImageLayer_SHARED,
				MediaType: pb.ImageLayer_ZIP},
			{Name: "droplet", Url: "https://cc/droplet.tgz", DestinationPath: "/home/vcap", LayerType: pb.ImageLayer_EXCLUSIVE,
				MediaType: pb.ImageLayer_TGZ, DigestAlgorithm: pb.ImageLayer_SHA512, DigestValue: "2222"},
		},
		MetricTags: map[string]*pb.MetricTagValue{
			"source_id":           {Static: appGUID},
			"process_id":          {Static: guid[:36]},
			"process_type":        {Static: "web"},
			"process_instance_id": {Dynamic: pb.MetricTagValue_INSTANCE_GUID},
			"instance_id":         {Dynamic: pb.MetricTagValue_INDEX},
			"organization_id":     {Static: "org-guid"},
			"space_id":            {Static: "space-guid"},
			"app_id":              {Static: appGUID},
			"organization_name":   {Static: "org & co"},
			"space_name":          {Static: "<dev>"},
			"app_name":            {Static: "my-app"},
			"label_team":          {Static: "payments"},
		},
		Sidecars:           []*pb.Sidecar{{Action: &pb.Action{RunAction: &pb.RunAction{Path: "/bin/sidecar", User: "vcap"}}, DiskMb: 10, MemoryMb: 32}},
		LogRateLimit:       &pb.LogRateLimit{BytesPerSecond: -1},
		VolumeMountedFiles: []*pb.File{{Path: "/etc/cf-service-bindings/db/uri", Content: "postgres://db"}},
		UpdateStrategy:     pb.UpdateStrategy_RECREATE,
	}
}

// minimalDesiredLRP is the least a desire needs to pass BBS's validation and ours.
func minimalDesiredLRP(guid string) *pb.DesiredLRP {
	return &pb.DesiredLRP{
		ProcessGuid: guid, Domain: "cf-apps", RootFs: "preloaded:cflinuxfs4", Instances: 1, MemoryMb: 64, DiskMb: 64,
		Action:     &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app", User: "vcap"}},
		MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: guid}},
	}
}

// definitionOf is the LRPDefinition part of d (what a client sends in an update).
func definitionOf(t *testing.T, d *pb.DesiredLRP, id string) *pb.LRPDefinition {
	t.Helper()
	c := proto.Clone(d).(*pb.DesiredLRP)
	c.ProcessGuid, c.Domain, c.Instances, c.Routes, c.Annotation, c.ModificationTag, c.MetricTags = "", "", 0, nil, "", nil, nil
	b, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	def := &pb.LRPDefinition{}
	if err := proto.Unmarshal(b, def); err != nil {
		t.Fatal(err)
	}
	def.DefinitionId = id
	return def
}

// diffProto names the top-level fields in which two messages differ, and shows both, for
// failures.
func diffProto(got, want proto.Message) string {
	var diffs []string
	g, w := got.ProtoReflect(), want.ProtoReflect()
	fields := g.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if g.Has(fd) != w.Has(fd) || !g.Get(fd).Equal(w.Get(fd)) {
			diffs = append(diffs, string(fd.Name()))
		}
	}
	if string(g.GetUnknown()) != string(w.GetUnknown()) {
		diffs = append(diffs, "(unknown fields)")
	}
	return "fields differing: " + strings.Join(diffs, ", ") + "\n got: " + prototext.Format(got) + "\nwant: " + prototext.Format(want)
}
