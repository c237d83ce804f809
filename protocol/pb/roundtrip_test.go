package pb_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/updatable-lrps/bbs/protocol/pb"
)

// fill sets every field of m to a value that is not its default: lists and maps get two
// elements, messages are filled down to depth levels, signed numbers are negative and unsigned
// ones use their top bit, so that a wrong wire type or width would change the value.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				if fd.Kind() == protoreflect.MessageKind {
					if depth == 0 {
						break
					}
					e := l.NewElement()
					fill(e.Message(), depth-1)
					l.Append(e)
				} else {
					l.Append(scalar(fd, j))
				}
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := 0; j < 2; j++ {
				key := scalar(fd.MapKey(), j).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					if depth == 0 {
						break
					}
					v := mp.NewValue()
					fill(v.Message(), depth-1)
					mp.Set(key, v)
				} else {
					mp.Set(key, scalar(fd.MapValue(), j))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth > 0 {
				fill(m.Mutable(fd).Message(), depth-1)
			}
		default:
			m.Set(fd, scalar(fd, 1))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor, j int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(-7 - int32(j))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(-1<<40 - int64(j))
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(1<<31 + uint32(j))
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(1<<63 + uint64(j))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(-2.5 - float64(j))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d ✓", fd.Name(), j))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fmt.Sprintf(`{"%s":%d}`, fd.Name(), j)))
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		return protoreflect.ValueOfEnum(values.Get(values.Len() - 1).Number())
	}
	panic(fmt.Sprintf("no test value for %s (%s)", fd.FullName(), fd.Kind()))
}

// TestRoundTripEveryMessage fills every message of the package, encodes it, decodes it and
// compares; a second encoding must give the same bytes.
func TestRoundTripEveryMessage(t *testing.T) {
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if !strings.HasPrefix(mt.Descriptor().ParentFile().Path(), "protocol/pb/") {
			return true
		}
		n++
		name := string(mt.Descriptor().Name())
		t.Run(name, func(t *testing.T) {
			m := mt.New()
			fill(m, 3)
			wire, err := deterministic.Marshal(m.Interface())
			if err != nil {
				t.Fatal(err)
			}
			back := mt.New().Interface()
			if err := proto.Unmarshal(wire, back); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, m.Interface()) {
				t.Errorf("decoded\n%v\nwant\n%v", back, m.Interface())
			}
			if len(back.ProtoReflect().GetUnknown()) != 0 {
				t.Errorf("unknown fields after decoding our own bytes: %x", back.ProtoReflect().GetUnknown())
			}
			again, err := deterministic.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, wire) {
				t.Errorf("second encoding differs")
			}
		})
		return true
	})
	// 118 BBS messages and 38 of ours; TestEveryMessageIsListed names them.
	if n != 156 {
		t.Errorf("round-tripped %d messages, want 156", n)
	}
}

// TestDefinitionMatchesDesiredLRP checks the design of LRPDefinition: its fields have the
// DesiredLRP numbers, so a DesiredLRP's bytes decode as its definition, and the definition's
// bytes decode as a DesiredLRP holding exactly those fields.
func TestDefinitionMatchesDesiredLRP(t *testing.T) {
	desired := &pb.DesiredLRP{}
	fill(desired.ProtoReflect(), 3)

	wire, err := deterministic.Marshal(desired)
	if err != nil {
		t.Fatal(err)
	}
	var def pb.LRPDefinition
	if err := proto.Unmarshal(wire, &def); err != nil {
		t.Fatal(err)
	}
	if def.DefinitionId != desired.DefinitionId || def.RootFs != desired.RootFs ||
		!proto.Equal(def.Action, desired.Action) || def.UpdateStrategy != desired.UpdateStrategy ||
		len(def.Sidecars) != len(desired.Sidecars) || def.StartTimeoutMs != desired.StartTimeoutMs {
		t.Errorf("a DesiredLRP read as LRPDefinition lost fields:\n%v", &def)
	}

	// Field by field, each LRPDefinition field is the DesiredLRP field of the same name.
	dd := desired.ProtoReflect().Descriptor().Fields()
	ld := def.ProtoReflect().Descriptor().Fields()
	for i := 0; i < ld.Len(); i++ {
		f := ld.Get(i)
		g := dd.ByName(f.Name())
		if g == nil || g.Number() != f.Number() || typeOf(g) != typeOf(f) || g.IsPacked() != f.IsPacked() {
			t.Errorf("LRPDefinition.%s (%d, %s) does not match DesiredLRP's", f.Name(), f.Number(), typeOf(f))
		}
	}
	// And every DesiredLRP field not in the definition is one of the LRP's own.
	own := map[protoreflect.Name]bool{"process_guid": true, "domain": true, "instances": true, "routes": true,
		"annotation": true, "modification_tag": true, "metric_tags": true, "previous_definition_id": true,
		"rollout_strategy": true}
	for i := 0; i < dd.Len(); i++ {
		g := dd.Get(i)
		if ld.ByName(g.Name()) == nil && !own[g.Name()] {
			t.Errorf("DesiredLRP.%s is in neither LRPDefinition nor the LRP's own fields", g.Name())
		}
	}
}
