package protocol

import (
	"sort"

	"github.com/updatable-lrps/bbs/model"
	"google.golang.org/protobuf/encoding/protowire"
)

// appendActualLRP appends field n holding actualLRP(a)'s message: the bytes proto.Marshal
// gives it (a test holds the two equal), written straight from the instance. A list of the
// fleet encodes 250,000 instances; through the generic encoder each costs a dozen small
// allocations and a walk of the message's tables, a quarter of the list's time.
//
// Fields are written in number order, proto3 defaults left out except where the message
// always carries them: the keys, the net info and the modification tag (BBS's non-nullable
// parts) and routable (explicit presence). Strings are the store's, valid UTF-8, which
// proto.Marshal would otherwise refuse.
func appendActualLRP(b []byte, n protowire.Number, a *model.ActualLRP) []byte {
	keySize := sizeString(1, a.ProcessGUID) + sizeInt(2, int64(a.Index)) + sizeString(3, a.Domain) +
		sizeString(1000, a.DefinitionID)
	ikSize := sizeString(1, a.InstanceGUID) + sizeString(2, a.CellID)
	netSize := sizeString(1, a.Address) + sizeString(3, a.InstanceAddress) +
		sizeInt(4, int64(preferredAddress(a.PreferredAddress)))
	for i := range a.Ports {
		netSize += sizeMessage(2, portSize(&a.Ports[i]))
	}
	tagSize := sizeString(1, a.ModificationTag.Epoch) + sizeInt(2, int64(a.ModificationTag.Index))
	size := sizeMessage(1, keySize) + sizeMessage(2, ikSize) + sizeMessage(3, netSize) +
		sizeInt(4, int64(a.CrashCount)) + sizeString(5, a.CrashReason) + sizeString(6, a.State) +
		sizeString(7, a.PlacementError) + sizeInt(8, a.Since) + sizeMessage(9, tagSize) +
		sizeInt(10, int64(presence(a.Presence))) + protowire.SizeTag(13) + 1 + sizeString(14, a.AvailabilityZone)
	for _, h := range a.InternalRoutes {
		size += sizeMessage(11, sizeString(1, h))
	}
	tags := sortedKeys(a.MetricTags)
	for _, k := range tags {
		size += sizeMessage(12, tagEntrySize(k, a.MetricTags[k]))
	}

	b = appendLen(b, n, size)
	b = appendLen(b, 1, keySize)
	b = appendString(b, 1, a.ProcessGUID)
	b = appendInt(b, 2, int64(a.Index))
	b = appendString(b, 3, a.Domain)
	b = appendString(b, 1000, a.DefinitionID)
	b = appendLen(b, 2, ikSize)
	b = appendString(b, 1, a.InstanceGUID)
	b = appendString(b, 2, a.CellID)
	b = appendLen(b, 3, netSize)
	b = appendString(b, 1, a.Address)
	for i := range a.Ports {
		p := &a.Ports[i]
		b = appendLen(b, 2, portSize(p))
		b = appendInt(b, 1, int64(p.ContainerPort))
		b = appendInt(b, 2, int64(p.HostPort))
		b = appendInt(b, 3, int64(p.ContainerTLSProxyPort))
		b = appendInt(b, 4, int64(p.HostTLSProxyPort))
	}
	b = appendString(b, 3, a.InstanceAddress)
	b = appendInt(b, 4, int64(preferredAddress(a.PreferredAddress)))
	b = appendInt(b, 4, int64(a.CrashCount))
	b = appendString(b, 5, a.CrashReason)
	b = appendString(b, 6, a.State)
	b = appendString(b, 7, a.PlacementError)
	b = appendInt(b, 8, a.Since)
	b = appendLen(b, 9, tagSize)
	b = appendString(b, 1, a.ModificationTag.Epoch)
	b = appendInt(b, 2, int64(a.ModificationTag.Index))
	b = appendInt(b, 10, int64(presence(a.Presence)))
	for _, h := range a.InternalRoutes {
		b = appendLen(b, 11, sizeString(1, h))
		b = appendString(b, 1, h)
	}
	for _, k := range tags {
		v := a.MetricTags[k]
		b = appendLen(b, 12, tagEntrySize(k, v))
		b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), k)
		b = protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), v)
	}
	b = protowire.AppendTag(b, 13, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeBool(a.Routable()))
	return appendString(b, 14, a.AvailabilityZone)
}

// tagEntrySize is the size of a metric_tags map entry: key 1, value 2, written as
// proto.Marshal writes a map entry (both always, even when empty).
func tagEntrySize(k, v string) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(k)) + protowire.SizeTag(2) + protowire.SizeBytes(len(v))
}

// sortedKeys are m's keys in order: the encoding is deterministic, as proto.Marshal's is
// with Deterministic set.
func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func portSize(p *model.PortMapping) int {
	return sizeInt(1, int64(p.ContainerPort)) + sizeInt(2, int64(p.HostPort)) +
		sizeInt(3, int64(p.ContainerTLSProxyPort)) + sizeInt(4, int64(p.HostTLSProxyPort))
}

// The sizes and appends of proto3 fields: a string or number at its default is not written
// (int32 and enums are sign-extended to 64 bits, as protobuf encodes them; uint32 values are
// passed as their int64).

func sizeString(n protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(n) + protowire.SizeBytes(len(s))
}

func sizeInt(n protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(n) + protowire.SizeVarint(uint64(v))
}

// sizeMessage is the size of a message field whose message is size bytes, written even when
// empty.
func sizeMessage(n protowire.Number, size int) int {
	return protowire.SizeTag(n) + protowire.SizeBytes(size)
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

func appendInt(b []byte, n protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), uint64(v))
}

// appendLen appends the tag and length of a message field of size bytes; its fields follow.
func appendLen(b []byte, n protowire.Number, size int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.BytesType), uint64(size))
}
