package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// A strategy is validated strictly wherever it can be given, and a refused one writes nothing
// and starts nothing (ROLLOUTS-NEXT.md section 1).
func TestStrategiesAreValidatedAtTheEdge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 2, nil))
	before := h.rowCounts()
	v2 := definition(obj{"definition_id": "v2"})
	for name, strategy := range map[string]any{
		"unknown field":      obj{"max_in_fligth": 2},
		"string number":      obj{"max_in_flight": "3"},
		"zero in flight":     obj{"max_in_flight": 0},
		"negative min ready": obj{"min_ready_ms": -5},
		"bad on_failure":     obj{"on_failure": "panic"},
		"weight over 100":    obj{"canary": obj{"steps": []obj{{"weight": 120}}}},
		"step with neither":  obj{"canary": obj{"steps": []obj{{"pause_ms": 1}}}},
		"promote other":      obj{"canary": obj{"steps": []obj{{"instances": 1, "promote": "now"}}}},
		"unknown window":     obj{"window": "maintenance"},
		"not an object":      []int{1},
	} {
		t.Run(name, func(t *testing.T) {
			for _, req := range []struct {
				path string
				body obj
			}{
				{"/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": v2, "strategy": strategy}}},
				{"/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"rollout_strategy": strategy}}},
				{"/v1/desired_lrp/rollback", obj{"process_guid": "web", "definition_id": "web", "strategy": strategy}},
				{"/v1/lrp_deployments/update", obj{"process_guid": "web", "update": obj{"definition_id": "v2", "definition": v2}, "strategy": strategy}},
				{"/v1/lrp_deployments/update", obj{"process_guid": "web", "update": obj{}, "rollout_strategy": strategy}},
				{"/v1/lrp_deployments/activate", obj{"process_guid": "web", "definition_id": "web", "strategy": strategy}},
				{"/v1/desired_lrp/desire", obj{"desired_lrp": lrp("other", "d", 1, obj{"rollout_strategy": strategy})}},
			} {
				requireError(t, h.postJSON(req.path, req.body), http.StatusBadRequest, model.ErrInvalidRequest)
			}
		})
	}
	// strategy without a definition: it is the rollout's, and there is none.
	requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"strategy": obj{"max_in_flight": 2}}}),
		http.StatusBadRequest, model.ErrInvalidRequest)
	// break_glass is per update only.
	requireError(t, h.postJSON("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"rollout_strategy": obj{"break_glass": "x"}}}),
		http.StatusBadRequest, model.ErrInvalidRequest)
	if after := h.rowCounts(); !reflect.DeepEqual(after, before) {
		t.Fatalf("rows changed by refused requests: %v → %v", before, after)
	}
	if calls := h.rollouts.Calls(); len(calls) != 0 {
		t.Fatalf("workflow calls for refused requests: %v", calls)
	}
}

// The LRP's default and the update's strategy resolve field by field over the server's, and
// the rollout reports the result with its phase.
func TestRolloutReportsItsResolvedStrategy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 2, obj{"rollout_strategy": obj{"max_in_flight": 2, "index_deadline_ms": 60000}}))
	got := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "desired_lrp").obj(t, "rollout_strategy")
	if got.integer(t, "max_in_flight") != 2 {
		t.Fatalf("default read back: %v", got)
	}
	h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{
		"definition": definition(obj{"definition_id": "v2"}), "strategy": obj{"on_failure": "pause", "failure": obj{"max_crashes": 5}}}})
	r := h.ok("/v1/rollouts/get", obj{"process_guid": "web"}).obj(t, "rollout")
	s := r.obj(t, "strategy")
	if r["phase"] != "walking" || s.integer(t, "max_in_flight") != 2 || s.integer(t, "index_deadline_ms") != 60000 ||
		s["on_failure"] != "pause" || s.obj(t, "failure").integer(t, "max_crashes") != 5 || s.obj(t, "failure").integer(t, "max_failed_indices") != 1 {
		t.Fatalf("rollout %v", r)
	}
	dep := h.ok("/v1/lrp_deployments/get_by_process_guid", obj{"process_guid": "web"}).obj(t, "lrp_deployment")
	if dep.obj(t, "rollout_strategy").integer(t, "index_deadline_ms") != 60000 {
		t.Fatalf("deployment %v", dep)
	}
}

// The controls of section 3: refused clearly when they do not apply, recorded when they do.
func TestRolloutControls(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("web", "d", 3, nil))
	for _, path := range []string{"pause", "resume", "abort", "promote"} {
		requireError(t, h.postJSON("/v1/rollouts/"+path, obj{"process_guid": "nope"}), http.StatusNotFound, model.ErrResourceNotFound)
		requireError(t, h.postJSON("/v1/rollouts/"+path, obj{"process_guid": "web"}), http.StatusConflict, model.ErrNoRolloutInProgress)
		requireError(t, h.postJSON("/v1/rollouts/"+path, obj{"process_guid": "bad guid"}), http.StatusBadRequest, model.ErrInvalidRequest)
	}
	requireError(t, h.postJSON("/v1/rollouts/set_pace", obj{"process_guid": "web", "max_in_flight": 2}), http.StatusConflict, model.ErrNoRolloutInProgress)
	for _, bad := range []obj{{"process_guid": "web"}, {"process_guid": "web", "max_in_flight": 0}, {"process_guid": "web", "max_in_flight": "2"}} {
		requireError(t, h.postJSON("/v1/rollouts/set_pace", bad), http.StatusBadRequest, model.ErrInvalidRequest)
	}

	h.ok("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": definition(obj{"definition_id": "v2"})}})
	// Walking, never paused: nothing to resume.
	rec := h.postJSON("/v1/rollouts/resume", obj{"process_guid": "web"})
	requireError(t, rec, http.StatusConflict, model.ErrInvalidPhase)
	if !strings.Contains(rec.Body.String(), "walking, not paused") {
		t.Fatalf("InvalidPhase must name the phase: %s", rec.Body)
	}
	h.ok("/v1/rollouts/pause", obj{"process_guid": "web"})
	h.ok("/v1/rollouts/pause", obj{"process_guid": "web"}) // repeated: 200, the workflow changes nothing
	h.ok("/v1/rollouts/resume", obj{"process_guid": "web"})
	h.ok("/v1/rollouts/resume", obj{"process_guid": "web"}) // repeated after it took effect: 200, nothing changes
	r := h.ok("/v1/rollouts/set_pace", obj{"process_guid": "web", "max_in_flight": 4}).obj(t, "rollout")
	if r.obj(t, "strategy").integer(t, "max_in_flight") != 4 {
		t.Fatalf("set_pace answered %v", r)
	}
	if got := h.ok("/v1/rollouts/get", obj{"process_guid": "web"}).obj(t, "rollout").obj(t, "strategy"); got.integer(t, "max_in_flight") != 4 || got["on_failure"] != "revert" {
		t.Fatalf("strategy after set_pace: %v", got)
	}
	requireError(t, h.postJSON("/v1/rollouts/promote", obj{"process_guid": "web"}), http.StatusConflict, model.ErrInvalidPhase)
	// At a manual canary step (as its workflow records it) a promote applies.
	h.exec(`UPDATE rollouts SET phase = 'awaiting_promotion', step = 0`)
	r = h.ok("/v1/rollouts/promote", obj{"process_guid": "web", "full": true}).obj(t, "rollout")
	if r["phase"] != "awaiting_promotion" || r.integer(t, "step") != 0 {
		t.Fatalf("promote answered %v", r)
	}
	h.exec(`UPDATE rollouts SET phase = 'walking'`)
	h.ok("/v1/rollouts/abort", obj{"process_guid": "web", "reason": "p99 doubled"})

	// Reverting (the row canceling): pause does not apply; a resume repeated after the one
	// that took effect changes nothing.
	h.exec(`UPDATE rollouts SET state = 'canceling'`)
	rec = h.postJSON("/v1/rollouts/pause", obj{"process_guid": "web"})
	requireError(t, rec, http.StatusConflict, model.ErrInvalidPhase)
	if !strings.Contains(rec.Body.String(), "reverting") {
		t.Fatalf("InvalidPhase must name the phase: %s", rec.Body)
	}
	h.ok("/v1/rollouts/resume", obj{"process_guid": "web"})
	// A walk back that no pause or resume reached is not paused; one its revert failure
	// holds is (ROLLOUTS-NEXT.md section 4), and a resume releases it.
	h.exec(`UPDATE rollouts SET last_control = ''`)
	rec = h.postJSON("/v1/rollouts/resume", obj{"process_guid": "web"})
	requireError(t, rec, http.StatusConflict, model.ErrInvalidPhase)
	if !strings.Contains(rec.Body.String(), "reverting, not paused") {
		t.Fatalf("InvalidPhase must name the phase: %s", rec.Body)
	}
	h.exec(`UPDATE rollouts SET revert_failure = '{"reason": "crash_loop", "kind": "app"}'`)
	h.ok("/v1/rollouts/resume", obj{"process_guid": "web"})
	want := []string{"start:web:v2", "control-pause:web:v2", "control-pause:web:v2", "control-resume:web:v2", "control-resume:web:v2",
		"control-set_pace:web:v2", "control-promote:web:v2", "control-abort:web:v2", "control-resume:web:v2", "control-resume:web:v2"}
	if calls := h.rollouts.Calls(); !reflect.DeepEqual(calls, want) {
		t.Fatalf("workflow calls = %v, want %v", calls, want)
	}
}
