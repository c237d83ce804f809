package api_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

func span(extra obj) obj {
	s := obj{"days": []string{"mon", "tue"}, "start": "09:00", "end": "17:00", "time_zone": "Europe/Berlin"}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// Every malformed window is refused with InvalidRequest, and none is written.
func TestRolloutWindowValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, body := range map[string]any{
		"empty name":      obj{"name": "", "schedule": []obj{span(nil)}},
		"no name":         obj{"schedule": []obj{span(nil)}},
		"bad name":        obj{"name": "a/b", "schedule": []obj{span(nil)}},
		"empty schedule":  obj{"name": "w", "schedule": []obj{}},
		"no schedule":     obj{"name": "w"},
		"unknown day":     obj{"name": "w", "schedule": []obj{span(obj{"days": []string{"mon", "funday"}})}},
		"no days":         obj{"name": "w", "schedule": []obj{span(obj{"days": []string{}})}},
		"bad start":       obj{"name": "w", "schedule": []obj{span(obj{"start": "9:00"})}},
		"hour 24":         obj{"name": "w", "schedule": []obj{span(obj{"end": "24:00"})}},
		"end is start":    obj{"name": "w", "schedule": []obj{span(obj{"end": "09:00"})}},
		"unknown zone":    obj{"name": "w", "schedule": []obj{span(obj{"time_zone": "Europe/Atlantis"})}},
		"no zone":         obj{"name": "w", "schedule": []obj{span(obj{"time_zone": ""})}},
		"unknown field":   obj{"name": "w", "schedule": []obj{span(obj{"timezone": "UTC"})}},
		"top-level extra": obj{"name": "w", "schedule": []obj{span(nil)}, "enabled": true},
		"days a string":   obj{"name": "w", "schedule": []obj{span(obj{"days": "mon"})}},
		"not an object":   []int{1},
	} {
		t.Run(name, func(t *testing.T) {
			requireError(t, h.postJSON("/v1/rollout_windows/upsert", body), http.StatusBadRequest, model.ErrInvalidRequest)
		})
	}
	if n := h.count("rollout_windows"); n != 0 {
		t.Fatalf("%d windows written by refused requests", n)
	}
	for _, path := range []string{"/v1/rollout_windows/get", "/v1/rollout_windows/delete"} {
		requireError(t, h.postJSON(path, obj{"name": ""}), http.StatusBadRequest, model.ErrInvalidRequest)
		requireError(t, h.postJSON(path, obj{"name": "none"}), http.StatusNotFound, model.ErrResourceNotFound)
	}
}

// Upsert creates and then replaces; get, list and delete see it.
func TestRolloutWindowLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first := h.ok("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": []obj{span(nil)}})
	if first["created"] != true || first.obj(t, "rollout_window").str(t, "name") != "maintenance" {
		t.Fatalf("first upsert: %v", first)
	}
	night := span(obj{"days": []string{"sat"}, "start": "22:00", "end": "02:00", "time_zone": "UTC"})
	second := h.ok("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": []obj{night}})
	if _, ok := second["created"]; ok {
		t.Fatalf("a replacement says created: %v", second)
	}
	got := h.ok("/v1/rollout_windows/get", obj{"name": "maintenance"}).obj(t, "rollout_window")
	if s := got.list(t, "schedule"); len(s) != 1 || s[0].str(t, "start") != "22:00" || s[0].str(t, "end") != "02:00" {
		t.Fatalf("schedule after the replacement: %v", got)
	}
	h.ok("/v1/rollout_windows/upsert", obj{"name": "a-first", "schedule": []obj{span(nil)}})
	list := h.ok("/v1/rollout_windows/list", obj{}).list(t, "rollout_windows")
	if len(list) != 2 || list[0].str(t, "name") != "a-first" || list[1].str(t, "name") != "maintenance" {
		t.Fatalf("list: %v", list)
	}
	h.ok("/v1/rollout_windows/delete", obj{"name": "a-first"})
	requireError(t, h.postJSON("/v1/rollout_windows/get", obj{"name": "a-first"}), http.StatusNotFound, model.ErrResourceNotFound)
}

// A strategy naming a window that does not exist is refused wherever it is given; one
// that exists is taken, and the window cannot be deleted while the rollout (or the LRP's
// default) names it.
func TestStrategyWindowMustExist(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 2, nil))
	before := h.rowCounts()
	update := func(def, window string) obj {
		return obj{"process_guid": "web", "update": obj{"definition": definition(obj{"definition_id": def}), "strategy": obj{"window": window}}}
	}
	rec := h.postJSON("/v1/desired_lrp/update", update("v2", "maintenance"))
	requireError(t, rec, http.StatusBadRequest, model.ErrInvalidRequest)
	if msg := errorMessage(t, rec); !strings.Contains(msg, `"maintenance"`) {
		t.Fatalf("message %q does not name the window", msg)
	}
	requireError(t, h.postJSON("/v1/desired_lrp/desire", obj{"desired_lrp": lrp("other", "d", 1, obj{"rollout_strategy": obj{"window": "maintenance"}})}),
		http.StatusBadRequest, model.ErrInvalidRequest)
	if after := h.rowCounts(); !reflect.DeepEqual(after, before) || h.count("rollouts") != 0 {
		t.Fatalf("rows changed by refused requests: %v → %v", before, after)
	}

	h.ok("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": []obj{span(nil)}})
	h.ok("/v1/desired_lrp/update", update("v2", "maintenance"))
	ro := h.ok("/v1/rollouts/get", obj{"process_guid": "web"}).obj(t, "rollout")
	if w := ro.obj(t, "strategy").str(t, "window"); w != "maintenance" {
		t.Fatalf("the rollout's strategy.window is %q", w)
	}
	rec = h.postJSON("/v1/rollout_windows/delete", obj{"name": "maintenance"})
	requireError(t, rec, http.StatusConflict, model.ErrResourceConflict)
	if msg := errorMessage(t, rec); !strings.Contains(msg, "the rollout of web") {
		t.Fatalf("message %q does not name the rollout", msg)
	}
	// An upsert tells the rollouts under way that name the window.
	h.ok("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": []obj{span(obj{"end": "18:00"})}})
	if calls := h.rollouts.Calls(); !slices.Contains(calls, "window:web:") {
		t.Fatalf("workflow calls %v: the rollout was not told of the upsert", calls)
	}
}

// While frozen, no rollout starts (409 Frozen, nothing written), break_glass passes and is
// recorded, the rollouts under way are told, and an unfreeze lets rollouts start again.
func TestFreezeRefusesStartsUntilUnfrozen(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 2, nil))
	h.desire(lrp("api", "d", 2, nil))
	update := func(guid, def string, strategy obj) obj {
		u := obj{"definition": definition(obj{"definition_id": def})}
		if strategy != nil {
			u["strategy"] = strategy
		}
		return obj{"process_guid": guid, "update": u}
	}
	h.ok("/v1/desired_lrp/update", update("api", "v2", nil)) // under way when the freeze comes

	requireError(t, h.postJSON("/v1/rollouts/freeze", obj{}), http.StatusBadRequest, model.ErrInvalidRequest)
	requireError(t, h.postJSON("/v1/rollouts/freeze", obj{"reason": strings.Repeat("x", model.MaxFreezeReason+1)}), http.StatusBadRequest, model.ErrInvalidRequest)
	f := h.ok("/v1/rollouts/freeze", obj{"reason": "incident 42"})
	if fr := f.obj(t, "freeze"); fr["frozen"] != true || fr.str(t, "reason") != "incident 42" || f.integer(t, "told") != 1 {
		t.Fatalf("freeze answered %v", f)
	}
	if calls := h.rollouts.Calls(); !slices.Contains(calls, "freeze:api:true") {
		t.Fatalf("workflow calls %v: the rollout under way was not told", calls)
	}
	for _, path := range []string{"/v1/rollouts/get_freeze"} {
		if fr := h.ok(path, obj{}).obj(t, "freeze"); fr["frozen"] != true {
			t.Fatalf("%s: %v", path, fr)
		}
	}
	if rec := h.do(http.MethodGet, "/v1/rollouts/freeze", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"frozen":true`) {
		t.Fatalf("GET /v1/rollouts/freeze: %d %s", rec.Code, rec.Body)
	}

	before, rollouts, calls := h.rowCounts(), h.count("rollouts"), len(h.rollouts.Calls())
	for name, req := range map[string]struct {
		path string
		body obj
	}{
		"update":   {"/v1/desired_lrp/update", update("web", "v2", nil)},
		"rollback": {"/v1/desired_lrp/rollback", obj{"process_guid": "api", "definition_id": "api"}},
	} {
		rec := h.postJSON(req.path, req.body)
		requireError(t, rec, http.StatusConflict, model.ErrFrozen)
		if msg := errorMessage(t, rec); !strings.Contains(msg, "incident 42") {
			t.Fatalf("%s: message %q does not say why", name, msg)
		}
	}
	if after := h.rowCounts(); !reflect.DeepEqual(after, before) || h.count("rollouts") != rollouts || len(h.rollouts.Calls()) != calls {
		t.Fatalf("a refused start wrote or started something: %v → %v", before, after)
	}

	h.ok("/v1/desired_lrp/update", update("web", "v2", obj{"break_glass": "CVE-2026-1234 hotfix"}))
	ro := h.ok("/v1/rollouts/get", obj{"process_guid": "web"}).obj(t, "rollout")
	if bg := ro.obj(t, "strategy").str(t, "break_glass"); bg != "CVE-2026-1234 hotfix" {
		t.Fatalf("break_glass recorded as %q", bg)
	}

	u := h.ok("/v1/rollouts/unfreeze", obj{})
	if fr := u.obj(t, "freeze"); fr["frozen"] == true || fr.integer(t, "generation") != 2 {
		t.Fatalf("unfreeze answered %v", u)
	}
	h.desire(lrp("late", "d", 1, nil))
	h.ok("/v1/desired_lrp/update", update("late", "v2", nil))
}
