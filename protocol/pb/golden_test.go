package pb_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The golden tests state, field by field with protowire, the bytes a stock BBS writes for the
// messages clients depend on most, and check that our generated code writes exactly those bytes
// and reads them back to the same message. Each expected encoding is built independently of the
// generated code: field number, wire type and value.

// enc builds an expected encoding.
type enc []byte

func (e enc) str(n protowire.Number, s string) enc {
	e = protowire.AppendTag(e, n, protowire.BytesType)
	return protowire.AppendString(e, s)
}

func (e enc) raw(n protowire.Number, b []byte) enc {
	e = protowire.AppendTag(e, n, protowire.BytesType)
	return protowire.AppendBytes(e, b)
}

// msg writes an embedded message; an empty one is still written (tag and length 0).
func (e enc) msg(n protowire.Number, inner enc) enc {
	return e.raw(n, inner)
}

// varint writes any varint field: int32, int64, uint32, uint64, bool, enum. Negative int32 and
// int64 values are sign-extended to ten bytes, as protobuf requires.
func (e enc) varint(n protowire.Number, v int64) enc {
	e = protowire.AppendTag(e, n, protowire.VarintType)
	return protowire.AppendVarint(e, uint64(v))
}

func (e enc) boolean(n protowire.Number, v bool) enc {
	return e.varint(n, int64(protowire.EncodeBool(v)))
}

// mapEntry writes one entry of a map field: key 1, value 2.
func (e enc) mapEntry(n protowire.Number, key string, value enc) enc {
	return e.msg(n, value.withKey(key))
}

func (e enc) withKey(key string) enc {
	return append(enc(nil).str(1, key), e...)
}

func strVal(s string) enc { return enc(nil).str(2, s) }

// checkGolden marshals m deterministically (map entries sorted by key, as BBS's gogo code
// writes them), compares with want, and decodes want back into a message equal to m.
func checkGolden(t *testing.T, m proto.Message, want enc) {
	t.Helper()
	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("bytes differ\n got: %s\nwant: %s\n got fields:\n%s want fields:\n%s",
			hex.EncodeToString(got), hex.EncodeToString(want), dump(got), dump(want))
	}
	back := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(want, back); err != nil {
		t.Fatalf("unmarshal the golden bytes: %v", err)
	}
	if !proto.Equal(back, m) {
		t.Errorf("the golden bytes decode to\n%v\nwant\n%v", back, m)
	}
}

// dump lists the top-level fields of an encoding, for failure messages.
func dump(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			fmt.Fprintf(&sb, "  bad tag: %x\n", b)
			return sb.String()
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			fmt.Fprintf(&sb, "  field %d: bad value %x\n", num, b[n:])
			return sb.String()
		}
		fmt.Fprintf(&sb, "  field %d wire type %d: %x\n", num, typ, b[n:n+m])
		b = b[n+m:]
	}
	return sb.String()
}

func ptr[T any](v T) *T { return &v }

func wantHex(t *testing.T, m proto.Message, hexWant string) {
	t.Helper()
	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != hexWant {
		t.Errorf("got %x, want %s", got, hexWant)
	}
}

func TestGoldenError(t *testing.T) {
	e := &pb.Error{Type: pb.Error_ResourceNotFound, Message: "the requested resource could not be found"}
	want := enc(nil).varint(1, 13).str(2, "the requested resource could not be found")
	checkGolden(t, e, want)

	// Field 1 of a response. UnknownError is 0, so an Error of that type with no message
	// is an empty but present submessage: a client still sees an error.
	checkGolden(t, &pb.DesiredLRPResponse{Error: e}, enc(nil).msg(1, want))
	wantHex(t, &pb.DesiredLRPLifecycleResponse{Error: &pb.Error{}}, "0a00")
	wantHex(t, &pb.DesiredLRPLifecycleResponse{}, "")
}

func TestGoldenPingResponse(t *testing.T) {
	checkGolden(t, &pb.PingResponse{Available: true}, enc(nil).boolean(1, true))
	wantHex(t, &pb.PingResponse{Available: true}, "0801")
	wantHex(t, &pb.PingResponse{}, "")
}

func TestGoldenActualLRPKeyDefinitionID(t *testing.T) {
	key := &pb.ActualLRPKey{ProcessGuid: "pg", Index: 1, Domain: "cf-apps", DefinitionId: "d1"}
	want := enc(nil).str(1, "pg").varint(2, 1).str(3, "cf-apps").str(1000, "d1")
	checkGolden(t, key, want)
	// Field 1000, wire type 2: the tag is the varint 1000<<3|2 = 8002, two bytes c2 3e.
	wantHex(t, key, "0a02706710011a0763662d61707073c23e026431")
	// Without a definition id the bytes are exactly a stock BBS key's.
	key.DefinitionId = ""
	checkGolden(t, key, enc(nil).str(1, "pg").varint(2, 1).str(3, "cf-apps"))
}

// actualLRPGolden is an ActualLRP with all 14 fields set, routable present and false.
func actualLRPGolden() (*pb.ActualLRP, enc) {
	lrp := &pb.ActualLRP{
		ActualLrpKey:         &pb.ActualLRPKey{ProcessGuid: "pg", Index: 2, Domain: "cf-apps"},
		ActualLrpInstanceKey: &pb.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"},
		ActualLrpNetInfo: &pb.ActualLRPNetInfo{
			Address: "10.0.0.1",
			Ports: []*pb.PortMapping{
				{ContainerPort: 8080, HostPort: 61001, ContainerTlsProxyPort: 61443, HostTlsProxyPort: 61002},
				{ContainerPort: 2222, HostPort: 61003},
			},
			InstanceAddress:     "10.255.0.2",
			PreferredAddress:    pb.ActualLRPNetInfo_INSTANCE,
			InstanceIpv6Address: "fd00::2",
		},
		CrashCount:              3,
		CrashReason:             "exit status 1",
		State:                   "RUNNING",
		PlacementError:          "insufficient resources",
		Since:                   1700000000123456789,
		ModificationTag:         &pb.ModificationTag{Epoch: "epoch-1", Index: 7},
		Presence:                pb.ActualLRP_EVACUATING,
		ActualLrpInternalRoutes: []*pb.ActualLRPInternalRoute{{Hostname: "app.apps.internal"}},
		MetricTags:              map[string]string{"source_id": "app-guid", "instance_id": "2"},
		Routable:                ptr(false),
		AvailabilityZone:        "z1",
	}
	want := enc(nil).
		msg(1, enc(nil).str(1, "pg").varint(2, 2).str(3, "cf-apps")).
		msg(2, enc(nil).str(1, "ig").str(2, "cell-1")).
		msg(3, enc(nil).
			str(1, "10.0.0.1").
			msg(2, enc(nil).varint(1, 8080).varint(2, 61001).varint(3, 61443).varint(4, 61002)).
			msg(2, enc(nil).varint(1, 2222).varint(2, 61003)).
			str(3, "10.255.0.2").
			varint(4, 1).
			str(5, "fd00::2")).
		varint(4, 3).
		str(5, "exit status 1").
		str(6, "RUNNING").
		str(7, "insufficient resources").
		varint(8, 1700000000123456789).
		msg(9, enc(nil).str(1, "epoch-1").varint(2, 7)).
		varint(10, 1).
		msg(11, enc(nil).str(1, "app.apps.internal")).
		mapEntry(12, "instance_id", strVal("2")).
		mapEntry(12, "source_id", strVal("app-guid")).
		boolean(13, false).
		str(14, "z1")
	return lrp, want
}

func TestGoldenActualLRP(t *testing.T) {
	lrp, want := actualLRPGolden()
	checkGolden(t, lrp, want)

	t.Run("routable false is written, absent is not", func(t *testing.T) {
		wantHex(t, &pb.ActualLRP{Routable: ptr(false)}, "6800")
		wantHex(t, &pb.ActualLRP{Routable: ptr(true)}, "6801")
		wantHex(t, &pb.ActualLRP{}, "")
	})

	t.Run("always-emitted submessages", func(t *testing.T) {
		// A server sets fields 1, 2, 3 and 9 even when empty; they must reach the wire.
		lrp := &pb.ActualLRP{
			ActualLrpKey:         &pb.ActualLRPKey{},
			ActualLrpInstanceKey: &pb.ActualLRPInstanceKey{},
			ActualLrpNetInfo:     &pb.ActualLRPNetInfo{},
			ModificationTag:      &pb.ModificationTag{},
		}
		checkGolden(t, lrp, enc(nil).msg(1, nil).msg(2, nil).msg(3, nil).msg(9, nil))
	})
}

func TestGoldenDesiredLRP(t *testing.T) {
	lrp := &pb.DesiredLRP{
		ProcessGuid: "pg",
		Domain:      "cf-apps",
		RootFs:      "preloaded:cflinuxfs4",
		Instances:   2,
		Ports:       []uint32{8080, 2222},
		Routes: &pb.ProtoRoutes{Routes: map[string][]byte{
			"cf-router": []byte(`[{"hostnames":["a.example.com"],"port":8080}]`),
			"diego-ssh": []byte(`{"container_port":2222}`),
		}},
		ModificationTag: &pb.ModificationTag{Epoch: "e", Index: 1},
		MetricTags: map[string]*pb.MetricTagValue{
			"instance_id": {Dynamic: pb.MetricTagValue_INDEX},
			"source_id":   {Static: "app-guid"},
		},
		LogRateLimit:         &pb.LogRateLimit{BytesPerSecond: -1},
		UpdateStrategy:       pb.UpdateStrategy_RECREATE,
		DefinitionId:         "v2",
		PreviousDefinitionId: "v1",
	}
	want := enc(nil).
		str(1, "pg").
		str(2, "cf-apps").
		str(3, "preloaded:cflinuxfs4").
		varint(4, 2).
		varint(14, 8080). // unpacked: one tag per port
		varint(14, 2222).
		msg(15, enc(nil).
			mapEntry(1, "cf-router", enc(nil).raw(2, []byte(`[{"hostnames":["a.example.com"],"port":8080}]`))).
			mapEntry(1, "diego-ssh", enc(nil).raw(2, []byte(`{"container_port":2222}`)))).
		msg(21, enc(nil).str(1, "e").varint(2, 1)).
		mapEntry(35, "instance_id", enc(nil).msg(2, enc(nil).varint(2, 1))).
		mapEntry(35, "source_id", enc(nil).msg(2, enc(nil).str(1, "app-guid"))).
		msg(37, enc(nil).varint(1, -1)).
		varint(39, 1).
		str(1000, "v2").
		str(1001, "v1")
	checkGolden(t, lrp, want)

	t.Run("ports are unpacked", func(t *testing.T) {
		// 8080 = varint 90 3f, 2222 = varint ae 11, each after tag 14/varint (0x70).
		wantHex(t, &pb.DesiredLRP{Ports: []uint32{8080, 2222}}, "70903f70ae11")
		wantHex(t, &pb.DesiredLRPRunInfo{Ports: []uint32{8080}}, "48903f")
		wantHex(t, &pb.SecurityGroupRule{Ports: []uint32{443}}, "18bb03")
	})

	t.Run("packed ports are read too", func(t *testing.T) {
		packed := enc(nil).raw(14, protowire.AppendVarint(protowire.AppendVarint(nil, 8080), 2222))
		var got pb.DesiredLRP
		if err := proto.Unmarshal(packed, &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Ports) != "[8080 2222]" {
			t.Errorf("ports = %v", got.Ports)
		}
	})
}

func TestGoldenDesiredLRPSchedulingInfo(t *testing.T) {
	info := &pb.DesiredLRPSchedulingInfo{
		DesiredLrpKey:      &pb.DesiredLRPKey{ProcessGuid: "pg", Domain: "cf-apps", LogGuid: "app"},
		Annotation:         "1700000000.5",
		Instances:          3,
		DesiredLrpResource: &pb.DesiredLRPResource{MemoryMb: 256, DiskMb: 1024, RootFs: "preloaded:cflinuxfs4", MaxPids: 1024},
		Routes:             &pb.ProtoRoutes{Routes: map[string][]byte{"cf-router": []byte("[]")}},
		ModificationTag:    &pb.ModificationTag{Epoch: "e", Index: 4},
		VolumePlacement:    &pb.VolumePlacement{DriverNames: []string{"nfsv3driver"}},
		PlacementTags:      []string{"iso-seg"},
		DefinitionId:       "v1",
	}
	want := enc(nil).
		msg(1, enc(nil).str(1, "pg").str(2, "cf-apps").str(3, "app")).
		str(2, "1700000000.5").
		varint(3, 3).
		msg(4, enc(nil).varint(1, 256).varint(2, 1024).str(3, "preloaded:cflinuxfs4").varint(4, 1024)).
		msg(5, enc(nil).mapEntry(1, "cf-router", enc(nil).raw(2, []byte("[]")))).
		msg(6, enc(nil).str(1, "e").varint(2, 4)).
		msg(7, enc(nil).str(1, "nfsv3driver")).
		str(8, "iso-seg").
		str(1000, "v1")
	checkGolden(t, info, want)

	// Fields 1, 4, 5 and 6 are always emitted: set, they reach the wire even when empty.
	empty := &pb.DesiredLRPSchedulingInfo{
		DesiredLrpKey:      &pb.DesiredLRPKey{},
		DesiredLrpResource: &pb.DesiredLRPResource{},
		Routes:             &pb.ProtoRoutes{},
		ModificationTag:    &pb.ModificationTag{},
	}
	checkGolden(t, empty, enc(nil).msg(1, nil).msg(4, nil).msg(5, nil).msg(6, nil))
}

func TestGoldenDesiredLRPUpdate(t *testing.T) {
	// Scaling to zero and clearing the annotation: the zero values are present, so written.
	update := &pb.DesiredLRPUpdate{
		Instances:     ptr(int32(0)),
		Routes:        &pb.ProtoRoutes{},
		Annotation:    ptr(""),
		ImageUsername: ptr(""),
		ImagePassword: ptr(""),
	}
	checkGolden(t, update, enc(nil).varint(1, 0).msg(2, nil).str(3, "").str(5, "").str(6, ""))
	wantHex(t, update, "080012001a002a003200")

	// Nothing present, nothing written: the update changes nothing.
	wantHex(t, &pb.DesiredLRPUpdate{}, "")

	// Our rolling update: a whole definition at field 1000.
	withDef := &pb.DesiredLRPUpdate{
		Instances:  ptr(int32(4)),
		MetricTags: map[string]*pb.MetricTagValue{"source_id": {Static: "app"}},
		Definition: &pb.LRPDefinition{DefinitionId: "v2", RootFs: "docker:///nginx", MemoryMb: 128, Ports: []uint32{80}},
	}
	checkGolden(t, withDef, enc(nil).
		varint(1, 4).
		mapEntry(4, "source_id", enc(nil).msg(2, enc(nil).str(1, "app"))).
		msg(1000, enc(nil).str(3, "docker:///nginx").varint(11, 128).varint(14, 80).str(1000, "v2")))
}

func TestGoldenCellPresence(t *testing.T) {
	cell := &pb.CellPresence{
		CellId:                "cell-1",
		RepAddress:            "http://10.0.0.1:1800",
		Zone:                  "z1",
		Capacity:              &pb.CellCapacity{MemoryMb: 16384, DiskMb: 65536, Containers: 250},
		RootfsProviders:       []*pb.Provider{{Name: "preloaded", Properties: []string{"cflinuxfs4"}}, {Name: "docker"}},
		PlacementTags:         []string{"iso-seg"},
		OptionalPlacementTags: []string{"gpu"},
		RepUrl:                "https://cell-1.cell.service.cf.internal:1801",
		Annotations:           map[string]string{"rack": "r1"},
	}
	want := enc(nil).
		str(1, "cell-1").
		str(2, "http://10.0.0.1:1800").
		str(3, "z1").
		msg(4, enc(nil).varint(1, 16384).varint(2, 65536).varint(3, 250)).
		msg(5, enc(nil).str(1, "preloaded").str(2, "cflinuxfs4")).
		msg(5, enc(nil).str(1, "docker")).
		str(6, "iso-seg").
		str(7, "gpu").
		str(8, "https://cell-1.cell.service.cf.internal:1801").
		mapEntry(9, "rack", strVal("r1"))
	checkGolden(t, cell, want)
	checkGolden(t, &pb.CellsResponse{Cells: []*pb.CellPresence{cell}}, enc(nil).msg(2, want))
}

func TestGoldenActualLRPInstanceChangedEvent(t *testing.T) {
	ev := &pb.ActualLRPInstanceChangedEvent{
		ActualLrpKey:         &pb.ActualLRPKey{ProcessGuid: "pg", Index: 0, Domain: "cf-apps", DefinitionId: "v1"},
		ActualLrpInstanceKey: &pb.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"},
		Before: &pb.ActualLRPInfo{
			ActualLrpNetInfo: &pb.ActualLRPNetInfo{},
			State:            "CLAIMED",
			Since:            10,
			ModificationTag:  &pb.ModificationTag{Epoch: "e", Index: 1},
			Routable:         ptr(false),
		},
		After: &pb.ActualLRPInfo{
			ActualLrpNetInfo: &pb.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*pb.PortMapping{{ContainerPort: 8080, HostPort: 61000}}},
			CrashCount:       1,
			CrashReason:      "oom",
			State:            "RUNNING",
			PlacementError:   "none",
			Since:            20,
			ModificationTag:  &pb.ModificationTag{Epoch: "e", Index: 2},
			Presence:         pb.ActualLRP_SUSPECT,
			Routable:         ptr(true),
			AvailabilityZone: "z1",
		},
		TraceId: "req-1",
	}
	want := enc(nil).
		msg(1, enc(nil).str(1, "pg").str(3, "cf-apps").str(1000, "v1")). // index 0 is not written
		msg(2, enc(nil).str(1, "ig").str(2, "cell-1")).
		msg(3, enc(nil).
			msg(3, nil).
			str(6, "CLAIMED").
			varint(8, 10).
			msg(9, enc(nil).str(1, "e").varint(2, 1)).
			boolean(11, false)).
		msg(4, enc(nil).
			msg(3, enc(nil).str(1, "10.0.0.1").msg(2, enc(nil).varint(1, 8080).varint(2, 61000))).
			varint(4, 1).
			str(5, "oom").
			str(6, "RUNNING").
			str(7, "none").
			varint(8, 20).
			msg(9, enc(nil).str(1, "e").varint(2, 2)).
			varint(10, 2).
			boolean(11, true).
			str(12, "z1")).
		str(5, "req-1")
	checkGolden(t, ev, want)
}

func TestGoldenActualLRPCrashedEvent(t *testing.T) {
	ev := &pb.ActualLRPCrashedEvent{
		ActualLrpKey:         &pb.ActualLRPKey{ProcessGuid: "pg", Index: 1, Domain: "cf-apps"},
		ActualLrpInstanceKey: &pb.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"},
		CrashCount:           2,
		CrashReason:          "APP/PROC/WEB: Exited with status 1",
		Since:                99,
	}
	checkGolden(t, ev, enc(nil).
		msg(1, enc(nil).str(1, "pg").varint(2, 1).str(3, "cf-apps")).
		msg(2, enc(nil).str(1, "ig").str(2, "cell-1")).
		varint(3, 2).
		str(4, "APP/PROC/WEB: Exited with status 1").
		varint(5, 99))
}

func TestGoldenTask(t *testing.T) {
	task := &pb.Task{
		TaskDefinition: &pb.TaskDefinition{
			RootFs:                "preloaded:cflinuxfs4",
			Action:                &pb.Action{RunAction: &pb.RunAction{Path: "/bin/true", User: "vcap"}},
			MemoryMb:              512,
			ResultFile:            "/tmp/result.json",
			CompletionCallbackUrl: "https://cc.internal/internal/v3/staging/g/build_completed?start=false",
			PlacementTags:         []string{"iso-seg"},
		},
		TaskGuid:         "task-1",
		Domain:           "cf-app-staging",
		CreatedAt:        1,
		UpdatedAt:        2,
		FirstCompletedAt: 3,
		State:            pb.Task_Completed,
		CellId:           "cell-1",
		Result:           "{}",
		Failed:           true,
		FailureReason:    "boom",
		RejectionCount:   1,
		RejectionReason:  "no space",
	}
	want := enc(nil).
		msg(1, enc(nil).
			str(1, "preloaded:cflinuxfs4").
			msg(3, enc(nil).msg(3, enc(nil).str(1, "/bin/true").str(6, "vcap"))).
			varint(5, 512).
			str(11, "/tmp/result.json").
			str(12, "https://cc.internal/internal/v3/staging/g/build_completed?start=false").
			str(20, "iso-seg")).
		str(2, "task-1").
		str(3, "cf-app-staging").
		varint(4, 1).
		varint(5, 2).
		varint(6, 3).
		varint(7, 3).
		str(8, "cell-1").
		str(9, "{}").
		boolean(10, true).
		str(11, "boom").
		varint(12, 1).
		str(13, "no space")
	checkGolden(t, task, want)
}

func TestGoldenRequests(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want enc
	}{
		{"ActualLRPsRequest index 0 present", &pb.ActualLRPsRequest{ProcessGuid: "pg", Index: ptr(int32(0))},
			enc(nil).str(3, "pg").varint(4, 0)},
		{"ActualLRPsRequest no index", &pb.ActualLRPsRequest{Domain: "cf-apps", CellId: "c"},
			enc(nil).str(1, "cf-apps").str(2, "c")},
		{"RetireActualLRPRequest", &pb.RetireActualLRPRequest{ActualLrpKey: &pb.ActualLRPKey{ProcessGuid: "pg", Index: 3, Domain: "cf-apps"}},
			enc(nil).msg(1, enc(nil).str(1, "pg").varint(2, 3).str(3, "cf-apps"))},
		{"UpsertDomainRequest", &pb.UpsertDomainRequest{Domain: "cf-apps", Ttl: 120},
			enc(nil).str(1, "cf-apps").varint(2, 120)},
		{"DesiredLRPsRequest", &pb.DesiredLRPsRequest{Domain: "cf-apps", ProcessGuids: []string{"a", "b"}, AppGuids: []string{"c"}},
			enc(nil).str(1, "cf-apps").str(2, "a").str(2, "b").str(3, "c")},
		{"UpdateDesiredLRPRequest", &pb.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &pb.DesiredLRPUpdate{Instances: ptr(int32(5))}},
			enc(nil).str(1, "pg").msg(2, enc(nil).varint(1, 5))},
		{"StartActualLRPRequest Routable false", &pb.StartActualLRPRequest{Routable: ptr(false), AvailabilityZone: "z"},
			enc(nil).boolean(6, false).str(7, "z")},
		{"EvacuateRunningActualLRPRequest Routable false", &pb.EvacuateRunningActualLRPRequest{Routable: ptr(false)},
			enc(nil).boolean(7, false)},
		{"ResourceLimits nofile 0", &pb.ResourceLimits{Nofile: ptr(uint64(0))},
			enc(nil).varint(1, 0)},
		{"EventsByCellId", &pb.EventsByCellId{CellId: "cell-1"}, enc(nil).str(1, "cell-1")},
		{"CancelUpdateDesiredLRPRequest", &pb.CancelUpdateDesiredLRPRequest{ProcessGuid: "pg"}, enc(nil).str(1, "pg")},
		{"RollbackDesiredLRPRequest", &pb.RollbackDesiredLRPRequest{ProcessGuid: "pg", DefinitionId: "v1"},
			enc(nil).str(1, "pg").str(2, "v1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkGolden(t, tt.msg, tt.want) })
	}
}
