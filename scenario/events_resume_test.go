package scenario

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// A subscriber whose stream broke resumes it with Last-Event-ID and misses nothing: the
// events committed while it was away come first, then the live ones, each once and in order
// (what the chaos driver checks through killed API replicas).
func TestEventStreamResumesAfterLastEventID(t *testing.T) {
	c := newCluster(t, 1, 1, roomy)
	// The first stream starts from the log too (after its newest event), so that an event
	// committed before the API has registered the stream is not missed either.
	if err := c.BBS.DesireLRP(ctx, simLRP("before", 1)); err != nil {
		t.Fatal(err)
	}
	from, err := c.Store.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	streamCtx, cancel := context.WithCancel(ctx)
	events, err := c.BBS.EventsAfter(streamCtx, from)
	if err != nil {
		t.Fatal(err)
	}
	witness, err := c.BBS.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.BBS.DesireLRP(ctx, simLRP("first", 1)); err != nil {
		t.Fatal(err)
	}
	var last int64
	for last == 0 {
		select {
		case e := <-events:
			if e.Name == model.EventDesiredLRPCreated {
				last = e.ID
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no desired_lrp_created event")
		}
	}
	cancel() // the stream breaks

	if err := c.BBS.DesireLRP(ctx, simLRP("while-away", 1)); err != nil {
		t.Fatal(err)
	}
	// Resumed once the API has passed the event on to streams: a stream opened before it
	// did would have it live, resumed or not.
	for seen := false; !seen; {
		select {
		case e := <-witness:
			seen = e.Name == model.EventDesiredLRPCreated && strings.Contains(string(e.Data), `"while-away"`)
		case <-time.After(15 * time.Second):
			t.Fatal("the witness stream did not see the LRP desired while away")
		}
	}
	resumed, err := c.BBS.EventsAfter(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.BBS.DesireLRP(ctx, simLRP("after", 1)); err != nil {
		t.Fatal(err)
	}
	created := map[string]bool{}
	prev := last
	timeout := time.After(15 * time.Second)
	for !created["while-away"] || !created["after"] {
		select {
		case e, ok := <-resumed:
			if !ok {
				t.Fatal("the resumed stream closed")
			}
			if e.ID <= prev {
				t.Fatalf("event %d after %d: twice or out of order", e.ID, prev)
			}
			prev = e.ID
			if e.Name == model.EventDesiredLRPCreated {
				var d model.DesiredLRP
				if err := json.Unmarshal(e.Data, &d); err != nil {
					t.Fatal(err)
				}
				created[d.ProcessGUID] = true
			}
		case <-timeout:
			t.Fatalf("the resumed stream brought the creation of %v only", created)
		}
	}
	if created["first"] {
		t.Error("the resumed stream repeated an event from before its Last-Event-ID")
	}
}
