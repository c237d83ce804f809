package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// Rollout group requests are validated at the edge and against the fleet; a refused one
// writes nothing and starts nothing. A created group is read back, listed, and steered.
func TestRolloutGroupRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 3 {
		h.desire(lrp(fmt.Sprintf("app-%d", i), "cf-apps", 1, nil))
	}
	groupRows := func() []int {
		return []int{h.count("rollout_groups"), h.count("rollout_group_members"), h.count("rollouts"), h.count("lrp_definitions")}
	}
	before := groupRows()
	valid := func() obj {
		return obj{"group_id": "stack", "selector": obj{"domain": "cf-apps"}, "patch": obj{"rootfs": "preloaded:cflinuxfs4-v2"},
			"waves": []obj{{"percent": 50}, {"percent": 100}}, "max_concurrent_lrps": 2}
	}
	with := func(k string, v any) obj { o := valid(); o[k] = v; return o }
	for name, body := range map[string]obj{
		"bad id":             with("group_id", "a b"),
		"no selector":        with("selector", obj{}),
		"empty selection":    with("selector", obj{"domain": "other"}),
		"unknown guid":       with("selector", obj{"process_guids": []string{"app-0", "nope"}}),
		"empty patch":        with("patch", obj{}),
		"misspelt patch":     with("patch", obj{"rootf": "preloaded:x"}),
		"patch changes none": with("patch", obj{"rootfs": "docker:///busybox"}),
		"bad rootfs":         with("patch", obj{"rootfs": "no-scheme"}),
		"falling waves":      with("waves", []obj{{"percent": 60}, {"percent": 50}}),
		"waves short of 100": with("waves", []obj{{"percent": 60}}),
		"negative budget":    with("max_concurrent_lrps", -1),
		"failed over 100":    with("max_failed_percent", 101),
		"unknown window":     with("window", "maintenance"),
		"member window":      with("strategy", obj{"window": "maintenance"}),
		"bad strategy":       with("strategy", obj{"max_in_fligth": 2}),
		"string budget":      with("max_concurrent_per_cell", "4"),
	} {
		t.Run(name, func(t *testing.T) {
			requireError(t, h.postJSON("/v1/rollout_groups/create", body), http.StatusBadRequest, model.ErrInvalidRequest)
		})
	}
	if after := groupRows(); !reflect.DeepEqual(after, before) {
		t.Fatalf("refused groups changed rows: %v → %v", before, after)
	}
	if calls := h.groups.Calls(); len(calls) != 0 {
		t.Fatalf("workflow calls for refused groups: %v", calls)
	}

	g := h.ok("/v1/rollout_groups/create", valid()).obj(t, "rollout_group")
	if g["state"] != model.GroupPending || len(g["waves"].([]any)) != 2 {
		t.Fatalf("created: %v", g)
	}
	if calls := h.groups.Calls(); !reflect.DeepEqual(calls, []string{"start:stack"}) {
		t.Fatalf("workflow calls: %v", calls)
	}
	requireError(t, h.postJSON("/v1/rollout_groups/create", valid()), http.StatusConflict, model.ErrResourceExists)
	got := h.ok("/v1/rollout_groups/get", obj{"group_id": "stack"}).obj(t, "rollout_group")
	if members := got["waves"].([]any)[0].(map[string]any)["members"].([]any); len(members) != 2 {
		t.Fatalf("wave 1's members: %v", members)
	}
	list := h.ok("/v1/rollout_groups/list", obj{})["rollout_groups"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["waves"].([]any)[0].(map[string]any)["members"] != nil {
		t.Fatalf("list (without members): %v", list)
	}
	requireError(t, h.postJSON("/v1/rollout_groups/get", obj{"group_id": "none"}), http.StatusNotFound, model.ErrResourceNotFound)
	if s := h.ok("/v1/rollout_groups/pause", obj{"group_id": "stack"}).obj(t, "rollout_group")["state"]; s != model.GroupPaused {
		t.Fatalf("paused: %v", s)
	}
	h.ok("/v1/rollout_groups/pause", obj{"group_id": "stack"}) // repeated: 200
	if s := h.ok("/v1/rollout_groups/abort", obj{"group_id": "stack", "reason": "bad stack"}).obj(t, "rollout_group")["state"]; s != model.GroupAborted {
		t.Fatalf("aborted: %v", s)
	}
	requireError(t, h.postJSON("/v1/rollout_groups/resume", obj{"group_id": "stack"}), http.StatusConflict, model.ErrInvalidPhase)
	if calls := h.groups.Calls(); len(calls) != 4 || calls[3] != "wake:stack" {
		t.Fatalf("workflow calls: %v", calls)
	}
}
