package e2e

import (
	"testing"
	"time"
)

// gateView is what a rollout's get says of its gate.
type gateView struct {
	State            string `json:"state"`
	Phase            string `json:"phase"`
	UpdatedInstances int32  `json:"updated_instances"`
	Strategy         struct {
		Window     string `json:"window"`
		BreakGlass string `json:"break_glass"`
	} `json:"strategy"`
}

func (d *devStack) gate(guid string) gateView {
	var resp struct {
		Rollout gateView `json:"rollout"`
	}
	d.api.mustPost("/v1/rollouts/get", obj{"process_guid": guid}, &resp)
	return resp.Rollout
}

// closedSpan is a span closed for days around now: an hour, three days from now.
func closedSpan() obj {
	day := [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}[time.Now().UTC().AddDate(0, 0, 3).Weekday()]
	return obj{"days": []string{day}, "start": "10:00", "end": "11:00", "time_zone": "UTC"}
}

// openSpans are open at every instant.
func openSpans() []obj {
	all := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	return []obj{{"days": all, "start": "00:00", "end": "23:59", "time_zone": "Europe/Berlin"},
		{"days": all, "start": "23:59", "end": "00:00", "time_zone": "Europe/Berlin"}}
}

// TestRolloutWindowAndFreezeUnderTraffic drives windows and the freeze with real processes,
// under router traffic: a rollout whose window is closed waits (and its window cannot be
// deleted), walks once the window is upserted open, holds at its next index boundary when
// the fleet is frozen (a new start is refused, Frozen) and walks on after the unfreeze; an
// update that breaks the glass rolls through a freeze. No request fails and the served
// indices never drop below N.
func TestRolloutWindowAndFreezeUnderTraffic(t *testing.T) {
	const n = 4
	d := startDev(t)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "4 RUNNING on web", 30*time.Second, func() bool { return d.allOn("web", "web", n) })
	d.waitRouted(t, "web.example.com")
	traffic := d.drive("web.example.com", 4)
	s := d.sample("web", n)

	var conflict struct {
		Error struct{ Type, Message string }
	}
	d.api.mustPost("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": []obj{closedSpan()}}, nil)
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v2", "v2"),
		"strategy": obj{"window": "maintenance"}}}, nil)
	d.waitFor(t, "the rollout to wait for its window", 30*time.Second, func() bool { return d.gate("web").Phase == "waiting_for_window" })
	if g := d.gate("web"); g.UpdatedInstances != 0 || g.Strategy.Window != "maintenance" {
		t.Fatalf("waiting for its window: %+v", g)
	}
	if st := d.api.post("/v1/rollout_windows/delete", obj{"name": "maintenance"}, &conflict); st != 409 || conflict.Error.Type != "ResourceConflict" {
		t.Fatalf("delete of a window a rollout names: %d %+v", st, conflict)
	}

	d.api.mustPost("/v1/rollout_windows/upsert", obj{"name": "maintenance", "schedule": openSpans()}, nil)
	d.waitFor(t, "the rollout to walk once its window opened", 60*time.Second, func() bool { return d.gate("web").UpdatedInstances >= 1 })

	var frozen struct {
		Freeze struct{ Frozen bool } `json:"freeze"`
		Told   int                   `json:"told"`
	}
	d.api.mustPost("/v1/rollouts/freeze", obj{"reason": "e2e incident"}, &frozen)
	if !frozen.Freeze.Frozen || frozen.Told != 1 {
		t.Fatalf("freeze answered %+v", frozen)
	}
	d.waitFor(t, "the rollout to hold, frozen", 60*time.Second, func() bool { return d.gate("web").Phase == "frozen" })
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("api", 1)}, nil)
	if st := d.api.post("/v1/desired_lrp/update", obj{"process_guid": "api", "update": obj{"definition": demoDefinition("a2", "a2")}}, &conflict); st != 409 || conflict.Error.Type != "Frozen" {
		t.Fatalf("an update while frozen: %d %+v", st, conflict)
	}
	held := d.gate("web")
	if held.UpdatedInstances >= n || held.State != "active" {
		t.Fatalf("frozen: %+v", held)
	}
	d.api.mustPost("/v1/rollouts/unfreeze", obj{}, nil)
	d.waitFor(t, "every index on v2 after the unfreeze", 90*time.Second, func() bool {
		return d.allOn("web", "v2", n) && d.gate("web").State == "completed"
	})

	d.api.mustPost("/v1/rollouts/freeze", obj{"reason": "e2e holidays"}, nil)
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v3", "v3"),
		"strategy": obj{"break_glass": "CVE hotfix"}}}, nil)
	d.waitFor(t, "the break-glass rollout to complete while frozen", 90*time.Second, func() bool {
		return d.allOn("web", "v3", n) && d.gate("web").State == "completed"
	})
	if g := d.gate("web"); g.Strategy.BreakGlass != "CVE hotfix" {
		t.Fatalf("break glass not recorded: %+v", g)
	}
	d.api.mustPost("/v1/rollouts/unfreeze", obj{}, nil)
	s.finish(t, n, "window, freeze and break glass")
	traffic.finish(t, "window, freeze and break glass")
	d.api.mustPost("/v1/rollout_windows/delete", obj{"name": "maintenance"}, nil)
}
