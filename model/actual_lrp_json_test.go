package model

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendJSONIsEncodingJSON: the hand-written encoder writes exactly what encoding/json
// writes, for instances with every field set or empty and strings with every kind of
// character that JSON escapes.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	pieces := []string{"", "a", "app-1", `"`, `\`, "<", ">", "&", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", "/", "'", " "}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var sb strings.Builder
		for range rng.IntN(4) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	full := ActualLRP{
		ActualLRPKey:         ActualLRPKey{ProcessGUID: "p", DefinitionID: "d", Index: 3, Domain: "cf-apps"},
		ActualLRPInstanceKey: ActualLRPInstanceKey{InstanceGUID: "ig", CellID: "cell-1"},
		ActualLRPNetInfo: ActualLRPNetInfo{Address: "10.0.0.1", InstanceAddress: "10.0.0.2", PreferredAddress: PreferredAddressHost,
			Ports: []PortMapping{{ContainerPort: 8080, HostPort: 61001, ContainerTLSProxyPort: 61443, HostTLSProxyPort: 61002},
				{ContainerPort: 2222, HostPort: 4294967295}}},
		State: StateRunning, PlacementError: "x", Since: -1, CrashCount: 2147483647, CrashReason: "boom",
		Presence: PresenceOrdinary, ModificationTag: ModificationTag{Epoch: "e", Index: 4294967295}, AvailabilityZone: "z1",
		Retiring: true, InternalRoutes: []string{"a.apps.internal", ""}, NotReady: true,
		MetricTags: map[string]string{"source_id": "app", "instance_id": "3", "": "", "<&>": "\u2028"},
	}
	cases := []ActualLRP{{}, full}
	for range 2000 {
		a := ActualLRP{
			ActualLRPKey:         ActualLRPKey{ProcessGUID: str(), DefinitionID: str(), Index: rng.Int32() - rng.Int32(), Domain: str()},
			ActualLRPInstanceKey: ActualLRPInstanceKey{InstanceGUID: str(), CellID: str()},
			ActualLRPNetInfo:     ActualLRPNetInfo{Address: str(), InstanceAddress: str(), PreferredAddress: str()},
			State:                str(), PlacementError: str(), Since: rng.Int64() - rng.Int64(), CrashCount: rng.Int32(),
			CrashReason: str(), Presence: str(), ModificationTag: ModificationTag{Epoch: str(), Index: rng.Uint32()},
			AvailabilityZone: str(), Retiring: rng.IntN(2) == 0, NotReady: rng.IntN(2) == 0,
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
			p := PortMapping{ContainerPort: rng.Uint32(), HostPort: rng.Uint32()}
			if rng.IntN(2) == 0 {
				p.ContainerTLSProxyPort, p.HostTLSProxyPort = rng.Uint32N(3), rng.Uint32N(3)
			}
			a.Ports = append(a.Ports, p)
		}
		cases = append(cases, a)
	}
	for _, a := range cases {
		want, err := json.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON(%+v)\n got %s\nwant %s", a, got, want)
		}
	}
}
