package protocol

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestAppendActualLRPIsProtoMarshal: the hand-written encoder of the lists writes exactly
// what proto.Marshal writes for the converted message, for instances with every field set,
// empty or at its extremes.
func TestAppendActualLRPIsProtoMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	str := func() string { return pick("", "a", "cell-1", "é日本😀", string(make([]byte, 200))) }
	num := func() uint32 { return []uint32{0, 1, 127, 128, 65535, 1<<32 - 1}[rng.IntN(6)] }
	full := model.ActualLRP{
		ActualLRPKey:         model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d", Index: -1, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "ig", CellID: "cell-1"},
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: "10.0.0.1", InstanceAddress: "10.0.0.2", PreferredAddress: model.PreferredAddressHost,
			Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61001, ContainerTLSProxyPort: 61443, HostTLSProxyPort: 61002}}},
		State: model.StateRunning, PlacementError: "x", Since: -1, CrashCount: -2147483648, CrashReason: "boom",
		Presence: model.PresenceSuspect, ModificationTag: model.ModificationTag{Epoch: "e", Index: 1<<32 - 1}, AvailabilityZone: "z1",
		InternalRoutes: []string{"app.apps.internal", ""},
		MetricTags:     map[string]string{"source_id": "app-guid", "instance_id": "0", "empty": "", "": "v"},
	}
	cases := []model.ActualLRP{{}, full}
	for range 1000 {
		a := model.ActualLRP{
			ActualLRPKey:         model.ActualLRPKey{ProcessGUID: str(), DefinitionID: str(), Index: rng.Int32() - rng.Int32(), Domain: str()},
			ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: str(), CellID: str()},
			ActualLRPNetInfo: model.ActualLRPNetInfo{Address: str(), InstanceAddress: str(),
				PreferredAddress: pick("", model.PreferredAddressInstance, model.PreferredAddressHost)},
			State:          pick("", model.StateUnclaimed, model.StateClaimed, model.StateRunning, model.StateCrashed),
			PlacementError: str(), Since: rng.Int64() - rng.Int64(), CrashCount: rng.Int32N(3) - 1, CrashReason: str(),
			Presence:         pick(model.PresenceOrdinary, model.PresenceEvacuating, model.PresenceSuspect),
			ModificationTag:  model.ModificationTag{Epoch: str(), Index: num()},
			AvailabilityZone: str(), Retiring: rng.IntN(2) == 0,
		}
		if rng.IntN(3) == 0 {
			a.Index = int32(rng.IntN(3))
		}
		for range rng.IntN(3) {
			a.InternalRoutes = append(a.InternalRoutes, str())
		}
		for range rng.IntN(4) {
			if a.MetricTags == nil {
				a.MetricTags = map[string]string{}
			}
			a.MetricTags[str()] = str()
		}
		for range rng.IntN(3) {
			a.Ports = append(a.Ports, model.PortMapping{ContainerPort: num(), HostPort: num(), ContainerTLSProxyPort: num(), HostTLSProxyPort: num()})
		}
		cases = append(cases, a)
	}
	for _, a := range cases {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.ActualLRPsResponse{ActualLrps: []*pb.ActualLRP{actualLRP(&a)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendActualLRP(nil, 2, &a); !bytes.Equal(got, want) {
			t.Fatalf("appendActualLRP(%+v)\n got %x\nwant %x", a, got, want)
		}
	}
	// The field number is the caller's.
	if got := appendActualLRP(nil, 1, &full); protowire.Number(got[0]>>3) != 1 {
		t.Fatalf("field %d, want 1", got[0]>>3)
	}
}
