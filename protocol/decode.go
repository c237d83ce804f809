package protocol

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// misTyped reports whether m, or any message inside it, holds a field of its own schema with
// the wrong wire type. google.golang.org/protobuf keeps such a field as an unknown one and
// leaves the field at its default; BBS's gogo-generated decoders refuse the message, and so
// do we: a client that sends a string where a number belongs must hear InvalidRequest, not
// have its value silently dropped. Truly unknown fields (a newer client's) stay accepted.
func misTyped(m protoreflect.Message) bool {
	fields := m.Descriptor().Fields()
	for b := m.GetUnknown(); len(b) > 0; {
		num, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return true
		}
		if fields.ByNumber(num) != nil {
			return true
		}
		b = b[n:]
	}
	bad := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					bad = misTyped(mv.Message())
					return !bad
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i := 0; i < v.List().Len() && !bad; i++ {
					bad = misTyped(v.List().Get(i).Message())
				}
			}
		case fd.Message() != nil:
			bad = misTyped(v.Message())
		}
		return !bad
	})
	return bad
}
