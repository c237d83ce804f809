package sshproxy

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// fakeBBS answers from fixed LRPs and instances.
type fakeBBS struct {
	deps      []model.LRPDeployment
	instances []model.ActualLRP
}

func (f *fakeBBS) LRPDeployments(_ context.Context, filter model.DesiredLRPFilter) ([]model.LRPDeployment, error) {
	var out []model.LRPDeployment
	for _, d := range f.deps {
		if slices.Contains(filter.ProcessGUIDs, d.ProcessGUID) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeBBS) ActualLRPs(_ context.Context, filter model.ActualLRPFilter) ([]model.ActualLRP, error) {
	var out []model.ActualLRP
	for _, a := range f.instances {
		if a.ProcessGUID == filter.ProcessGUID && (filter.Index == nil || *filter.Index == a.Index) {
			out = append(out, a)
		}
	}
	return out, nil
}

func instance(guid, def string, index int32, state string, retiring bool, ports ...model.PortMapping) model.ActualLRP {
	a := model.ActualLRP{State: state, Presence: model.PresenceOrdinary, Retiring: retiring}
	a.ProcessGUID, a.DefinitionID, a.Index, a.Domain = "web", def, index, "cf-apps"
	a.InstanceGUID, a.CellID, a.Address, a.Ports = guid, "cell-1", "127.0.0.1", ports
	return a
}

func TestSelectInstanceDuringARollout(t *testing.T) {
	const active = "v2"
	oldRunning := instance("old", "v1", 0, model.StateRunning, false)
	oldRetiring := instance("old", "v1", 0, model.StateRunning, true)
	newRunning := instance("new", "v2", 0, model.StateRunning, false)
	newStarting := instance("new", "v2", 0, model.StateClaimed, false)
	newRetiring := instance("new", "v2", 0, model.StateRunning, true)
	evacuating := instance("evac", "v2", 0, model.StateRunning, false)
	evacuating.Presence = model.PresenceEvacuating
	crashed := instance("c", "v2", 0, model.StateCrashed, false)
	for _, tc := range []struct {
		name      string
		instances []model.ActualLRP
		want      string
		wantErr   string
	}{
		{"only the old one runs", []model.ActualLRP{oldRunning, newStarting}, "old", ""},
		{"both run: the active definition's", []model.ActualLRP{oldRunning, newRunning}, "new", ""},
		{"the old one retiring", []model.ActualLRP{oldRetiring, newRunning}, "new", ""},
		{"only a retiring one runs", []model.ActualLRP{oldRetiring, newStarting}, "old", ""},
		{"the active one retiring (cancel): the other", []model.ActualLRP{newRetiring, oldRunning}, "old", ""},
		{"an evacuating one and its replacement", []model.ActualLRP{evacuating, newRunning}, "new", ""},
		{"only the evacuating one runs", []model.ActualLRP{evacuating, newStarting}, "evac", ""},
		{"nothing runs", []model.ActualLRP{newStarting, crashed}, "", "no RUNNING instance (CLAIMED, CRASHED)"},
		{"nothing at all", nil, "", "no instance yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whatever the listing's order, the choice is the same.
			for range 10 {
				list := slices.Clone(tc.instances)
				rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
				got, err := SelectInstance(list, active)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("err = %v, want %q", err, tc.wantErr)
					}
					continue
				}
				if err != nil || got.InstanceGUID != tc.want {
					t.Fatalf("got %v %v, want %s", got, err, tc.want)
				}
			}
		})
	}
	// Two equal candidates: the lowest instance guid, in any order.
	a, b := instance("a", "v2", 0, model.StateRunning, false), instance("b", "v2", 0, model.StateRunning, false)
	for _, list := range [][]model.ActualLRP{{a, b}, {b, a}} {
		if got, _ := SelectInstance(list, active); got.InstanceGUID != "a" {
			t.Fatalf("tie broken to %s", got.InstanceGUID)
		}
	}
}

func deployment(t *testing.T, routes model.Routes, defs map[string][]uint32) model.LRPDeployment {
	t.Helper()
	d := model.LRPDeployment{ProcessGUID: "web", Domain: "cf-apps", Instances: 3, Routes: routes,
		Definitions: map[string]model.LRPDefinition{}, ActiveDefinitionID: "v2"}
	for id, ports := range defs {
		d.Definitions[id] = model.LRPDefinition{DefinitionID: id, Ports: ports}
	}
	return d
}

func TestResolveMapsThroughTheInstancesOwnDefinition(t *testing.T) {
	host, pemKey := newKey(t)
	route := routeJSON(t, Route{ContainerPort: 2222, HostFingerprint: Fingerprint(host.PublicKey()), PrivateKey: pemKey})
	withSSH := model.Routes{RouteName: route}
	// v1 exposes 2222 second, v2 first: each instance's own mapping decides its host port.
	bbs := &fakeBBS{
		deps: []model.LRPDeployment{deployment(t, withSSH, map[string][]uint32{"v1": {8080, 2222}, "v2": {2222, 9090}})},
		instances: []model.ActualLRP{
			instance("old0", "v1", 0, model.StateRunning, false, model.PortMapping{ContainerPort: 8080, HostPort: 61000}, model.PortMapping{ContainerPort: 2222, HostPort: 61001}),
			instance("new0", "v2", 0, model.StateClaimed, false),
			instance("old1", "v1", 1, model.StateRunning, true, model.PortMapping{ContainerPort: 8080, HostPort: 61002}, model.PortMapping{ContainerPort: 2222, HostPort: 61003}),
			instance("new1", "v2", 1, model.StateRunning, false, model.PortMapping{ContainerPort: 2222, HostPort: 61010}, model.PortMapping{ContainerPort: 9090, HostPort: 61011}),
		},
	}
	for index, want := range map[int32]string{0: "127.0.0.1:61001", 1: "127.0.0.1:61010"} {
		target, err := Resolve(context.Background(), bbs, "web", index)
		if err != nil || target.Address != want {
			t.Fatalf("index %d: %+v %v, want %s", index, target, err, want)
		}
	}
}

func TestResolveSaysWhyThereIsNoTarget(t *testing.T) {
	host, pemKey := newKey(t)
	route := routeJSON(t, Route{ContainerPort: 2222, HostFingerprint: Fingerprint(host.PublicKey()), PrivateKey: pemKey})
	ports := model.PortMapping{ContainerPort: 8080, HostPort: 61000}
	for _, tc := range []struct {
		name  string
		dep   model.LRPDeployment
		inst  []model.ActualLRP
		index int32
		want  string
	}{
		{"no LRP", model.LRPDeployment{ProcessGUID: "other"}, nil, 0, `there is no LRP with process guid "web"`},
		{"no route", deployment(t, model.Routes{"cf-router": json.RawMessage(`[]`)}, map[string][]uint32{"v2": {8080}}), nil, 0, `LRP "web" has no diego-ssh route: ssh is not enabled for it`},
		{"bad route", deployment(t, model.Routes{RouteName: json.RawMessage(`{"container_port":0}`)}, nil), nil, 0, `LRP "web": its diego-ssh route's container_port must be between 1 and 65535`},
		{"out of range", deployment(t, model.Routes{RouteName: route}, map[string][]uint32{"v2": {2222}}), nil, 3, `index 3 is out of range: LRP "web" has 3 instance(s) (indices 0-2)`},
		{"not running", deployment(t, model.Routes{RouteName: route}, map[string][]uint32{"v2": {2222}}),
			[]model.ActualLRP{instance("i", "v2", 1, model.StateCrashed, false)}, 1, `LRP "web", index 1: no RUNNING instance (CRASHED)`},
		{"port not exposed", deployment(t, model.Routes{RouteName: route}, map[string][]uint32{"v2": {8080}}),
			[]model.ActualLRP{instance("i", "v2", 0, model.StateRunning, false, ports)}, 0, `definition "v2" of LRP "web" does not expose the ssh port 2222 (its ports: [8080])`},
		{"instance without the port", deployment(t, model.Routes{RouteName: route}, map[string][]uint32{"v2": {2222}}),
			[]model.ActualLRP{instance("i", "v2", 0, model.StateRunning, false, ports)}, 0, `instance i (definition "v2") of LRP "web" has no host port for the ssh port 2222`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(context.Background(), &fakeBBS{deps: []model.LRPDeployment{tc.dep}, instances: tc.inst}, "web", tc.index)
			if _, ok := err.(*Refusal); !ok || err.Error() != tc.want {
				t.Fatalf("err = %v, want the refusal %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatal("the refusal shows the key")
			}
		})
	}
}
