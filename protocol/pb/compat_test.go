package pb_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// stockFiles rebuilds our .proto files as a stock BBS client knows them: every field numbered
// 1000 or above removed. Decoding with these descriptors is decoding as an old client does.
func stockFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	var set descriptorpb.FileDescriptorSet
	protoregistry.GlobalFiles.RangeFilesByPackage("models", func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(fd.Path(), "protocol/pb/") {
			set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
		}
		return true
	})
	var strip func(ms []*descriptorpb.DescriptorProto)
	strip = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			kept := m.Field[:0]
			for _, f := range m.Field {
				if f.GetNumber() < 1000 {
					kept = append(kept, f)
				}
			}
			m.Field = kept
			strip(m.NestedType)
		}
	}
	for _, f := range set.File {
		if f.GetName() != "protocol/pb/extensions.proto" {
			strip(f.MessageType)
		}
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatalf("building the stock descriptors: %v", err)
	}
	return files
}

// dropUnknown removes unknown fields from m and every message inside it.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				dropUnknown(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			dropUnknown(v.Message())
		}
		return true
	})
}

// clearExtensions clears every field numbered 1000 or above in m and inside it.
func clearExtensions(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Number() >= 1000:
			m.Clear(fd)
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				clearExtensions(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				clearExtensions(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			clearExtensions(v.Message())
		}
		return true
	})
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// TestOldDecodersSkipExtensions encodes messages carrying our extensions and decodes them with
// the stock descriptors. The stock decoder must succeed, see exactly the message without our
// fields (what a gogo decoder keeps), and hold our fields as unknown fields that it writes back
// unchanged (what Ruby's decoder does).
func TestOldDecodersSkipExtensions(t *testing.T) {
	stock := stockFiles(t)
	lrp, _ := actualLRPGolden()
	lrp.ActualLrpKey.DefinitionId = "v2"
	desired := &pb.DesiredLRP{
		ProcessGuid:          "pg",
		Domain:               "cf-apps",
		Instances:            2,
		Ports:                []uint32{8080},
		MetricTags:           map[string]*pb.MetricTagValue{"source_id": {Static: "app"}},
		DefinitionId:         "v2",
		PreviousDefinitionId: "v1",
		RolloutStrategy:      &pb.RolloutStrategy{MaxInFlight: ptr(int32(2)), OnFailure: ptr("pause")},
	}
	definition := &pb.LRPDefinition{
		DefinitionId: "v3",
		RootFs:       "preloaded:cflinuxfs4",
		Action:       &pb.Action{RunAction: &pb.RunAction{Path: "/bin/app"}},
		Ports:        []uint32{8080},
	}
	tests := []proto.Message{
		&pb.ActualLRPKey{ProcessGuid: "pg", Index: 1, Domain: "cf-apps", DefinitionId: "v2"},
		lrp,
		&pb.ActualLRPsResponse{ActualLrps: []*pb.ActualLRP{lrp, lrp}},
		&pb.ActualLRPGroupsResponse{ActualLrpGroups: []*pb.ActualLRPGroup{{Instance: lrp, Evacuating: lrp}}},
		&pb.ActualLRPsRequest{ProcessGuid: "pg", Index: ptr(int32(0)), DefinitionId: "v2"},
		&pb.RetireActualLRPRequest{ActualLrpKey: &pb.ActualLRPKey{ProcessGuid: "pg", DefinitionId: "v1"}},
		desired,
		&pb.DesiredLRPResponse{DesiredLrp: desired},
		&pb.DesiredLRPSchedulingInfo{
			DesiredLrpKey:        &pb.DesiredLRPKey{ProcessGuid: "pg"},
			Instances:            2,
			DefinitionId:         "v2",
			PreviousDefinitionId: "v1",
			HealthyDefinitionId:  "v1",
		},
		&pb.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &pb.DesiredLRPUpdate{
			Instances:  ptr(int32(3)),
			Annotation: ptr("a"),
			Definition: definition,
			Strategy: &pb.RolloutStrategy{Canary: &pb.CanaryStrategy{Steps: []*pb.CanaryStep{
				{Instances: ptr(int32(1)), Weight: ptr(int32(0))}}}},
			RolloutStrategy: &pb.RolloutStrategy{IndexDeadlineMs: ptr(int64(60000))},
		}},
		&pb.DesiredLRPChangedEvent{Before: desired, After: desired, TraceId: "t"},
		&pb.ActualLRPInstanceChangedEvent{
			ActualLrpKey:         &pb.ActualLRPKey{ProcessGuid: "pg", DefinitionId: "v2"},
			ActualLrpInstanceKey: &pb.ActualLRPInstanceKey{InstanceGuid: "ig"},
			Before:               &pb.ActualLRPInfo{State: "CLAIMED", Routable: ptr(false)},
			After:                &pb.ActualLRPInfo{State: "RUNNING", Routable: ptr(true)},
		},
		&pb.ActualLRPCrashedEvent{ActualLrpKey: &pb.ActualLRPKey{ProcessGuid: "pg", DefinitionId: "v2"}, CrashCount: 1},
	}
	for _, m := range tests {
		name := string(m.ProtoReflect().Descriptor().Name())
		t.Run(name, func(t *testing.T) {
			wire, err := deterministic.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			d, err := stock.FindDescriptorByName(m.ProtoReflect().Descriptor().FullName())
			if err != nil {
				t.Fatal(err)
			}
			old := dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
			if err := proto.Unmarshal(wire, old); err != nil {
				t.Fatalf("a stock decoder fails on our bytes: %v", err)
			}

			// Ruby keeps our fields as unknown and writes them back byte for byte.
			again, err := deterministic.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, wire) {
				t.Errorf("a stock decoder does not write our fields back unchanged\n got %x\nwant %x", again, wire)
			}

			// gogo drops them: what remains is the message without our fields.
			dropUnknown(old)
			seen, err := deterministic.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			plain := proto.Clone(m)
			clearExtensions(plain.ProtoReflect())
			want, err := deterministic.Marshal(plain)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(seen, want) {
				t.Errorf("a stock decoder sees\n%x\nwant\n%x", seen, want)
			}
			if bytes.Equal(want, wire) {
				t.Errorf("the test message carries no extension field")
			}
		})
	}
}

// TestHandWrittenOldDecoder decodes an ActualLRPKey the way generated code of a stock client
// does, with protowire: known numbers are read, any other field is skipped by its wire type.
func TestHandWrittenOldDecoder(t *testing.T) {
	wire, err := deterministic.Marshal(&pb.ActualLRPKey{ProcessGuid: "pg", Index: 7, Domain: "cf-apps", DefinitionId: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		processGUID, domain string
		index               int32
		skipped             []protowire.Number
	)
	for b := wire; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag in %s", hex.EncodeToString(b))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, m := protowire.ConsumeString(b)
			processGUID, n = s, m
		case num == 2 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			index, n = int32(v), m
		case num == 3 && typ == protowire.BytesType:
			s, m := protowire.ConsumeString(b)
			domain, n = s, m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			skipped = append(skipped, num)
		}
		if n < 0 {
			t.Fatalf("bad value for field %d", num)
		}
		b = b[n:]
	}
	if processGUID != "pg" || index != 7 || domain != "cf-apps" {
		t.Errorf("decoded (%q, %d, %q)", processGUID, index, domain)
	}
	if len(skipped) != 1 || skipped[0] != 1000 {
		t.Errorf("skipped fields %v, want [1000]", skipped)
	}
}
