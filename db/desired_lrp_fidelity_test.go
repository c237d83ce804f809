package db_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// Route values come back byte for byte, whitespace and characters JSON re-encoding escapes
// included, from every read and after an update.
func TestRoutesComeBackByteForByte(t *testing.T) {
	s := newStoreWithApp(t)
	routes := model.Routes{
		"cf-router": json.RawMessage(` [ {"hostnames": ["a.example.com"], "route_service_url": "https://rs/?a=1&b=<2>"} ] `),
		"diego-ssh": json.RawMessage(`{"container_port":2222,"private_key":"-----BEGIN-----\n..."}`),
	}
	check := func(what string, got model.Routes) {
		t.Helper()
		if len(got) != len(routes) {
			t.Fatalf("%s: routes = %q, want %q", what, got, routes)
		}
		for name, want := range routes {
			if !bytes.Equal(got[name], want) {
				t.Errorf("%s: routes[%s] = %q, want %q", what, name, got[name], want)
			}
		}
	}
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Routes: &routes}); err != nil {
		t.Fatal(err)
	}
	d, err := s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	check("desired LRP", d.Routes)
	infos, err := s.DesiredLRPSchedulingInfos(ctx, model.DesiredLRPFilter{})
	if err != nil || len(infos) != 1 {
		t.Fatalf("scheduling infos = %v, %v", infos, err)
	}
	check("scheduling info", infos[0].Routes)
	routing, err := s.DesiredLRPRoutingInfos(ctx, model.DesiredLRPFilter{})
	if err != nil || len(routing) != 1 {
		t.Fatalf("routing infos = %v, %v", routing, err)
	}
	check("routing info", routing[0].Routes)
	dep, err := s.LRPDeploymentByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	check("LRP deployment", dep.Routes)

	// A desire keeps them too; rows written before routes_exact existed read the JSON.
	in := newLRP("other", 0)
	in.Routes = routes
	desire(t, s, in)
	d, err = s.DesiredLRPByProcessGUID(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	check("desired", d.Routes)
	exec(t, s, `UPDATE desired_lrps SET routes_exact = NULL WHERE process_guid = 'other'`)
	d, err = s.DesiredLRPByProcessGUID(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if v := string(d.Routes["diego-ssh"]); v != string(routes["diego-ssh"]) {
		t.Errorf("without routes_exact, diego-ssh = %s", v)
	}
}

func newStoreWithApp(t *testing.T) *db.Store {
	t.Helper()
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 0))
	return s
}

// The definition's protobuf, max_pids and volume drivers are stored with it; the scheduling
// infos carry the latter two without reading the run info.
func TestDefinitionProtobufAndSchedulingExtras(t *testing.T) {
	s := dbtest.NewStore(t)
	in := newLRP("app", 0)
	in.MaxPids = 1024
	in.VolumeMounts = json.RawMessage(`[{"driver":"nfs","container_dir":"/data"},{"driver":"smb"}]`)
	in.Protobuf = []byte{0x1a, 0x03, 'a', 'b', 'c'}
	desire(t, s, in)

	d, err := s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxPids != 1024 || !bytes.Equal(d.Protobuf, in.Protobuf) {
		t.Fatalf("max_pids = %d, protobuf = %x", d.MaxPids, d.Protobuf)
	}
	infos, err := s.DesiredLRPSchedulingInfos(ctx, model.DesiredLRPFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if infos[0].MaxPids != 1024 || !reflect.DeepEqual(infos[0].VolumeDrivers, []string{"nfs", "smb"}) {
		t.Fatalf("scheduling info = %+v", infos[0])
	}
	dep, err := s.LRPDeploymentByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dep.Definitions["app"].Protobuf, in.Protobuf) {
		t.Fatalf("deployment's definition protobuf = %x", dep.Definitions["app"].Protobuf)
	}

	// An update may rewrite the active definition's protobuf, if it is still the active one.
	next := []byte{0x1a, 0x01, 'x'}
	_, err = s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{
		ActiveDefinition: &model.DefinitionProtobuf{DefinitionID: "other", Protobuf: next}})
	wantType(t, err, model.ErrResourceConflict)
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{
		ActiveDefinition: &model.DefinitionProtobuf{DefinitionID: "app", Protobuf: next}}); err != nil {
		t.Fatal(err)
	}
	d, err = s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Protobuf, next) || d.ModificationTag.Index != 1 {
		t.Fatalf("protobuf = %x, tag %+v", d.Protobuf, d.ModificationTag)
	}
}

// Cloud Controller's process guids are "<app guid>-<version>": app guids select by prefix,
// and a '_' or '%' in one is no wildcard.
func TestListsFilterByAppGUIDs(t *testing.T) {
	s := dbtest.NewStore(t)
	for _, g := range []string{"app1-v1", "app1-v2", "app2-v1", "apXY-v1", "ap_1-v1"} {
		desire(t, s, newLRP(g, 0))
	}
	for _, c := range []struct {
		filter model.DesiredLRPFilter
		want   []string
	}{
		{model.DesiredLRPFilter{AppGUIDs: []string{"app1"}}, []string{"app1-v1", "app1-v2"}},
		{model.DesiredLRPFilter{AppGUIDs: []string{"app1", "app2"}}, []string{"app1-v1", "app1-v2", "app2-v1"}},
		{model.DesiredLRPFilter{AppGUIDs: []string{"ap_"}}, []string{"ap_1-v1"}},
		{model.DesiredLRPFilter{AppGUIDs: []string{"ap%"}}, nil},
		{model.DesiredLRPFilter{AppGUIDs: []string{"app1"}, ProcessGUIDs: []string{"app1-v2", "app2-v1"}}, []string{"app1-v2"}},
	} {
		lrps, err := s.DesiredLRPs(ctx, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lrps {
			got = append(got, l.ProcessGUID)
		}
		infos, err := s.DesiredLRPSchedulingInfos(ctx, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		routing, err := s.DesiredLRPRoutingInfos(ctx, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) || len(infos) != len(c.want) || len(routing) != len(c.want) {
			t.Errorf("%+v: desired %v (%d scheduling infos, %d routing infos), want %v", c.filter, got, len(infos), len(routing), c.want)
		}
	}
}

// Routing infos carry BBS's subset, from the LRP and its active definition's log guid.
func TestRoutingInfos(t *testing.T) {
	s := dbtest.NewStore(t)
	in := newLRP("app", 2)
	in.LogGUID = "log-1"
	in.MetricTags = map[string]json.RawMessage{"source_id": json.RawMessage(`{"static":"x"}`)}
	desire(t, s, in)
	got, err := s.DesiredLRPRoutingInfos(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{"app"}})
	if err != nil || len(got) != 1 {
		t.Fatalf("routing infos = %v, %v", got, err)
	}
	r := got[0]
	if r.ProcessGUID != "app" || r.Domain != "cf-apps" || r.Instances != 2 || r.LogGUID != "log-1" ||
		r.DefinitionID != "app" || string(r.MetricTags["source_id"]) != `{"static":"x"}` || r.ModificationTag.Epoch == "" ||
		string(r.Routes["cf-router"]) != string(in.Routes["cf-router"]) {
		t.Fatalf("routing info = %+v", r)
	}
}
