package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

var (
	lrpDeploymentRequired = []string{"process_guid", "domain", "instances", "definitions",
		"active_definition_id", "healthy_definition_id"}
	lrpDeploymentAllowed = []string{"routes", "annotation", "modification_tag"}
)

func TestLRPDeployments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	def := definition(obj{"log_guid": "dep-logs", "placement_tags": []string{"t1"}})
	routes := obj{"cf-router": []obj{{"hostnames": []string{"dep.example.com"}, "port": 8080}}}
	created := h.ok("/v1/lrp_deployments/create", obj{
		"process_guid": "dep", "domain": "d", "instances": 2, "routes": routes, "annotation": "a1",
		"definition_id": "v1", "definition": def,
	}).obj(t, "lrp_deployment")

	t.Run("create", func(t *testing.T) {
		requireKeys(t, "lrp_deployment", created, lrpDeploymentRequired, lrpDeploymentAllowed)
		if created.str(t, "process_guid") != "dep" || created.str(t, "domain") != "d" || created.integer(t, "instances") != 2 ||
			created.str(t, "annotation") != "a1" || !reflect.DeepEqual(created["routes"], roundTrip(t, routes)) {
			t.Errorf("lrp_deployment = %v", created)
		}
		if created.str(t, "active_definition_id") != "v1" {
			t.Errorf("active_definition_id = %q, want v1", created.str(t, "active_definition_id"))
		}
		if created.str(t, "healthy_definition_id") != "" {
			t.Errorf("healthy_definition_id = %q, want \"\" before any instance ran", created.str(t, "healthy_definition_id"))
		}
		defs := created.obj(t, "definitions")
		if len(defs) != 1 {
			t.Fatalf("definitions = %v, want only v1", keys(defs))
		}
		v1 := defs.obj(t, "v1")
		requireKeys(t, "definition", v1, []string{"definition_id", "rootfs", "action", "memory_mb", "disk_mb"}, definitionFields)
		want := roundTrip(t, def).(map[string]any)
		want["definition_id"] = "v1"
		if !reflect.DeepEqual(map[string]any(v1), want) {
			t.Errorf("definitions.v1 = %v\nwant %v", v1, want)
		}
		actuals := h.actuals(obj{"process_guid": "dep"})
		if got := indicesOf(t, actuals); !reflect.DeepEqual(got, []int64{0, 1}) {
			t.Fatalf("indices = %v, want 0, 1", got)
		}
		for _, a := range actuals {
			if a.str(t, "definition_id") != "v1" || a.str(t, "state") != model.StateUnclaimed {
				t.Errorf("instance %v", a)
			}
		}
	})
	t.Run("get", func(t *testing.T) {
		got := h.ok("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "dep"}).obj(t, "lrp_deployment")
		if !reflect.DeepEqual(got, created) {
			t.Errorf("get = %v\nwant the create response %v", got, created)
		}
		desired := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "dep"}).obj(t, "desired_lrp")
		if desired.str(t, "definition_id") != "v1" || desired.str(t, "log_guid") != "dep-logs" {
			t.Errorf("desired_lrp projection = %v", desired)
		}
	})
	t.Run("a definition id inside the definition must agree", func(t *testing.T) {
		h.ok("/v1/lrp_deployments/create", obj{
			"process_guid": "same", "domain": "d", "instances": 0, "definition_id": "v1",
			"definition": definition(obj{"definition_id": "v1"}),
		})
		requireError(t, h.postJSON("/v1/lrp_deployments/create", obj{
			"process_guid": "differ", "domain": "d", "instances": 0, "definition_id": "v1",
			"definition": definition(obj{"definition_id": "v2"}),
		}), http.StatusBadRequest, model.ErrInvalidRequest)
	})
	t.Run("invalid creates", func(t *testing.T) {
		base := func(extra obj) obj {
			o := obj{"process_guid": "bad", "domain": "d", "instances": 1, "definition_id": "v1", "definition": definition(nil)}
			for k, v := range extra {
				if v == nil {
					delete(o, k)
				} else {
					o[k] = v
				}
			}
			return o
		}
		for name, body := range map[string]obj{
			"no definition_id":   base(obj{"definition_id": nil}),
			"no definition":      base(obj{"definition": nil}),
			"no domain":          base(obj{"domain": nil}),
			"negative instances": base(obj{"instances": -1}),
			"invalid definition": base(obj{"definition": definition(obj{"rootfs": "no-scheme"})}),
			"long annotation":    base(obj{"annotation": strings.Repeat("a", model.MaxAnnotationBytes+1)}),
		} {
			t.Run(name, func(t *testing.T) {
				requireError(t, h.postJSON("/v1/lrp_deployments/create", body), http.StatusBadRequest, model.ErrInvalidRequest)
			})
		}
		requireError(t, h.postJSON("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "bad"}),
			http.StatusNotFound, model.ErrResourceNotFound)
	})
	t.Run("list", func(t *testing.T) {
		h.ok("/v1/lrp_deployments/create", obj{
			"process_guid": "dep2", "domain": "e", "instances": 1, "definition_id": "w1", "definition": definition(nil),
		})
		for _, c := range []struct {
			name   string
			filter obj
			want   []string
		}{
			{"all", obj{}, []string{"dep", "dep2", "same"}},
			{"by domain", obj{"domain": "e"}, []string{"dep2"}},
			{"by guids", obj{"process_guids": []string{"dep2", "dep"}}, []string{"dep", "dep2"}},
			{"none", obj{"domain": "nope"}, []string{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				deps := h.ok("/v1/lrp_deployments/list", c.filter).list(t, "lrp_deployments")
				if got := guidsOf(t, deps); !reflect.DeepEqual(got, c.want) {
					t.Errorf("lrp_deployments = %v, want %v", got, c.want)
				}
				for _, d := range deps {
					requireKeys(t, "lrp_deployment", d, lrpDeploymentRequired, lrpDeploymentAllowed)
				}
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		got := h.ok("/v1/lrp_deployments/update", obj{"process_guid": "dep", "update": obj{"instances": 4, "annotation": "a2"}}).obj(t, "lrp_deployment")
		if got.integer(t, "instances") != 4 || got.str(t, "annotation") != "a2" || got.str(t, "active_definition_id") != "v1" {
			t.Errorf("lrp_deployment = %v", got)
		}
		if got.obj(t, "modification_tag").integer(t, "index") != created.obj(t, "modification_tag").integer(t, "index")+1 {
			t.Errorf("modification_tag = %v, want index + 1 of %v", got["modification_tag"], created["modification_tag"])
		}
		if got := indicesOf(t, h.actuals(obj{"process_guid": "dep"})); !reflect.DeepEqual(got, []int64{0, 1, 2, 3}) {
			t.Errorf("indices = %v, want 0..3", got)
		}
		got = h.ok("/v1/lrp_deployments/update", obj{"process_guid": "dep", "update": obj{"instances": 1}}).obj(t, "lrp_deployment")
		if got.integer(t, "instances") != 1 {
			t.Errorf("instances = %d, want 1", got.integer(t, "instances"))
		}
		if got := indicesOf(t, h.actuals(obj{"process_guid": "dep"})); !reflect.DeepEqual(got, []int64{0}) {
			t.Errorf("indices = %v, want 0", got)
		}
		requireError(t, h.postJSON("/v1/lrp_deployments/update", obj{"process_guid": "dep", "update": obj{"instances": -1}}),
			http.StatusBadRequest, model.ErrInvalidRequest)
		requireError(t, h.postJSON("/v1/lrp_deployments/update", obj{"process_guid": "dep"}),
			http.StatusBadRequest, model.ErrInvalidRequest)
	})
	t.Run("a desired LRP is a deployment of one definition", func(t *testing.T) {
		h.desire(lrp("plain", "d", 1, nil))
		dep := h.ok("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "plain"}).obj(t, "lrp_deployment")
		if dep.str(t, "active_definition_id") != "plain" || len(dep.obj(t, "definitions")) != 1 ||
			dep.obj(t, "definitions").obj(t, "plain").str(t, "rootfs") != "docker:///busybox" {
			t.Errorf("lrp_deployment = %v", dep)
		}
	})
	t.Run("delete", func(t *testing.T) {
		h.makeRunning("dep", "v1", 0, "cell-9")
		rec := h.postJSON("/v1/lrp_deployments/delete", obj{"process_guid": "dep"})
		if rec.Code != http.StatusOK {
			t.Fatalf("delete: %d %s", rec.Code, rec.Body)
		}
		requireError(t, h.postJSON("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "dep"}),
			http.StatusNotFound, model.ErrResourceNotFound)
		if got := guidsOf(t, h.ok("/v1/lrp_deployments/list", obj{}).list(t, "lrp_deployments")); !reflect.DeepEqual(got, []string{"dep2", "plain", "same"}) {
			t.Errorf("lrp_deployments after delete = %v", got)
		}
		if s := h.stopper.Stopped(); len(s) != 1 || s[0].ProcessGUID != "dep" || s[0].CellID != "cell-9" {
			t.Errorf("stopped %+v, want dep/0 on cell-9", s)
		}
		requireError(t, h.postJSON("/v1/lrp_deployments/delete", obj{"process_guid": "dep"}),
			http.StatusNotFound, model.ErrResourceNotFound)
	})
}
