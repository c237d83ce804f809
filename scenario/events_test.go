package scenario

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// sseEvent is one Server-Sent Event as read off the wire.
type sseEvent struct {
	id, name string
	data     json.RawMessage
}

func subscribe(t *testing.T, url string) <-chan sseEvent {
	t.Helper()
	res, err := http.Get(url + "/v1/events/lrp_instances")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("event stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1000)
	go func() {
		defer res.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = json.RawMessage(line[6:])
			case line == "" && e.name != "":
				out <- e
				e = sseEvent{}
			}
		}
	}()
	t.Cleanup(func() { res.Body.Close() })
	return out
}

// The event stream tells, in order, what happened to an LRP and its instances.
func TestEventStreamFollowsAnLRP(t *testing.T) {
	c := newCluster(t, 1, 1, roomy)
	stream := subscribe(t, c.URL)
	if err := c.BBS.DesireLRP(ctx, simLRP("web", 1)); err != nil {
		t.Fatal(err)
	}
	want := []string{model.EventDesiredLRPCreated, model.EventActualLRPCreated,
		model.EventActualLRPChanged /* claimed */, model.EventActualLRPChanged /* running */}
	var got []sseEvent
	timeout := time.After(15 * time.Second)
	for len(got) < len(want) {
		select {
		case e, ok := <-stream:
			if !ok {
				t.Fatal("stream closed")
			}
			got = append(got, e)
		case <-timeout:
			t.Fatalf("events so far: %v", got)
		}
	}
	for i, w := range want {
		if got[i].name != w {
			t.Fatalf("event %d = %s, want %s", i, got[i].name, w)
		}
	}
	var change model.Change[model.ActualLRP]
	if err := json.Unmarshal(got[3].data, &change); err != nil {
		t.Fatal(err)
	}
	if change.Before.State != model.StateClaimed || change.After.State != model.StateRunning || change.After.Address == "" {
		t.Fatalf("running change = %+v", change)
	}
	if err := c.BBS.RemoveDesiredLRP(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for names := map[string]bool{}; !names[model.EventDesiredLRPRemoved] || !names[model.EventActualLRPRemoved]; {
		select {
		case e := <-stream:
			names[e.name] = true
		case <-time.After(15 * time.Second):
			t.Fatalf("no removal events: %v", names)
		}
	}
}
