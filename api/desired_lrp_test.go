package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// Field names of API.md's models.
var (
	definitionFields = []string{"definition_id", "rootfs", "env", "setup", "action", "monitor",
		"check_definition", "start_timeout_ms", "memory_mb", "disk_mb", "cpu_weight", "privileged",
		"ports", "log_source", "log_guid", "metrics_guid", "egress_rules", "cached_dependencies",
		"volume_mounts", "network", "placement_tags",
		// BBS's, beside API.md's (where this page is silent, follow BBS).
		"max_pids"}
	desiredLRPRequired = []string{"process_guid", "domain", "instances", "modification_tag",
		"definition_id", "rootfs", "action", "memory_mb", "disk_mb"}
	// metric_tags is BBS's (API.md: where this page is silent, follow BBS).
	desiredLRPAllowed = append([]string{"routes", "annotation", "previous_definition_id", "metric_tags"}, definitionFields...)
	actualLRPRequired = []string{"process_guid", "definition_id", "index", "domain", "state", "since",
		"crash_count", "presence", "modification_tag"}
	actualLRPAllowed = []string{"instance_guid", "cell_id", "address", "ports", "instance_address",
		"placement_error", "crash_reason"}
	schedulingInfoRequired = []string{"process_guid", "domain", "instances", "modification_tag",
		"definition_id", "rootfs", "memory_mb", "disk_mb"}
	schedulingInfoAllowed = []string{"log_guid", "routes", "annotation", "previous_definition_id",
		"healthy_definition_id", "placement_tags", "max_pids", "volume_drivers"}
)

// fullLRP is a DesiredLRP with every definition field of API.md set.
func fullLRP(guid, domain string, instances int) obj {
	return lrp(guid, domain, instances, obj{
		"routes": obj{
			"cf-router":  []obj{{"hostnames": []string{guid + ".example.com"}, "port": 8080}},
			"tcp-router": []obj{{"external_port": 61000, "container_port": 8080}},
		},
		"annotation": "etag-1",
		"env":        []obj{{"name": "PORT", "value": "8080"}, {"name": "EMPTY", "value": ""}},
		"setup": obj{"serial": obj{"actions": []obj{
			{"download": obj{"from": "http://blobs/droplet.tgz", "to": "/home/vcap", "cache_key": "droplet"}},
		}}},
		"action": obj{"codependent": obj{"actions": []obj{
			{"run": obj{"path": "/bin/sh", "args": []string{"-c", "exec ./server"}, "dir": "/home/vcap",
				"env": []obj{{"name": "A", "value": "b"}}}},
			{"try": obj{"action": obj{"run": obj{"path": "/bin/sidecar"}}}},
		}}},
		"monitor":             obj{"timeout": obj{"action": obj{"run": obj{"path": "/bin/healthcheck"}}, "timeout_ms": 30000}},
		"check_definition":    obj{"checks": []obj{{"tcp_check": obj{"port": 8080}}, {"http_check": obj{"port": 8080, "path": "/health"}}}},
		"start_timeout_ms":    60000,
		"cpu_weight":          50,
		"privileged":          true,
		"ports":               []int{8080, 2222},
		"log_source":          "APP",
		"metrics_guid":        guid + "-metrics",
		"egress_rules":        []obj{{"protocol": "tcp", "destinations": []string{"10.0.0.0/8"}}},
		"cached_dependencies": []obj{{"from": "http://blobs/buildpack", "to": "/tmp/bp"}},
		"volume_mounts":       []obj{{"driver": "nfs", "container_dir": "/data"}},
		"network":             obj{"properties": obj{"policy_group_id": "pg"}},
		"placement_tags":      []string{"zone-a"},
	})
}

// roundTrip is what a JSON value looks like once decoded like a response.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any(decodeObject(t, []byte(`{"v":`+string(b)+`}`)))["v"]
}

func TestDesireCreatesUnclaimedInstances(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	start := time.Now()
	in := fullLRP("web", "cf-apps", 3)
	got := h.desire(in)

	requireKeys(t, "desired_lrp", got, desiredLRPRequired, desiredLRPAllowed)
	if id := got.str(t, "definition_id"); id != "web" {
		t.Errorf("definition_id = %q, want the process guid (promotion)", id)
	}
	if _, ok := got["previous_definition_id"]; ok {
		t.Errorf("previous_definition_id set without a rollout: %v", got["previous_definition_id"])
	}
	tag := got.obj(t, "modification_tag")
	requireKeys(t, "modification_tag", tag, []string{"epoch", "index"}, nil)
	if tag.str(t, "epoch") == "" || tag.integer(t, "index") != 0 {
		t.Errorf("modification_tag = %v, want a fresh epoch and index 0", tag)
	}
	// Every field is returned as given.
	for k, v := range in {
		if !reflect.DeepEqual(got[k], roundTrip(t, v)) {
			t.Errorf("%s = %v, want %v", k, got[k], roundTrip(t, v))
		}
	}
	// And stored as given.
	stored := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "desired_lrp")
	if !reflect.DeepEqual(stored, got) {
		t.Errorf("get_by_process_guid = %v\nwant the desire response %v", stored, got)
	}

	actuals := h.actuals(obj{"process_guid": "web"})
	if len(actuals) != 3 {
		t.Fatalf("%d instances, want 3: %v", len(actuals), actuals)
	}
	for i, a := range actuals {
		requireKeys(t, "actual_lrp", a, actualLRPRequired, actualLRPAllowed)
		if a.integer(t, "index") != int64(i) || a.str(t, "state") != model.StateUnclaimed ||
			a.str(t, "presence") != model.PresenceOrdinary || a.str(t, "definition_id") != "web" ||
			a.str(t, "process_guid") != "web" || a.str(t, "domain") != "cf-apps" || a.integer(t, "crash_count") != 0 {
			t.Errorf("instance %d = %v", i, a)
		}
		for _, k := range []string{"cell_id", "instance_guid", "address"} {
			if _, ok := a[k]; ok {
				t.Errorf("UNCLAIMED instance %d has %s", i, k)
			}
		}
		since := time.Unix(0, a.integer(t, "since"))
		if since.Before(start.Add(-time.Minute)) || since.After(time.Now().Add(time.Minute)) {
			t.Errorf("instance %d since = %v (Unix nanoseconds?), want about %v", i, since, start)
		}
		if tag := a.obj(t, "modification_tag"); tag.str(t, "epoch") == "" {
			t.Errorf("instance %d has no modification epoch", i)
		}
	}
}

func TestDesireVariants(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Run("explicit definition_id", func(t *testing.T) {
		got := h.desire(lrp("explicit", "d", 2, obj{"definition_id": "v1"}))
		if got.str(t, "definition_id") != "v1" {
			t.Errorf("definition_id = %q, want v1", got.str(t, "definition_id"))
		}
		for _, a := range h.actuals(obj{"process_guid": "explicit"}) {
			if a.str(t, "definition_id") != "v1" {
				t.Errorf("instance of definition %q, want v1", a.str(t, "definition_id"))
			}
		}
	})
	t.Run("zero instances", func(t *testing.T) {
		h.desire(lrp("none", "d", 0, nil))
		if n := len(h.actuals(obj{"process_guid": "none"})); n != 0 {
			t.Errorf("%d instances, want 0", n)
		}
	})
	t.Run("255-character guid", func(t *testing.T) {
		guid := strings.Repeat("g", 255)
		h.desire(lrp(guid, "d", 1, nil))
		h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": guid})
	})
	t.Run("client modification tag and previous definition are ignored", func(t *testing.T) {
		got := h.desire(lrp("tagged", "d", 1, obj{
			"modification_tag": obj{"epoch": "mine", "index": 7}, "previous_definition_id": "old",
		}))
		if tag := got.obj(t, "modification_tag"); tag.str(t, "epoch") == "mine" || tag.integer(t, "index") != 0 {
			t.Errorf("modification_tag = %v, want one the store assigned", tag)
		}
		if _, ok := got["previous_definition_id"]; ok {
			t.Errorf("previous_definition_id = %v, want none", got["previous_definition_id"])
		}
	})
}

func TestListDesiredLRPsAndSchedulingInfos(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(fullLRP("b", "x", 1))
	h.desire(fullLRP("a", "x", 2))
	h.desire(fullLRP("c", "y", 3))

	for _, c := range []struct {
		name   string
		filter obj
		want   []string
	}{
		{"all", obj{}, []string{"a", "b", "c"}},
		{"by domain", obj{"domain": "x"}, []string{"a", "b"}},
		{"by guids", obj{"process_guids": []string{"c", "a", "missing"}}, []string{"a", "c"}},
		{"by domain and guids", obj{"domain": "x", "process_guids": []string{"a", "c"}}, []string{"a"}},
		{"empty guid list", obj{"process_guids": []string{}}, []string{"a", "b", "c"}},
		{"unknown domain", obj{"domain": "z"}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lrps := h.ok("/v1/desired_lrps/list", c.filter).list(t, "desired_lrps")
			if got := guidsOf(t, lrps); !reflect.DeepEqual(got, c.want) {
				t.Errorf("desired_lrps = %v, want %v", got, c.want)
			}
			for _, l := range lrps {
				requireKeys(t, "desired_lrp", l, desiredLRPRequired, desiredLRPAllowed)
				if _, ok := l["env"]; !ok {
					t.Errorf("desired_lrps/list lost the run info of %s", l.str(t, "process_guid"))
				}
			}
			infos := h.ok("/v1/desired_lrp_scheduling_infos/list", c.filter).list(t, "desired_lrp_scheduling_infos")
			if got := guidsOf(t, infos); !reflect.DeepEqual(got, c.want) {
				t.Errorf("desired_lrp_scheduling_infos = %v, want %v", got, c.want)
			}
			for _, info := range infos {
				requireKeys(t, "scheduling info", info, schedulingInfoRequired, schedulingInfoAllowed)
				for _, k := range []string{"action", "setup", "monitor", "env"} {
					if _, ok := info[k]; ok {
						t.Errorf("scheduling info has run info %q", k)
					}
				}
			}
		})
	}

	info := h.ok("/v1/desired_lrp_scheduling_infos/list", obj{"process_guids": []string{"c"}}).list(t, "desired_lrp_scheduling_infos")[0]
	want := obj{
		"process_guid": "c", "domain": "y", "instances": json.Number("3"), "definition_id": "c",
		"rootfs": "docker:///busybox", "memory_mb": json.Number("128"), "disk_mb": json.Number("256"),
		"log_guid": "c-logs", "annotation": "etag-1", "placement_tags": []any{"zone-a"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(info[k], v) {
			t.Errorf("scheduling info %s = %v, want %v", k, info[k], v)
		}
	}
	if info.obj(t, "routes")["cf-router"] == nil {
		t.Errorf("scheduling info routes = %v", info["routes"])
	}
}

func guidsOf(t *testing.T, l []obj) []string {
	t.Helper()
	out := []string{}
	for _, o := range l {
		out = append(out, o.str(t, "process_guid"))
	}
	return out
}

func indicesOf(t *testing.T, l []obj) []int64 {
	t.Helper()
	out := []int64{}
	for _, o := range l {
		out = append(out, o.integer(t, "index"))
	}
	return out
}

func TestUpdateDesiredLRP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	created := h.desire(lrp("web", "d", 2, obj{"routes": obj{"cf-router": []obj{{"hostnames": []string{"old.example.com"}}}}}))
	epoch := created.obj(t, "modification_tag").str(t, "epoch")
	step := int64(0)
	update := func(t *testing.T, u obj) obj {
		t.Helper()
		got := h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": u}).obj(t, "desired_lrp")
		step++
		tag := got.obj(t, "modification_tag")
		if tag.str(t, "epoch") != epoch || tag.integer(t, "index") != step {
			t.Errorf("modification_tag = %v, want epoch %s index %d", tag, epoch, step)
		}
		stored := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "desired_lrp")
		if !reflect.DeepEqual(stored, got) {
			t.Errorf("stored %v\nwant the update response %v", stored, got)
		}
		return got
	}

	t.Run("scale up", func(t *testing.T) {
		got := update(t, obj{"instances": 5})
		if got.integer(t, "instances") != 5 {
			t.Errorf("instances = %d, want 5", got.integer(t, "instances"))
		}
		actuals := h.actuals(obj{"process_guid": "web"})
		if got := indicesOf(t, actuals); !reflect.DeepEqual(got, []int64{0, 1, 2, 3, 4}) {
			t.Errorf("indices = %v, want 0..4", got)
		}
		for _, a := range actuals {
			if a.str(t, "state") != model.StateUnclaimed || a.str(t, "definition_id") != "web" {
				t.Errorf("instance %v", a)
			}
		}
	})
	t.Run("scale down", func(t *testing.T) {
		got := update(t, obj{"instances": 2})
		if got.integer(t, "instances") != 2 {
			t.Errorf("instances = %d, want 2", got.integer(t, "instances"))
		}
		if got := indicesOf(t, h.actuals(obj{"process_guid": "web"})); !reflect.DeepEqual(got, []int64{0, 1}) {
			t.Errorf("indices = %v, want 0, 1", got)
		}
		if s := h.stopper.Stopped(); len(s) != 0 {
			t.Errorf("stopped %v, want nothing (all were UNCLAIMED)", s)
		}
	})
	t.Run("routes", func(t *testing.T) {
		routes := obj{"cf-router": []obj{{"hostnames": []string{"new.example.com"}, "port": 8080}}, "other": obj{"k": "v"}}
		got := update(t, obj{"routes": routes})
		if !reflect.DeepEqual(got["routes"], roundTrip(t, routes)) {
			t.Errorf("routes = %v, want %v", got["routes"], routes)
		}
		if got.integer(t, "instances") != 2 {
			t.Errorf("a routes update changed instances to %d", got.integer(t, "instances"))
		}
	})
	t.Run("annotation", func(t *testing.T) {
		got := update(t, obj{"annotation": "etag-2"})
		if got.str(t, "annotation") != "etag-2" {
			t.Errorf("annotation = %q", got.str(t, "annotation"))
		}
		if got.obj(t, "routes")["other"] == nil {
			t.Errorf("an annotation update changed the routes: %v", got["routes"])
		}
	})
	t.Run("scale down stops running instances", func(t *testing.T) {
		update(t, obj{"instances": 3})
		h.makeRunning("web", "web", 2, "cell-1")
		update(t, obj{"instances": 1})
		stopped := h.stopper.Stopped()
		if len(stopped) != 1 || stopped[0].Index != 2 || stopped[0].CellID != "cell-1" || stopped[0].State != model.StateRunning {
			t.Fatalf("stopped %+v, want web/2 on cell-1", stopped)
		}
		// The record stays until its cell reports the stop.
		if got := indicesOf(t, h.actuals(obj{"process_guid": "web"})); !reflect.DeepEqual(got, []int64{0, 2}) {
			t.Errorf("indices = %v, want 0 and the running 2", got)
		}
	})
	t.Run("invalid updates change nothing", func(t *testing.T) {
		before := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "desired_lrp")
		for _, u := range []obj{
			{"instances": -1},
			{"instances": model.MaxInstances + 1},
			{"annotation": strings.Repeat("a", model.MaxAnnotationBytes+1)},
			{"routes": obj{"": obj{}}},
			{"routes": obj{"r": strings.Repeat("x", model.MaxRoutesBytes)}},
		} {
			requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "web", "update": u}),
				http.StatusBadRequest, model.ErrInvalidRequest)
		}
		requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "web"}), http.StatusBadRequest, model.ErrInvalidRequest)
		after := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "desired_lrp")
		if !reflect.DeepEqual(before, after) {
			t.Errorf("invalid updates changed the LRP: %v -> %v", before, after)
		}
	})
}

func TestDefinitionChangesStartRollouts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 1, nil))
	v2 := definition(obj{"definition_id": "v2"})

	t.Run("invalid definitions are refused first", func(t *testing.T) {
		for name, def := range map[string]obj{
			"no definition_id":   definition(nil),
			"bad definition_id":  definition(obj{"definition_id": "v 2"}),
			"no action":          definition(obj{"definition_id": "v2", "action": nil}),
			"no rootfs":          definition(obj{"definition_id": "v2", "rootfs": nil}),
			"bad port":           definition(obj{"definition_id": "v2", "ports": []int{70000}}),
			"bad check":          definition(obj{"definition_id": "v2", "check_definition": obj{"checks": []obj{{}}}}),
			"network not object": definition(obj{"definition_id": "v2", "network": []int{1}}),
		} {
			t.Run(name, func(t *testing.T) {
				for _, guid := range []string{"web", "nope"} {
					requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": guid, "update": obj{"definition": def}}),
						http.StatusBadRequest, model.ErrInvalidRequest)
				}
			})
		}
		for name, u := range map[string]obj{
			"definition_id alone":   {"definition_id": "v2"},
			"definition alone":      {"definition": v2},
			"ids differ":            {"definition_id": "v3", "definition": v2},
			"invalid definition_id": {"definition_id": "v/2", "definition": definition(nil)},
			"invalid definition":    {"definition_id": "v2", "definition": definition(obj{"action": nil})},
		} {
			t.Run("lrp_deployments "+name, func(t *testing.T) {
				requireError(t, h.postJSON("/v1/lrp_deployments/update", obj{"process_guid": "web", "update": u}),
					http.StatusBadRequest, model.ErrInvalidRequest)
			})
		}
		if calls := h.rollouts.Calls(); len(calls) != 0 {
			t.Fatalf("workflow calls for invalid requests: %v", calls)
		}
	})

	t.Run("nothing to cancel", func(t *testing.T) {
		requireError(t, h.postJSON("/v1/desired_lrp/cancel_update", obj{"process_guid": "web"}),
			http.StatusConflict, model.ErrNoUpdateInProgress)
		requireError(t, h.postJSON("/v1/desired_lrp/rollback", obj{"process_guid": "web", "definition_id": "never"}),
			http.StatusNotFound, model.ErrResourceNotFound)
		requireError(t, h.postJSON("/v1/lrp_deployments/activate", obj{"process_guid": "web", "definition_id": "never"}),
			http.StatusNotFound, model.ErrResourceNotFound)
	})

	t.Run("update, update in progress, supersede, cancel", func(t *testing.T) {
		got := h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": v2, "annotation": "rolled"}}).obj(t, "desired_lrp")
		if got["definition_id"] != "v2" || got["previous_definition_id"] != "web" || got["annotation"] != "rolled" {
			t.Fatalf("during the update: %v", got)
		}
		requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": definition(obj{"definition_id": "v3"})}}),
			http.StatusConflict, model.ErrUpdateInProgress)
		requireError(t, h.postJSON("/v1/desired_lrp/rollback", obj{"process_guid": "web", "definition_id": "web"}),
			http.StatusConflict, model.ErrUpdateInProgress)
		requireError(t, h.postJSON("/v1/lrp_deployments/update", obj{"process_guid": "web", "update": obj{"definition_id": "v2", "definition": v2}}),
			http.StatusConflict, model.ErrResourceExists)
		h.ok("/v1/lrp_deployments/update", obj{"process_guid": "web", "update": obj{"definition_id": "v3", "definition": definition(nil)}})
		h.ok("/v1/desired_lrp/cancel_update", obj{"process_guid": "web"})
		want := []string{"start:web:v2", "supersede:web:v3", "cancel:web:v3"}
		if calls := h.rollouts.Calls(); !reflect.DeepEqual(calls, want) {
			t.Fatalf("workflow calls = %v, want %v", calls, want)
		}
		rollouts := h.ok("/v1/rollouts/list", obj{"process_guid": "web"}).list(t, "rollouts")
		if len(rollouts) != 2 || rollouts[0]["state"] != "active" || rollouts[1]["state"] != "superseded" {
			t.Fatalf("rollouts = %v", rollouts)
		}
	})
}

func TestRemoveDesiredLRP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 3, nil))
	h.desire(lrp("other", "d", 1, nil))
	h.makeRunning("web", "web", 1, "cell-1")
	h.exec(`INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'web', 'update', 'web', 'v2', 'active', 3, 'wf-web')`)

	rec := h.postJSON("/v1/desired_lrp/remove", obj{"process_guid": "web"})
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "{}" {
		t.Fatalf("remove: %d %s, want 200 {}", rec.Code, rec.Body)
	}
	requireError(t, h.postJSON("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}), http.StatusNotFound, model.ErrResourceNotFound)
	var defs int
	if err := h.store.DB().Get(&defs, `SELECT count(*) FROM lrp_definitions WHERE process_guid = 'web'`); err != nil {
		t.Fatal(err)
	}
	if defs != 0 {
		t.Errorf("%d definitions left", defs)
	}
	// The UNCLAIMED instances are gone; the RUNNING one waits for its cell, which was asked to stop it.
	left := h.actuals(obj{"process_guid": "web"})
	if len(left) != 1 || left[0].integer(t, "index") != 1 || left[0].str(t, "state") != model.StateRunning {
		t.Errorf("instances left = %v, want only the running index 1", left)
	}
	stopped := h.stopper.Stopped()
	if len(stopped) != 1 || stopped[0].ProcessGUID != "web" || stopped[0].Index != 1 || stopped[0].CellID != "cell-1" ||
		stopped[0].InstanceGUID == "" {
		t.Errorf("stopped %+v, want web/1 on cell-1", stopped)
	}
	if r := h.ok("/v1/rollouts/get", obj{"process_guid": "web"}).obj(t, "rollout"); r.str(t, "state") != model.RolloutFailed {
		t.Errorf("rollout of the removed LRP is %q, want failed", r.str(t, "state"))
	}
	// Other LRPs are untouched.
	if n := len(h.actuals(obj{"process_guid": "other"})); n != 1 {
		t.Errorf("other has %d instances, want 1", n)
	}
	h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "other"})

	requireError(t, h.postJSON("/v1/desired_lrp/remove", obj{"process_guid": "web"}), http.StatusNotFound, model.ErrResourceNotFound)
}

// The cells are told about stops on a best-effort basis: the request succeeds whether or not
// they can be reached, and with no cell client at all.
func TestStopFailuresDoNotFailRequests(t *testing.T) {
	t.Parallel()
	t.Run("stopper error", func(t *testing.T) {
		h := newHarness(t)
		h.stopper.Err = errCellsUnreachable
		h.desire(lrp("web", "d", 2, nil))
		h.makeRunning("web", "web", 0, "cell-1")
		h.makeRunning("web", "web", 1, "cell-1")
		h.ok("/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "web", "index": 0, "domain": "d"}})
		h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"instances": 1}})
		h.ok("/v1/desired_lrp/remove", obj{"process_guid": "web"})
		if n := len(h.stopper.Calls()); n != 3 {
			t.Errorf("%d stop calls, want 3", n)
		}
	})
	t.Run("no stopper", func(t *testing.T) {
		store := dbtest.NewStore(t)
		s := api.NewServer(deps(store, nil, nil, zap.NewNop()))
		s.MarkReady()
		h := &harness{t: t, store: store, server: s}
		h.desire(lrp("web", "d", 2, nil))
		h.makeRunning("web", "web", 0, "cell-1")
		h.makeRunning("web", "web", 1, "cell-1")
		h.ok("/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "web", "index": 0, "domain": "d"}})
		h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"instances": 1}})
		h.ok("/v1/desired_lrp/remove", obj{"process_guid": "web"})
	})
}
