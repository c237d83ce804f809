package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

func TestPingHealthzAndMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Run("ping", func(t *testing.T) {
		got := h.ok("/v1/ping", nil)
		if !reflect.DeepEqual(got, obj{"available": true}) {
			t.Errorf("ping = %v, want {\"available\": true}", got)
		}
	})
	t.Run("healthz", func(t *testing.T) {
		rec := h.do(http.MethodGet, "/healthz", nil)
		if rec.Code != http.StatusOK {
			t.Errorf("healthz: %d %s", rec.Code, rec.Body)
		}
		requireJSONContentType(t, rec)
	})
	t.Run("metrics", func(t *testing.T) {
		h.post("/v1/domains/list", "")
		h.post("/v1/desired_lrps/get_by_process_guid", "{")
		rec := h.do(http.MethodGet, "/metrics", nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("metrics: %d %s", rec.Code, rec.Body)
		}
		body := rec.Body.String()
		for _, want := range []string{
			"bbs_http_requests_total",
			`bbs_http_requests_total{code="200",route="/v1/domains/list"} 1`,
			`bbs_http_requests_total{code="400",route="/v1/desired_lrps/get_by_process_guid"} 1`,
			"bbs_http_request_duration_seconds",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
	t.Run("database gone", func(t *testing.T) {
		h := newHarness(t)
		h.store.Close()
		if got := h.ok("/v1/ping", nil); !reflect.DeepEqual(got, obj{"available": false}) {
			t.Errorf("ping = %v, want {\"available\": false}", got)
		}
		if rec := h.do(http.MethodGet, "/healthz", nil); rec.Code != http.StatusServiceUnavailable {
			t.Errorf("healthz: %d, want 503", rec.Code)
		}
	})
}

func TestDomains(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	list := func(t *testing.T) []string {
		t.Helper()
		got := h.ok("/v1/domains/list", nil)
		requireKeys(t, "domains response", got, []string{"domains"}, nil)
		raw, ok := got["domains"].([]any)
		if !ok {
			t.Fatalf("domains = %v, want an array", got["domains"])
		}
		out := []string{}
		for _, d := range raw {
			out = append(out, d.(string))
		}
		return out
	}
	if got := list(t); len(got) != 0 {
		t.Fatalf("domains = %v, want []", got)
	}
	if got := h.ok("/v1/domains/upsert", obj{"domain": "forever", "ttl": 0}); len(got) != 0 {
		t.Errorf("upsert response = %v, want {}", got)
	}
	h.ok("/v1/domains/upsert", obj{"domain": "cf-apps"}) // ttl omitted: 0
	h.ok("/v1/domains/upsert", obj{"domain": "brief", "ttl": 1})
	h.ok("/v1/domains/upsert", obj{"domain": "hour", "ttl": 3600})
	if got := list(t); !reflect.DeepEqual(got, []string{"brief", "cf-apps", "forever", "hour"}) {
		t.Fatalf("domains = %v", got)
	}

	start := time.Now()
	for list(t)[0] == "brief" {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("a domain with ttl 1 is still fresh after %v", time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := list(t); !reflect.DeepEqual(got, []string{"cf-apps", "forever", "hour"}) {
		t.Errorf("domains after expiry = %v", got)
	}
	// An upsert refreshes an expired domain.
	h.ok("/v1/domains/upsert", obj{"domain": "brief", "ttl": 0})
	if got := list(t); !reflect.DeepEqual(got, []string{"brief", "cf-apps", "forever", "hour"}) {
		t.Errorf("domains after refresh = %v", got)
	}

	for name, body := range map[string]obj{
		"no domain":    {"ttl": 10},
		"empty domain": {"domain": "", "ttl": 10},
		"long domain":  {"domain": strings.Repeat("d", model.MaxGUIDLength+1)},
		"negative ttl": {"domain": "d", "ttl": -1},
		"huge ttl":     {"domain": "d", "ttl": model.MaxDomainTTL + 1},
		"overflow ttl": {"domain": "d", "ttl": int64(1) << 62},
	} {
		t.Run(name, func(t *testing.T) {
			requireError(t, h.postJSON("/v1/domains/upsert", body), http.StatusBadRequest, model.ErrInvalidRequest)
		})
	}
}

var rolloutFields = []string{"id", "process_guid", "kind", "from_definition_id", "to_definition_id", "state", "phase", "step", "steps_total",
	"current_index", "updated_instances", "instances", "given_up_indices", "started_at", "workflow_id", "analysis"}

func TestRollouts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if got := h.ok("/v1/rollouts/list", nil); !reflect.DeepEqual(got, obj{"rollouts": []any{}}) {
		t.Errorf("rollouts/list = %v, want {\"rollouts\": []}", got)
	}
	requireError(t, h.postJSON("/v1/rollouts/get", obj{"process_guid": "p"}), http.StatusNotFound, model.ErrResourceNotFound)

	// For p: an active rollout, older than a completed one; for q: two finished ones.
	h.exec(`INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state,
    current_index, updated_instances, instances, given_up_indices, started_at, finished_at, workflow_id, run_id, reason)
VALUES
 ('00000000-0000-0000-0000-00000000000a', 'p', 'update', 'v1', 'v2', 'completed', 3, 3, 3, '{}',
  now() - interval '1 hour', now() - interval '50 minutes', 'wf-a', 'run-a', ''),
 ('00000000-0000-0000-0000-00000000000b', 'p', 'update', 'v2', 'v3', 'active', 1, 1, 3, '{2}',
  now() - interval '2 hours', NULL, 'wf-b', 'run-b', ''),
 ('00000000-0000-0000-0000-00000000000c', 'q', 'rollback', 'w2', 'w1', 'failed', 0, 0, 1, '{}',
  now() - interval '3 hours', now() - interval '3 hours', 'wf-c', '', 'the LRP was removed'),
 ('00000000-0000-0000-0000-00000000000d', 'q', 'activate', 'w1', 'w2', 'canceled', 0, 0, 1, '{}',
  now() - interval '10 minutes', now() - interval '5 minutes', 'wf-d', '', '')`)
	const a, b, c, d = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b",
		"00000000-0000-0000-0000-00000000000c", "00000000-0000-0000-0000-00000000000d"

	ids := func(t *testing.T, l []obj) []string {
		t.Helper()
		out := []string{}
		for _, r := range l {
			requireKeys(t, "rollout", r, rolloutFields, []string{"finished_at", "run_id", "reason", "strategy", "failure",
				"revert_failure", "reverted_to", "traffic", "traffic_generation"})
			out = append(out, r.str(t, "id"))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		filter obj
		want   []string
	}{
		{"all, newest first", obj{}, []string{d, a, b, c}},
		{"active", obj{"active": true}, []string{b}},
		{"of p", obj{"process_guid": "p"}, []string{a, b}},
		{"active of q", obj{"process_guid": "q", "active": true}, []string{}},
		{"of an LRP with none", obj{"process_guid": "nope"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(t, h.ok("/v1/rollouts/list", tc.filter).list(t, "rollouts")); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rollouts = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("get prefers the rollout in progress", func(t *testing.T) {
		r := h.ok("/v1/rollouts/get", obj{"process_guid": "p"}).obj(t, "rollout")
		want := obj{
			"id": b, "process_guid": "p", "kind": "update", "from_definition_id": "v2", "to_definition_id": "v3",
			"state": "active", "phase": "walking", "workflow_id": "wf-b", "run_id": "run-b",
		}
		for k, v := range want {
			if r[k] != v {
				t.Errorf("rollout %s = %v, want %v", k, r[k], v)
			}
		}
		if r.integer(t, "current_index") != 1 || r.integer(t, "updated_instances") != 1 || r.integer(t, "instances") != 3 {
			t.Errorf("rollout progress = %v", r)
		}
		if !reflect.DeepEqual(r["given_up_indices"], roundTrip(t, []int{2})) {
			t.Errorf("given_up_indices = %v, want [2]", r["given_up_indices"])
		}
		started := time.Unix(0, r.integer(t, "started_at"))
		if d := time.Since(started); d < 119*time.Minute || d > 121*time.Minute {
			t.Errorf("started_at = %v (Unix nanoseconds?), want two hours ago", started)
		}
		if _, ok := r["finished_at"]; ok {
			t.Errorf("an active rollout has finished_at %v", r["finished_at"])
		}
	})
	t.Run("get falls back to the latest", func(t *testing.T) {
		r := h.ok("/v1/rollouts/get", obj{"process_guid": "q"}).obj(t, "rollout")
		if r.str(t, "id") != d || r.str(t, "state") != model.RolloutCanceled || r.integer(t, "finished_at") <= r.integer(t, "started_at") {
			t.Errorf("rollout = %v, want the canceled one", r)
		}
	})
}

func TestCells(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if got := h.ok("/v1/cells/list", nil); !reflect.DeepEqual(got, obj{"cells": []any{}}) {
		t.Errorf("cells/list = %v, want {\"cells\": []}", got)
	}
	h.exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, placement_tags, expires_at)
VALUES ('cell-b', 'z2', 'http://10.0.0.2:1800', 2048, 4096, 50, '{}', now() + interval '1 minute'),
       ('cell-a', 'z1', 'http://10.0.0.1:1800', 1024, 8192, 100, '{gpu,ssd}', now() + interval '1 minute'),
       ('cell-gone', 'z1', 'http://10.0.0.3:1800', 1024, 1024, 10, '{}', now() - interval '1 second')`)
	cells := h.ok("/v1/cells/list", nil).list(t, "cells")
	if len(cells) != 2 {
		t.Fatalf("cells = %v, want cell-a and cell-b (cell-gone expired)", cells)
	}
	for _, c := range cells {
		requireKeys(t, "cell", c, []string{"cell_id", "zone", "rep_address", "capacity"}, []string{"placement_tags"})
		requireKeys(t, "capacity", c.obj(t, "capacity"), []string{"memory_mb", "disk_mb", "containers"}, nil)
	}
	a := cells[0]
	if a.str(t, "cell_id") != "cell-a" || a.str(t, "zone") != "z1" || a.str(t, "rep_address") != "http://10.0.0.1:1800" ||
		a.obj(t, "capacity").integer(t, "memory_mb") != 1024 || a.obj(t, "capacity").integer(t, "disk_mb") != 8192 ||
		a.obj(t, "capacity").integer(t, "containers") != 100 || !reflect.DeepEqual(a["placement_tags"], []any{"gpu", "ssd"}) {
		t.Errorf("cell-a = %v", a)
	}
	if cells[1].str(t, "cell_id") != "cell-b" {
		t.Errorf("cells[1] = %v, want cell-b", cells[1])
	}
}
