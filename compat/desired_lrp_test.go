package compat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"code.cloudfoundry.org/bbs/models"
)

// ccLRP is a desired LRP shaped as Cloud Controller desires an app's process, with every
// field BBS-PROTOCOL.md §4.2 lists, in the real client's own models.
func ccLRP(t *testing.T, guid string) *models.DesiredLRP {
	t.Helper()
	raw := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }
	run := func(path string, args ...string) *models.RunAction {
		r := &models.RunAction{Path: path, Args: args, User: "vcap", LogSource: "APP/PROC/WEB",
			Env: []*models.EnvironmentVariable{{Name: "PORT", Value: "8080"}}, ResourceLimits: &models.ResourceLimits{}}
		r.ResourceLimits.SetNofile(16384)
		return r
	}
	lrp := &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "compat",
		RootFs:      "preloaded:cflinuxfs4",
		Instances:   0,
		EnvironmentVariables: []*models.EnvironmentVariable{
			{Name: "VCAP_APPLICATION", Value: `{"name":"app"}`}, {Name: "EMPTY", Value: ""},
		},
		Setup: models.WrapAction(models.Serial(&models.DownloadAction{Artifact: "droplet", From: "https://cc/droplet", To: ".",
			CacheKey: "droplet-x", User: "vcap", ChecksumAlgorithm: "sha256", ChecksumValue: "abcd"})),
		Action:         models.WrapAction(models.Codependent(run("/tmp/lifecycle/launcher", "app", "rackup"), run("/tmp/lifecycle/diego-sshd"))),
		Monitor:        models.WrapAction(models.Timeout(models.Parallel(run("/tmp/lifecycle/healthcheck", "-port=8080")), 10*60*1e9)),
		StartTimeoutMs: 60000,
		DiskMb:         1024,
		MemoryMb:       256,
		CpuWeight:      3,
		Ports:          []uint32{8080, 2222},
		Routes: &models.Routes{
			"cf-router": raw(`[{"hostnames":["app.example.com"],"port":8080,"route_service_url":"https://rs/?a=1&b=2"}]`),
			"diego-ssh": raw(`{"container_port":2222,"private_key":"-----BEGIN-----\n-----END-----\n","host_fingerprint":"a6:d1"}`),
		},
		LogSource:   "CELL",
		LogGuid:     "app-guid",
		MetricsGuid: "app-guid",
		Annotation:  "1761234567.1",
		EgressRules: []*models.SecurityGroupRule{
			{Protocol: "tcp", Destinations: []string{"10.0.0.0-10.255.255.255"}, Ports: []uint32{443}, Log: true},
			{Protocol: "icmp", Destinations: []string{"0.0.0.0/0"}, IcmpInfo: &models.ICMPInfo{Type: 8}},
		},
		CachedDependencies:            []*models.CachedDependency{{Name: "lifecycle", From: "https://cc/lifecycle", To: "/tmp/lifecycle", CacheKey: "lc"}},
		LegacyDownloadUser:            "vcap",
		TrustedSystemCertificatesPath: "/etc/cf-system-certificates",
		VolumeMounts: []*models.VolumeMount{{Driver: "nfsv3driver", ContainerDir: "/data", Mode: "rw",
			Shared: &models.SharedDevice{VolumeId: "vol", MountConfig: `{"source":"nfs://s/e"}`}}},
		Network:               &models.Network{Properties: map[string]string{"policy_group_id": "app-guid"}},
		PlacementTags:         []string{"segment"},
		MaxPids:               1024,
		CertificateProperties: &models.CertificateProperties{OrganizationalUnit: []string{"organization:o", "space:s", "app:a"}},
		ImageUsername:         "user",
		ImagePassword:         "password",
		CheckDefinition: &models.CheckDefinition{
			Checks:          []*models.Check{{HttpCheck: &models.HTTPCheck{Port: 8080, Path: "/healthz", RequestTimeoutMs: 1000, IntervalMs: 2000}}},
			ReadinessChecks: []*models.Check{{TcpCheck: &models.TCPCheck{Port: 8080, ConnectTimeoutMs: 500, IntervalMs: 1000}}},
			LogSource:       "HEALTH",
		},
		ImageLayers: []*models.ImageLayer{
			{Name: "shared", Url: "https://cc/l1", DestinationPath: "/l1", LayerType: models.LayerTypeShared, MediaType: models.MediaTypeTgz},
			{Name: "droplet", Url: "https://cc/l2", DestinationPath: "/home/vcap", LayerType: models.LayerTypeExclusive, MediaType: models.MediaTypeTgz,
				DigestAlgorithm: models.DigestAlgorithmSha256, DigestValue: "ef"},
		},
		MetricTags: map[string]*models.MetricTagValue{
			"source_id":           {Static: "app-guid"},
			"instance_id":         {Dynamic: models.MetricTagDynamicValueIndex},
			"process_instance_id": {Dynamic: models.MetricTagDynamicValueInstanceGuid},
			"app_name":            {Static: "a & b"},
		},
		Sidecars:           []*models.Sidecar{{Action: models.WrapAction(run("/bin/sidecar")), DiskMb: 8, MemoryMb: 16}},
		LogRateLimit:       &models.LogRateLimit{BytesPerSecond: 4096},
		VolumeMountedFiles: []*models.File{{Path: "/etc/binding", Content: "secret"}},
		UpdateStrategy:     models.DesiredLRP_UpdateStrategyRecreate,
	}
	if err := lrp.Validate(); err != nil {
		t.Fatalf("ccLRP(%s) does not pass BBS's validation: %v", guid, err)
	}
	return lrp
}

// What the real client desires, every field Cloud Controller sends, it reads back equal
// (plus the modification tag BBS sets), from the .r3 get and list and the instance stream's
// desired-LRP events, and the scheduling and routing infos agree; Cloud Controller's update
// and remove work as BBS's.
func TestDesiredLRPThroughTheRealClient(t *testing.T) {
	c, log := newClient(t), testLogger(t)
	stream, err := c.SubscribeToInstanceEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	guid := "compat-cc-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	// nextDesired is the stream's next event of guid's desired LRP.
	nextDesired := func() models.Event {
		t.Helper()
		for {
			switch e := next(t, stream).(type) {
			case *models.DesiredLRPCreatedEvent:
				if e.DesiredLrp.ProcessGuid == guid {
					return e
				}
			case *models.DesiredLRPChangedEvent:
				if e.After.ProcessGuid == guid {
					return e
				}
			case *models.DesiredLRPRemovedEvent:
				if e.DesiredLrp.ProcessGuid == guid {
					return e
				}
			}
		}
	}
	in := ccLRP(t, guid)
	if err := c.DesireLRP(log, traceID(t), in); err != nil {
		t.Fatalf("DesireLRP: %v", err)
	}
	got, err := c.DesiredLRPByProcessGuid(log, traceID(t), guid)
	if err != nil {
		t.Fatalf("DesiredLRPByProcessGuid: %v", err)
	}
	if got.ModificationTag == nil || got.ModificationTag.Epoch == "" || got.ModificationTag.Index != 0 {
		t.Fatalf("modification tag = %v", got.ModificationTag)
	}
	want := *in
	want.ModificationTag = got.ModificationTag
	if !got.Equal(&want) {
		t.Fatalf("read back differs:\n got %s\nwant %s", got, &want)
	}
	if e, ok := nextDesired().(*models.DesiredLRPCreatedEvent); !ok || !e.DesiredLrp.Equal(&want) {
		t.Fatalf("the stream's desired_lrp_created = %v", e)
	}
	list, err := c.DesiredLRPs(log, traceID(t), models.DesiredLRPFilter{ProcessGuids: []string{guid}})
	if err != nil || len(list) != 1 || !list[0].Equal(&want) {
		t.Fatalf("DesiredLRPs = %v, %v", list, err)
	}

	info, err := c.DesiredLRPSchedulingInfoByProcessGuid(log, traceID(t), guid)
	if err != nil {
		t.Fatalf("DesiredLRPSchedulingInfoByProcessGuid: %v", err)
	}
	if wantInfo := want.DesiredLRPSchedulingInfo(); !info.Equal(&wantInfo) {
		t.Fatalf("scheduling info:\n got %s\nwant %s", info, &wantInfo)
	}
	infos, err := c.DesiredLRPSchedulingInfos(log, traceID(t), models.DesiredLRPFilter{Domain: "compat", AppGuids: []string{"compat-cc-"}})
	if err != nil || len(infos) != 1 {
		t.Fatalf("DesiredLRPSchedulingInfos = %v, %v", infos, err)
	}
	routing, err := c.DesiredLRPRoutingInfos(log, traceID(t), models.DesiredLRPFilter{ProcessGuids: []string{guid}})
	if wantRouting := want.DesiredLRPRoutingInfo(); err != nil || len(routing) != 1 || !routing[0].Equal(&wantRouting) {
		t.Fatalf("DesiredLRPRoutingInfos = %v, %v", routing, err)
	}

	// Cloud Controller's update: instances, annotation, metric tags and routes, diego-ssh
	// copied back from its read.
	update := &models.DesiredLRPUpdate{MetricTags: map[string]*models.MetricTagValue{"source_id": {Static: "app-guid"}, "app_name": {Static: "renamed"}}}
	update.SetInstances(0)
	update.SetAnnotation("1761234999.9")
	routes := models.Routes{"cf-router": (*got.Routes)["cf-router"], "diego-ssh": (*got.Routes)["diego-ssh"]}
	update.Routes = &routes
	if err := c.UpdateDesiredLRP(log, traceID(t), guid, update); err != nil {
		t.Fatalf("UpdateDesiredLRP: %v", err)
	}
	updated, err := c.DesiredLRPByProcessGuid(log, traceID(t), guid)
	if err != nil {
		t.Fatal(err)
	}
	want.Annotation, want.MetricTags = "1761234999.9", update.MetricTags
	want.ModificationTag = &models.ModificationTag{Epoch: got.ModificationTag.Epoch, Index: 1}
	if !updated.Equal(&want) {
		t.Fatalf("after the update:\n got %s\nwant %s", updated, &want)
	}
	if e, ok := nextDesired().(*models.DesiredLRPChangedEvent); !ok || !e.Before.Equal(got) || !e.After.Equal(&want) {
		t.Fatalf("the stream's desired_lrp_changed = %v", e)
	}

	if err := c.RemoveDesiredLRP(log, traceID(t), guid); err != nil {
		t.Fatalf("RemoveDesiredLRP: %v", err)
	}
	if e, ok := nextDesired().(*models.DesiredLRPRemovedEvent); !ok || !e.DesiredLrp.Equal(&want) {
		t.Fatalf("the stream's desired_lrp_removed = %v", e)
	}
	_, err = c.DesiredLRPByProcessGuid(log, traceID(t), guid)
	var merr *models.Error
	if !errors.As(err, &merr) || merr.Type != models.Error_ResourceNotFound {
		t.Fatalf("after the remove: %v, want ResourceNotFound", err)
	}
}

// Requests BBS's validation refuses are refused with the message BBS's own models give.
func TestDesiredLRPValidationSpeaksBBS(t *testing.T) {
	lrp := func(edit func(*models.DesiredLRP)) *models.DesiredLRP {
		l := validLRP(t, "compat-invalid")
		edit(l)
		return l
	}
	noUser := models.WrapAction(&models.RunAction{Path: "/bin/app"})
	desires := map[string]*models.DesiredLRP{
		"a run action without a user": lrp(func(l *models.DesiredLRP) { l.Action = noUser }),
		"nested actions without users": lrp(func(l *models.DesiredLRP) {
			l.Setup = models.WrapAction(models.Serial(&models.DownloadAction{From: "f"}, models.Try(&models.RunAction{})))
			l.Monitor = models.WrapAction(&models.TimeoutAction{Action: noUser})
		}),
		"an exclusive layer without a download user": lrp(func(l *models.DesiredLRP) {
			l.ImageLayers = []*models.ImageLayer{{Url: "u", DestinationPath: "/", LayerType: models.LayerTypeExclusive, MediaType: models.MediaTypeTgz}}
		}),
		"bad image layers": lrp(func(l *models.DesiredLRP) {
			l.ImageLayers = []*models.ImageLayer{{DigestValue: "x"}, {LayerType: models.LayerTypeShared, DigestAlgorithm: models.DigestAlgorithmSha512}}
		}),
		"bad egress rules": lrp(func(l *models.DesiredLRP) {
			l.EgressRules = []*models.SecurityGroupRule{
				{Protocol: "tcp", Destinations: []string{"10.0.0.9-10.0.0.1", "1.2.3.4/40,nope"}, Ports: []uint32{0}, IcmpInfo: &models.ICMPInfo{}},
				{Protocol: "udp", PortRange: &models.PortRange{Start: 9, End: 1}, Ports: []uint32{1}},
				{Protocol: "icmp", Destinations: []string{"::1"}, Ports: []uint32{1}},
				{Protocol: "icmpv6", Destinations: []string{"::1"}},
				{Protocol: "all", Destinations: []string{"1.1.1.1"}, PortRange: &models.PortRange{Start: 1, End: 2}},
				{Protocol: "sctp"},
			}
		}),
		"bad checks, sidecars, mounts and dependencies": lrp(func(l *models.DesiredLRP) {
			l.CheckDefinition = &models.CheckDefinition{Checks: []*models.Check{{}, {TcpCheck: &models.TCPCheck{Port: 1}, HttpCheck: &models.HTTPCheck{}}},
				ReadinessChecks: []*models.Check{{HttpCheck: &models.HTTPCheck{Port: 70000}}}}
			l.Sidecars = []*models.Sidecar{{MemoryMb: -1}, {Action: noUser, DiskMb: -1}}
			l.VolumeMounts = []*models.VolumeMount{{Mode: "x", Shared: &models.SharedDevice{}}, {Driver: "d", Mode: "r", Dedicated: &models.DedicatedDevice{}}}
			l.CachedDependencies = []*models.CachedDependency{{ChecksumValue: "v"}, {From: "f", To: "t", ChecksumAlgorithm: "crc", ChecksumValue: "v"}}
			l.EnvironmentVariables = []*models.EnvironmentVariable{{Value: "v"}}
		}),
		"bad numbers and credentials": lrp(func(l *models.DesiredLRP) {
			l.MemoryMb, l.DiskMb, l.MaxPids, l.Instances = -1, -2, -3, -4
			l.LogRateLimit = &models.LogRateLimit{BytesPerSecond: -2}
			l.ImagePassword = "p"
			l.Annotation = strings.Repeat("a", 10*1024+1)
			l.RootFs = "no-scheme"
		}),
		"metric tags that disagree": lrp(func(l *models.DesiredLRP) {
			l.MetricsGuid = "other"
			l.MetricTags["both"] = &models.MetricTagValue{Static: "s", Dynamic: models.MetricTagDynamicValueIndex}
		}),
		"an empty action": lrp(func(l *models.DesiredLRP) { l.Action = &models.Action{} }),
	}
	c, log := newClient(t), testLogger(t)
	for name, l := range desires {
		t.Run(name, func(t *testing.T) {
			want := invalidRequest(t, &models.DesireLRPRequest{DesiredLrp: l})
			err := c.DesireLRP(log, traceID(t), l)
			var got *models.Error
			if !errors.As(err, &got) || got.Type != want.Type || got.Message != want.Message {
				t.Errorf("error %v, want %s %q", err, want.Type, want.Message)
			}
		})
	}

	update := &models.DesiredLRPUpdate{MetricTags: map[string]*models.MetricTagValue{"x": {}}}
	update.SetInstances(-1)
	update.SetImageUsername("u")
	want := invalidRequest(t, &models.UpdateDesiredLRPRequest{ProcessGuid: "compat-missing", Update: update})
	err := c.UpdateDesiredLRP(log, traceID(t), "compat-missing", update)
	var got *models.Error
	if !errors.As(err, &got) || got.Type != want.Type || got.Message != want.Message {
		t.Errorf("update: error %v, want %s %q", err, want.Type, want.Message)
	}
}
