package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// bbsRoute is one BBS-style POST route of server.go, as the edge sees it.
type bbsRoute struct {
	path string
	// required: the request has required fields, so an empty request is InvalidRequest.
	required bool
	// wrongTypes are bodies that parse as JSON but give a field of this route the wrong type.
	wrongTypes []string
}

// bbsRoutes lists every route that decodes a request (all /v1 routes but ping).
var bbsRoutes = []bbsRoute{
	{"/v1/domains/upsert", true, []string{`{"domain": 5}`, `{"domain": "d", "ttl": "10"}`, `{"domain": "d", "ttl": 1.5}`}},
	{"/v1/domains/list", false, nil},

	{"/v1/desired_lrp/desire", true, []string{
		`{"desired_lrp": {"instances": "3"}}`, `{"desired_lrp": []}`, `{"desired_lrp": "p"}`,
		`{"desired_lrp": {"process_guid": 5}}`, `{"desired_lrp": {"routes": []}}`,
		`{"desired_lrp": {"action": {"run": {"args": "ls"}}}}`, `{"desired_lrp": {"memory_mb": 3000000000}}`,
		`{"desired_lrp": {"ports": [-1]}}`, `{"desired_lrp": {"env": {"A": "b"}}}`,
	}},
	{"/v1/desired_lrps/get_by_process_guid", true, []string{`{"process_guid": 5}`, `{"process_guid": ["p"]}`, `{"process_guid": {}}`}},
	{"/v1/desired_lrps/list", false, []string{`{"domain": 5}`, `{"process_guids": "p"}`, `{"process_guids": [1]}`}},
	{"/v1/desired_lrp_scheduling_infos/list", false, []string{`{"domain": false}`, `{"process_guids": {"p": 1}}`}},
	{"/v1/desired_lrp/update", true, []string{
		`{"process_guid": 5}`, `{"process_guid": "p", "update": []}`,
		`{"process_guid": "p", "update": {"instances": "3"}}`, `{"process_guid": "p", "update": {"annotation": 7}}`,
		`{"process_guid": "p", "update": {"routes": "r"}}`, `{"process_guid": "p", "update": {"definition": 1}}`,
	}},
	{"/v1/desired_lrp/cancel_update", true, []string{`{"process_guid": 5}`}},
	{"/v1/desired_lrp/rollback", true, []string{`{"process_guid": 5}`, `{"process_guid": "p", "definition_id": 1}`}},
	{"/v1/desired_lrp/remove", true, []string{`{"process_guid": 5}`, `{"process_guid": true}`}},

	{"/v1/lrp_deployments/create", true, []string{
		`{"process_guid": 5}`, `{"process_guid": "p", "instances": "3"}`, `{"definition": "d"}`,
		`{"definition_id": 7}`, `{"definition": {"memory_mb": "64"}}`,
	}},
	{"/v1/lrp_deployments/update", true, []string{
		`{"process_guid": 5}`, `{"process_guid": "p", "update": {"instances": "3"}}`,
		`{"process_guid": "p", "update": {"definition_id": 5}}`,
	}},
	{"/v1/lrp_deployments/activate", true, []string{`{"process_guid": 5}`, `{"process_guid": "p", "definition_id": []}`}},
	{"/v1/lrp_deployments/delete", true, []string{`{"process_guid": 5}`}},
	{"/v1/lrp_deployments/get_by_process_guid", true, []string{`{"process_guid": 5}`}},
	{"/v1/lrp_deployments/list", false, []string{`{"domain": 5}`, `{"process_guids": "p"}`}},

	{"/v1/actual_lrps/list", false, []string{
		`{"index": "0"}`, `{"process_guid": "p", "index": 1.5}`, `{"process_guid": "p", "index": 4294967296}`,
		`{"cell_id": 1}`, `{"domain": []}`, `{"definition_id": {}}`,
	}},
	{"/v1/actual_lrp_groups/list", false, []string{`{"domain": 5}`, `{"cell_id": true}`}},
	{"/v1/actual_lrp_groups/list_by_process_guid", true, []string{`{"process_guid": 5}`}},
	{"/v1/actual_lrp_groups/get_by_process_guid_and_index", true, []string{
		`{"process_guid": "p", "index": "1"}`, `{"process_guid": 5, "index": 0}`, `{"process_guid": "p", "index": -2147483649}`,
	}},
	{"/v1/actual_lrps/retire", true, []string{
		`{"actual_lrp_key": "p"}`, `{"actual_lrp_key": {"process_guid": "p", "index": "0"}}`,
		`{"actual_lrp_key": {"process_guid": 5, "index": 0}}`,
	}},

	{"/v1/rollouts/list", false, []string{`{"active": "yes"}`, `{"process_guid": 5}`}},
	{"/v1/rollouts/get", true, []string{`{"process_guid": 5}`}},

	{"/v1/cells/list", false, nil},
}

// allPostRoutes is every POST route of server.go, ping included.
func allPostRoutes() []string {
	out := []string{"/v1/ping"}
	for _, r := range bbsRoutes {
		out = append(out, r.path)
	}
	return out
}

func TestMalformedJSONIsInvalidJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bodies := []string{
		"{", "garbage", `{"process_guid": }`, `{"process_guid": "p"`, `{'process_guid': 'p'}`,
		`{"process_guid": "p"} trailing`, `{"a": 1}{"b": 2}`, "\xff\xfe", `{"a": NaN}`, `{"a": "\x01"}`,
	}
	for _, r := range bbsRoutes {
		for _, body := range bodies {
			t.Run(r.path+"/"+body, func(t *testing.T) {
				requireError(t, h.post(r.path, body), http.StatusBadRequest, model.ErrInvalidJSON)
			})
		}
	}
}

func TestWrongShapeIsInvalidRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	generic := []string{`[]`, `null`, `"process_guid"`, `5`, `true`, `[{"process_guid": "p"}]`}
	for _, r := range bbsRoutes {
		for _, body := range append(append([]string{}, generic...), r.wrongTypes...) {
			t.Run(r.path+"/"+body, func(t *testing.T) {
				rec := h.post(r.path, body)
				requireError(t, rec, http.StatusBadRequest, model.ErrInvalidRequest)
			})
		}
	}
	t.Run("the message names the field", func(t *testing.T) {
		rec := h.post("/v1/desired_lrps/get_by_process_guid", `{"process_guid": 5}`)
		requireError(t, rec, http.StatusBadRequest, model.ErrInvalidRequest)
		if msg := errorMessage(t, rec); !strings.Contains(msg, "process_guid") {
			t.Errorf("message %q does not name process_guid", msg)
		}
	})
}

func TestBodyOverOneMiBIsRequestTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	valid := `{"process_guid": "` + strings.Repeat("a", model.MaxRequestBytes) + `"}`
	malformed := "{" + strings.Repeat("x", model.MaxRequestBytes)
	for _, r := range bbsRoutes {
		t.Run(r.path, func(t *testing.T) {
			requireError(t, h.post(r.path, valid), http.StatusRequestEntityTooLarge, model.ErrRequestTooLarge)
			requireError(t, h.post(r.path, malformed), http.StatusRequestEntityTooLarge, model.ErrRequestTooLarge)
		})
	}
	t.Run("exactly 1 MiB is read", func(t *testing.T) {
		body := "{}" + strings.Repeat(" ", model.MaxRequestBytes-2)
		if rec := h.post("/v1/desired_lrps/list", body); rec.Code != http.StatusOK {
			t.Errorf("status %d, want 200; body %s", rec.Code, rec.Body)
		}
		requireError(t, h.post("/v1/domains/upsert", body), http.StatusBadRequest, model.ErrInvalidRequest)
		if rec := h.post("/v1/desired_lrps/list", body+" "); rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("1 MiB + 1 byte: status %d, want 413", rec.Code)
		}
	})
}

func TestEmptyBodyIsAnEmptyRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, r := range bbsRoutes {
		for _, body := range []string{"", " \n\t", "{}", `{"unknown_field": 1}`} {
			t.Run(r.path+"/"+body, func(t *testing.T) {
				rec := h.post(r.path, body)
				if r.required {
					requireError(t, rec, http.StatusBadRequest, model.ErrInvalidRequest)
					return
				}
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d, want 200; body %s", rec.Code, rec.Body)
				}
				requireJSONContentType(t, rec)
				decodeObject(t, rec.Body.Bytes())
			})
		}
	}
	t.Run("no body at all", func(t *testing.T) {
		if rec := h.do(http.MethodPost, "/v1/cells/list", nil); rec.Code != http.StatusOK {
			t.Errorf("status %d, want 200; body %s", rec.Code, rec.Body)
		}
		requireError(t, h.do(http.MethodPost, "/v1/rollouts/get", nil), http.StatusBadRequest, model.ErrInvalidRequest)
	})
}

// Ping takes no request (as in BBS): whatever the body, it answers whether the BBS can serve.
func TestPingIgnoresItsBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, body := range []string{"", "{}", "{", "garbage", "null"} {
		rec := h.post("/v1/ping", body)
		if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"available":true}` {
			t.Errorf("ping %q: %d %s", body, rec.Code, rec.Body)
		}
	}
}

func TestUnknownRouteIsNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v1/nope"},
		{http.MethodPost, "/v1/desired_lrps"},
		{http.MethodPost, "/v1/desired_lrp/desire/extra"},
		{http.MethodGet, "/"},
		{http.MethodGet, "/v2/ping"},
		{http.MethodPost, "/v1/events/nope"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			requireError(t, h.do(c.method, c.path, strings.NewReader("{}")), http.StatusNotFound, model.ErrResourceNotFound)
		})
	}
}

func TestWrongMethodIsAnErrorNot500(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, path := range allPostRoutes() {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			t.Run(method+" "+path, func(t *testing.T) {
				rec := h.do(method, path, nil)
				if rec.Code < 400 || rec.Code >= 500 {
					t.Errorf("status %d, want a 4xx; body %s", rec.Code, rec.Body)
				}
				requireErrorShape(t, rec)
			})
		}
	}
	t.Run("POST /healthz", func(t *testing.T) {
		rec := h.post("/healthz", "")
		if rec.Code < 400 || rec.Code >= 500 {
			t.Errorf("status %d, want a 4xx; body %s", rec.Code, rec.Body)
		}
		requireErrorShape(t, rec)
	})
}

func TestUnknownProcessGUIDIsNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("exists", "d", 1, nil))
	def := definition(obj{"definition_id": "v2"})
	const guid = "nope"
	for _, c := range []struct {
		name, path string
		body       obj
	}{
		{"get", "/v1/desired_lrps/get_by_process_guid", obj{"process_guid": guid}},
		{"update", "/v1/desired_lrp/update", obj{"process_guid": guid, "update": obj{"instances": 2}}},
		{"update with definition", "/v1/desired_lrp/update", obj{"process_guid": guid, "update": obj{"definition": def}}},
		{"remove", "/v1/desired_lrp/remove", obj{"process_guid": guid}},
		{"cancel_update", "/v1/desired_lrp/cancel_update", obj{"process_guid": guid}},
		{"rollback", "/v1/desired_lrp/rollback", obj{"process_guid": guid, "definition_id": "v1"}},
		{"lrp_deployments get", "/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": guid}},
		{"lrp_deployments activate", "/v1/lrp_deployments/activate", obj{"process_guid": guid, "definition_id": "v1"}},
		{"lrp_deployments update", "/v1/lrp_deployments/update", obj{"process_guid": guid, "update": obj{"instances": 2}}},
		{"lrp_deployments update with definition", "/v1/lrp_deployments/update",
			obj{"process_guid": guid, "update": obj{"definition_id": "v2", "definition": def}}},
		{"lrp_deployments delete", "/v1/lrp_deployments/delete", obj{"process_guid": guid}},
		{"retire", "/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": guid, "index": 0, "domain": "d"}}},
		{"retire beyond the instances", "/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "exists", "index": 1, "domain": "d"}}},
		{"retire of another definition", "/v1/actual_lrps/retire",
			obj{"actual_lrp_key": obj{"process_guid": "exists", "index": 0, "domain": "d", "definition_id": "other"}}},
		{"group by index", "/v1/actual_lrp_groups/get_by_process_guid_and_index", obj{"process_guid": guid, "index": 0}},
		{"group beyond the instances", "/v1/actual_lrp_groups/get_by_process_guid_and_index", obj{"process_guid": "exists", "index": 1}},
		{"rollout", "/v1/rollouts/get", obj{"process_guid": guid}},
		{"255 characters is a valid guid", "/v1/desired_lrps/get_by_process_guid", obj{"process_guid": strings.Repeat("g", 255)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, h.postJSON(c.path, c.body), http.StatusNotFound, model.ErrResourceNotFound)
		})
	}
}

func TestInvalidGUIDIsInvalidRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("exists", "d", 1, nil))
	def := definition(nil)
	cases := []struct {
		name, path string
		body       func(g string) obj
	}{
		{"desire", "/v1/desired_lrp/desire", func(g string) obj { return obj{"desired_lrp": lrp(g, "d", 1, nil)} }},
		{"desire definition_id", "/v1/desired_lrp/desire", func(g string) obj {
			return obj{"desired_lrp": lrp("fresh", "d", 1, obj{"definition_id": g})}
		}},
		{"get", "/v1/desired_lrps/get_by_process_guid", func(g string) obj { return obj{"process_guid": g} }},
		{"list", "/v1/desired_lrps/list", func(g string) obj { return obj{"process_guids": []string{"exists", g}} }},
		{"scheduling infos", "/v1/desired_lrp_scheduling_infos/list", func(g string) obj { return obj{"process_guids": []string{g}} }},
		{"update", "/v1/desired_lrp/update", func(g string) obj { return obj{"process_guid": g, "update": obj{"instances": 1}} }},
		{"update definition_id", "/v1/desired_lrp/update", func(g string) obj {
			return obj{"process_guid": "exists", "update": obj{"definition": definition(obj{"definition_id": g})}}
		}},
		{"cancel_update", "/v1/desired_lrp/cancel_update", func(g string) obj { return obj{"process_guid": g} }},
		{"rollback", "/v1/desired_lrp/rollback", func(g string) obj { return obj{"process_guid": g, "definition_id": "v1"} }},
		{"rollback definition_id", "/v1/desired_lrp/rollback", func(g string) obj { return obj{"process_guid": "exists", "definition_id": g} }},
		{"remove", "/v1/desired_lrp/remove", func(g string) obj { return obj{"process_guid": g} }},
		{"lrp_deployments create", "/v1/lrp_deployments/create", func(g string) obj {
			return obj{"process_guid": g, "domain": "d", "instances": 1, "definition_id": "v1", "definition": def}
		}},
		{"lrp_deployments create definition_id", "/v1/lrp_deployments/create", func(g string) obj {
			return obj{"process_guid": "fresh", "domain": "d", "instances": 1, "definition_id": g, "definition": def}
		}},
		{"lrp_deployments update", "/v1/lrp_deployments/update", func(g string) obj { return obj{"process_guid": g, "update": obj{"instances": 1}} }},
		{"lrp_deployments update definition_id", "/v1/lrp_deployments/update", func(g string) obj {
			return obj{"process_guid": "exists", "update": obj{"definition_id": g, "definition": def}}
		}},
		{"lrp_deployments activate", "/v1/lrp_deployments/activate", func(g string) obj { return obj{"process_guid": g, "definition_id": "v1"} }},
		{"lrp_deployments activate definition_id", "/v1/lrp_deployments/activate", func(g string) obj {
			return obj{"process_guid": "exists", "definition_id": g}
		}},
		{"lrp_deployments delete", "/v1/lrp_deployments/delete", func(g string) obj { return obj{"process_guid": g} }},
		{"lrp_deployments get", "/v1/lrp_deployments/get_by_process_guid", func(g string) obj { return obj{"process_guid": g} }},
		{"lrp_deployments list", "/v1/lrp_deployments/list", func(g string) obj { return obj{"process_guids": []string{g}} }},
		{"actual_lrps list", "/v1/actual_lrps/list", func(g string) obj { return obj{"process_guid": g} }},
		{"actual_lrps list definition_id", "/v1/actual_lrps/list", func(g string) obj { return obj{"definition_id": g} }},
		{"groups by process guid", "/v1/actual_lrp_groups/list_by_process_guid", func(g string) obj { return obj{"process_guid": g} }},
		{"group by index", "/v1/actual_lrp_groups/get_by_process_guid_and_index", func(g string) obj { return obj{"process_guid": g, "index": 0} }},
		{"retire", "/v1/actual_lrps/retire", func(g string) obj {
			return obj{"actual_lrp_key": obj{"process_guid": g, "index": 0, "domain": "d"}}
		}},
		{"retire definition_id", "/v1/actual_lrps/retire", func(g string) obj {
			return obj{"actual_lrp_key": obj{"process_guid": "exists", "index": 0, "domain": "d", "definition_id": g}}
		}},
		{"rollouts list", "/v1/rollouts/list", func(g string) obj { return obj{"process_guid": g} }},
		{"rollouts get", "/v1/rollouts/get", func(g string) obj { return obj{"process_guid": g} }},
	}
	invalid := map[string]string{
		"space":    "has space",
		"slash":    "a/b",
		"256":      strings.Repeat("g", 256),
		"dot":      "a.b",
		"unicode":  "grüße",
		"newline":  "a\nb",
		"percent":  "a%20b",
		"sql":      "x'; DROP TABLE desired_lrps; --",
		"nul byte": "a\x00b",
	}
	for _, c := range cases {
		for name, g := range invalid {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				requireError(t, h.postJSON(c.path, c.body(g)), http.StatusBadRequest, model.ErrInvalidRequest)
			})
		}
	}
	if n := h.count("desired_lrps"); n != 1 {
		t.Errorf("%d desired LRPs after invalid requests, want 1", n)
	}
}

func TestDuplicatesAreResourceExists(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	create := obj{"process_guid": "dep", "domain": "d", "instances": 1, "definition_id": "v1", "definition": definition(nil)}
	h.ok("/v1/lrp_deployments/create", create)
	h.desire(lrp("desired", "d", 1, nil))
	for _, c := range []struct {
		name, path string
		body       obj
	}{
		{"desire twice", "/v1/desired_lrp/desire", obj{"desired_lrp": lrp("desired", "d", 3, nil)}},
		{"desire over a deployment", "/v1/desired_lrp/desire", obj{"desired_lrp": lrp("dep", "other", 1, nil)}},
		{"create twice", "/v1/lrp_deployments/create", create},
		{"create with another definition", "/v1/lrp_deployments/create",
			obj{"process_guid": "dep", "domain": "d", "instances": 2, "definition_id": "v2", "definition": definition(nil)}},
		{"create over a desired LRP", "/v1/lrp_deployments/create",
			obj{"process_guid": "desired", "domain": "d", "instances": 1, "definition_id": "v1", "definition": definition(nil)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, h.postJSON(c.path, c.body), http.StatusConflict, model.ErrResourceExists)
		})
	}
}

func TestNotReadyIsUnavailable(t *testing.T) {
	t.Parallel()
	h := newUnreadyHarness(t)
	for _, path := range allPostRoutes() {
		for _, body := range []string{"", "{", `{"process_guid": "p"}`} {
			t.Run(path+"/"+body, func(t *testing.T) {
				requireError(t, h.post(path, body), http.StatusServiceUnavailable, model.ErrUnavailable)
			})
		}
	}
	if rec := h.do(http.MethodGet, "/healthz", nil); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz before MarkReady: %d, want 503", rec.Code)
	}
	if n := h.count("desired_lrps"); n != 0 {
		t.Errorf("%d desired LRPs written before MarkReady", n)
	}

	h.server.MarkReady()
	if rec := h.do(http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("healthz after MarkReady: %d, want 200", rec.Code)
	}
	h.ok("/v1/ping", nil)
}

// A desire that fails validation or conflicts writes nothing: not the LRP, not its
// definition, not a single instance.
func TestFailedDesireWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	before := h.desire(lrp("existing", "d", 2, nil))
	counts := h.rowCounts()

	longRoutes := obj{"r": strings.Repeat("x", model.MaxRoutesBytes)}
	for _, c := range []struct {
		name string
		body string
		lrp  obj
	}{
		{name: "negative instances", lrp: lrp("new", "d", -1, nil)},
		{name: "too many instances", lrp: lrp("new", "d", model.MaxInstances+1, nil)},
		{name: "no action", lrp: lrp("new", "d", 3, obj{"action": nil})},
		{name: "invalid nested action", lrp: lrp("new", "d", 3, obj{"action": obj{"serial": obj{"actions": []obj{{"run": obj{}}}}}})},
		{name: "action of two kinds", lrp: lrp("new", "d", 3, obj{"action": obj{"run": obj{"path": "/a"}, "try": obj{"action": obj{"run": obj{"path": "/b"}}}}})},
		{name: "invalid definition_id", lrp: lrp("new", "d", 3, obj{"definition_id": "a/b"})},
		{name: "action nested too deep", lrp: lrp("new", "d", 3, obj{"action": nestedTry(40)})},
		{name: "no domain", lrp: lrp("new", "", 3, nil)},
		{name: "rootfs without scheme", lrp: lrp("new", "d", 3, obj{"rootfs": "busybox"})},
		{name: "negative memory", lrp: lrp("new", "d", 3, obj{"memory_mb": -1})},
		{name: "annotation over 10 KiB", lrp: lrp("new", "d", 3, obj{"annotation": strings.Repeat("a", model.MaxAnnotationBytes+1)})},
		{name: "routes over 128 KiB", lrp: lrp("new", "d", 3, obj{"routes": longRoutes})},
		{name: "duplicate", lrp: lrp("existing", "d", 5, obj{"definition_id": "other"})},
		{name: "wrong type", body: `{"desired_lrp": {"process_guid": "new", "domain": "d", "instances": "3"}}`},
		{name: "malformed", body: `{"desired_lrp": {"process_guid": "new"`},
		{name: "too large", body: `{"desired_lrp": {"process_guid": "new", "annotation": "` + strings.Repeat("a", model.MaxRequestBytes) + `"}}`},
		// Fails inside the transaction, after the desired_lrps row is written.
		{name: "definition the database refuses", lrp: lrp("new", "d", 3, obj{"env": []obj{{"name": "A", "value": "nul\x00byte"}}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec = func() int {
				if c.body != "" {
					return h.post("/v1/desired_lrp/desire", c.body).Code
				}
				return h.postJSON("/v1/desired_lrp/desire", obj{"desired_lrp": c.lrp}).Code
			}()
			if rec == http.StatusOK {
				t.Fatalf("desire succeeded, want an error")
			}
			if got := h.rowCounts(); !equalCounts(got, counts) {
				t.Errorf("rows after a failed desire = %v, want %v", got, counts)
			}
			after := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "existing"}).obj(t, "desired_lrp")
			if after.integer(t, "instances") != 2 || after.str(t, "definition_id") != "existing" ||
				after.obj(t, "modification_tag").integer(t, "index") != before.obj(t, "modification_tag").integer(t, "index") {
				t.Errorf("existing LRP changed: %v", after)
			}
			if n := len(h.actuals(obj{"process_guid": "new"})); n != 0 {
				t.Errorf("%d instances of the refused LRP", n)
			}
		})
	}
}

// nestedTry is a run action wrapped in depth try actions.
func nestedTry(depth int) obj {
	a := obj{"run": obj{"path": "/bin/true"}}
	for range depth {
		a = obj{"try": obj{"action": a}}
	}
	return a
}

// Racing desires of one process guid: exactly one wins, and the losers write nothing.
func TestConcurrentDesiresOfOneGUID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const n = 8
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = h.postJSON("/v1/desired_lrp/desire", obj{"desired_lrp": lrp("race", "d", i+1, obj{"definition_id": fmt.Sprintf("v%d", i)})}).Code
		}()
	}
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			if won >= 0 {
				t.Fatalf("desires %d and %d both succeeded", won, i)
			}
			won = i
		case http.StatusConflict:
		default:
			t.Errorf("desire %d: status %d, want 200 or 409", i, c)
		}
	}
	if won < 0 {
		t.Fatalf("no desire succeeded: %v", codes)
	}
	want := map[string]int{"desired_lrps": 1, "lrp_definitions": 1, "actual_lrps": won + 1}
	if got := h.rowCounts(); !equalCounts(got, want) {
		t.Errorf("rows = %v, want %v (desire %d won)", got, want, won)
	}
	for _, a := range h.actuals(obj{"process_guid": "race"}) {
		if a.str(t, "definition_id") != fmt.Sprintf("v%d", won) {
			t.Errorf("instance of definition %s, want v%d", a.str(t, "definition_id"), won)
		}
	}
}

// Racing scale changes serialise: whatever order they ran in, the instances end up exactly
// at indices 0..instances-1.
func TestConcurrentScalingConverges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("scale", "d", 5, nil))
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			instances := []int{0, 7, 2, 10, 1, 4}[i%6]
			if rec := h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "scale", "update": obj{"instances": instances}}); rec.Code != http.StatusOK {
				t.Errorf("update to %d: %d %s", instances, rec.Code, rec.Body)
			}
		}()
	}
	wg.Wait()
	scaled := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "scale"}).obj(t, "desired_lrp")
	n := scaled.integer(t, "instances")
	want := []int64{}
	for i := range n {
		want = append(want, i)
	}
	if got := indicesOf(t, h.actuals(obj{"process_guid": "scale"})); !reflect.DeepEqual(got, want) {
		t.Errorf("indices = %v, want 0..%d", got, n-1)
	}
	if idx := scaled.obj(t, "modification_tag").integer(t, "index"); idx != 12 {
		t.Errorf("modification_tag.index = %d after 12 updates", idx)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Text that PostgreSQL cannot store (a NUL character, written \u0000 in JSON) and numbers
// beyond its numeric range are bad input: they must answer 400, never 500.
func TestUnstorableValuesAreInvalidRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("exists", "d", 1, nil))
	base := `"process_guid": "p", "domain": "d", "instances": 1, "rootfs": "docker:///x", "action": {"run": {"path": "/bin/true"}}`
	for _, c := range []struct{ name, path, body string }{
		{"desire annotation", "/v1/desired_lrp/desire", `{"desired_lrp": {` + base + `, "annotation": "a\u0000b"}}`},
		{"desire domain", "/v1/desired_lrp/desire", `{"desired_lrp": {"process_guid": "p", "domain": "d\u0000", "instances": 1, "rootfs": "docker:///x", "action": {"run": {"path": "/bin/true"}}}}`},
		{"desire log_guid", "/v1/desired_lrp/desire", `{"desired_lrp": {` + base + `, "log_guid": "\u0000"}}`},
		{"desire placement tag", "/v1/desired_lrp/desire", `{"desired_lrp": {` + base + `, "placement_tags": ["\u0000"]}}`},
		{"desire env value", "/v1/desired_lrp/desire", `{"desired_lrp": {` + base + `, "env": [{"name": "A", "value": "\u0000"}]}}`},
		{"desire run arg", "/v1/desired_lrp/desire", `{"desired_lrp": {"process_guid": "p", "domain": "d", "instances": 1, "rootfs": "docker:///x", "action": {"run": {"path": "/bin/echo", "args": ["\u0000"]}}}}`},
		{"desire huge number", "/v1/desired_lrp/desire", `{"desired_lrp": {` + base + `, "egress_rules": [{"port": 1e1000000}]}}`},
		{"create annotation", "/v1/lrp_deployments/create", `{"process_guid": "p", "domain": "d", "instances": 1, "annotation": "\u0000", "definition_id": "v1", "definition": {"rootfs": "docker:///x", "action": {"run": {"path": "/bin/true"}}}}`},
		{"update annotation", "/v1/desired_lrp/update", `{"process_guid": "exists", "update": {"annotation": "\u0000"}}`},
		{"upsert domain", "/v1/domains/upsert", `{"domain": "d\u0000", "ttl": 0}`},
		{"list desired by domain", "/v1/desired_lrps/list", `{"domain": "\u0000"}`},
		{"list scheduling infos by domain", "/v1/desired_lrp_scheduling_infos/list", `{"domain": "\u0000"}`},
		{"list deployments by domain", "/v1/lrp_deployments/list", `{"domain": "\u0000"}`},
		{"list actuals by cell", "/v1/actual_lrps/list", `{"cell_id": "\u0000"}`},
		{"list groups by domain", "/v1/actual_lrp_groups/list", `{"domain": "\u0000"}`},
		{"retire with domain", "/v1/actual_lrps/retire", `{"actual_lrp_key": {"process_guid": "exists", "index": 0, "domain": "\u0000"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, h.post(c.path, c.body), http.StatusBadRequest, model.ErrInvalidRequest)
		})
	}
}
