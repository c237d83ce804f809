package tpswatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap/zaptest"
)

// fakeBBS streams the given events once and then ends the stream; it knows one LRP "web"
// rolling from v1 to v2.
type fakeBBS struct {
	events []model.Event
	served bool
	mu     sync.Mutex
	done   chan struct{}
}

func (f *fakeBBS) Events(ctx context.Context) (<-chan model.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan model.Event, len(f.events))
	if !f.served {
		for _, e := range f.events {
			ch <- e
		}
		f.served = true
	} else {
		close(f.done) // resubscribed after the end of the stream
		<-ctx.Done()
	}
	close(ch)
	return ch, nil
}

func (f *fakeBBS) DesiredLRPByProcessGUID(_ context.Context, guid string) (*model.DesiredLRP, error) {
	d := &model.DesiredLRP{ProcessGUID: guid, PreviousDefinitionID: "v1"}
	d.DefinitionID = "v2"
	return d, nil
}

func crashEvent(t *testing.T, domain, def string, index int32) model.Event {
	t.Helper()
	before := model.ActualLRP{State: model.StateRunning}
	before.ProcessGUID, before.DefinitionID, before.Index, before.Domain = "web", def, index, domain
	before.InstanceGUID, before.CellID = "guid-"+def, "cell-1"
	after := before
	after.State, after.ActualLRPInstanceKey = model.StateCrashed, model.ActualLRPInstanceKey{}
	after.CrashCount, after.CrashReason, after.Since = 2, "APP/PROC/WEB: Exited with status 1", 1234
	b, err := json.Marshal(model.Crash{ActualLRP: after, Before: before})
	if err != nil {
		t.Fatal(err)
	}
	return model.Event{Name: model.EventActualLRPCrashed, Data: b}
}

// changeEvent is an instance of web at index going from before to after, each a state with
// " not ready" appended when its readiness checks do not pass.
func changeEvent(t *testing.T, domain string, index int32, before, after string) model.Event {
	t.Helper()
	lrp := func(s string) model.ActualLRP {
		a := model.ActualLRP{}
		a.ProcessGUID, a.DefinitionID, a.Index, a.Domain = "web", "v2", index, domain
		a.InstanceGUID, a.CellID = "guid-ready", "cell-2"
		state, notReady := strings.CutSuffix(s, " not ready")
		a.State, a.NotReady = state, notReady
		return a
	}
	b, err := json.Marshal(model.Change[model.ActualLRP]{Before: lrp(before), After: lrp(after)})
	if err != nil {
		t.Fatal(err)
	}
	return model.Event{Name: model.EventActualLRPChanged, Data: b}
}

type received struct {
	path string
	body map[string]any
}

func TestCrashesAreReportedWithTheirDefinition(t *testing.T) {
	var mu sync.Mutex
	var got []received
	cc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, received{r.Method + " " + r.URL.Path, body})
		mu.Unlock()
		if body["index"] == float64(2) {
			w.WriteHeader(http.StatusServiceUnavailable) // logged, not retried
		}
	}))
	defer cc.Close()
	evac := model.ActualLRP{Presence: model.PresenceEvacuating}
	evac.ProcessGUID, evac.DefinitionID, evac.Index, evac.Domain, evac.InstanceGUID, evac.CellID = "web", "v2", 1, "cf-apps", "g", "cell-9"
	evacJSON, _ := json.Marshal(evac)
	bbs := &fakeBBS{done: make(chan struct{}), events: []model.Event{
		crashEvent(t, "cf-apps", "v2", 0),
		crashEvent(t, "cf-apps", "v1", 1),
		crashEvent(t, "other-domain", "v2", 0),
		crashEvent(t, "cf-apps", "v2", 2),
		{Name: model.EventActualLRPCrashed, Data: json.RawMessage(`{"not":`)},
		{Name: model.EventActualLRPRemoved, Data: evacJSON},
		{Name: model.EventActualLRPChanged, Data: json.RawMessage(`{}`)},
		// Readiness, as tps reports BBS's routable: a first start that is ready, checks that
		// begin and stop passing; not a start that is not ready yet, a claim, or another domain.
		changeEvent(t, "cf-apps", 3, model.StateClaimed, model.StateRunning),
		changeEvent(t, "cf-apps", 4, model.StateClaimed, model.StateRunning+" not ready"),
		changeEvent(t, "cf-apps", 4, model.StateRunning+" not ready", model.StateRunning),
		changeEvent(t, "cf-apps", 5, model.StateRunning, model.StateRunning+" not ready"),
		changeEvent(t, "cf-apps", 6, model.StateUnclaimed, model.StateClaimed),
		changeEvent(t, "other-domain", 7, model.StateClaimed, model.StateRunning),
	}}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{BBS: bbs, CC: NewCCClient(cc.URL, nil), RetryPause: 1, Log: zaptest.NewLogger(t)}
	finished := make(chan struct{})
	go func() { w.Run(ctx); close(finished) }()
	<-bbs.done
	cancel()
	<-finished // Run waits for the reports in flight

	want := map[string]map[string]any{
		"current": {"instance": "guid-v2", "index": float64(0), "cell_id": "cell-1", "reason": "CRASHED",
			"exit_description": "APP/PROC/WEB: Exited with status 1", "crash_count": float64(2),
			"crash_timestamp": float64(1234), "definition_id": "v2", "definition": "current"},
		"previous": {"instance": "guid-v1", "index": float64(1), "cell_id": "cell-1", "reason": "CRASHED",
			"exit_description": "APP/PROC/WEB: Exited with status 1", "crash_count": float64(2),
			"crash_timestamp": float64(1234), "definition_id": "v1", "definition": "previous"},
	}
	var crashes, reschedules int
	var readiness []string
	for _, r := range got {
		switch r.path {
		case "POST /internal/v4/apps/web/readiness_changed":
			if r.body["instance"] != "guid-ready" || r.body["cell_id"] != "cell-2" {
				t.Errorf("readiness: %v", r.body)
			}
			readiness = append(readiness, fmt.Sprint(r.body["index"], ":", r.body["ready"]))
		case "POST /internal/v4/apps/web/crashed":
			crashes++
			if r.body["index"] == float64(2) {
				continue
			}
			w := want[r.body["definition"].(string)]
			for k, v := range w {
				if r.body[k] != v {
					t.Errorf("crash of %v: %s = %v, want %v", r.body["definition_id"], k, r.body[k], v)
				}
			}
		case "POST /internal/v4/apps/web/rescheduling":
			reschedules++
			if r.body["cell_id"] != "cell-9" || r.body["reason"] != "Cell is being evacuated" || r.body["index"] != float64(1) {
				t.Errorf("rescheduling: %v", r.body)
			}
		default:
			t.Errorf("unexpected %s", r.path)
		}
	}
	slices.Sort(readiness)
	if want := []string{"3:true", "4:true", "5:false"}; !slices.Equal(readiness, want) {
		t.Errorf("readiness reports (index:ready) %v, want %v", readiness, want)
	}
	if crashes != 3 || reschedules != 1 {
		t.Fatalf("%d crash and %d rescheduling reports, want 3 (one per cf-apps crash, the failed one not retried) and 1: %v", crashes, reschedules, got)
	}
}
