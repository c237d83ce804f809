package protocol_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// nextDesired is the stream's next desired-LRP event, skipping the instances'.
func (st *stream) nextDesired() sse {
	st.t.Helper()
	for {
		if ev := st.next(); strings.HasPrefix(ev.name, "desired_lrp_") {
			return ev
		}
	}
}

// The streams carry the desired LRPs of BBS's desired_lrp_* events whole, as .r3 serves them:
// every field the client desired, through a change and a removal.
func TestDesiredLRPEventsCarryTheWholeLRP(t *testing.T) {
	store := dbtest.NewStore(t)
	log := zaptest.NewLogger(t)
	hub := events.NewHub(store, store.Notifications(), events.Options{GapWait: 100 * time.Millisecond, Poll: 100 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	d := deps(store, &recorders.Stopper{}, &recorders.Rollouts{}, log)
	d.Events = hub
	srv := protocol.NewServer(d)
	srv.MarkReady()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(srv.CloseStreams)
	s := &server{t: t, url: ts.URL, store: store}

	for _, path := range []string{"POST /v1/events/lrp_instances.r1", "GET /v1/events.r1"} {
		t.Run(path, func(t *testing.T) {
			s.t = t
			method, p, _ := strings.Cut(path, " ")
			st := s.open(method, p, "")
			guid := ccProcess[:len(ccProcess)-len(method)] + method
			in := ccDesiredLRP(guid)
			in.MetricsGuid = "" // BBS's events are not PopulateMetricsGuid'd: the stored LRP
			s.desire(in)
			m, err := store.DesiredLRPByProcessGUID(t.Context(), guid)
			if err != nil {
				t.Fatal(err)
			}
			want := stored(in, m.ModificationTag)
			ev := st.nextDesired()
			if got := ev.msg.(*pb.DesiredLRPCreatedEvent).GetDesiredLrp(); ev.name != "desired_lrp_created" || !proto.Equal(got, want) {
				t.Fatalf("%s: %s", ev.name, diffProto(got, want))
			}

			annotation := "changed"
			if err := s.update(guid, &pb.DesiredLRPUpdate{Annotation: &annotation}); err != nil {
				t.Fatal(err)
			}
			after := proto.Clone(want).(*pb.DesiredLRP)
			after.Annotation, after.ModificationTag.Index = annotation, 1
			ev = st.nextDesired()
			changed, ok := ev.msg.(*pb.DesiredLRPChangedEvent)
			if !ok || !proto.Equal(changed.GetBefore(), want) || !proto.Equal(changed.GetAfter(), after) {
				t.Fatalf("%s: %v", ev.name, ev.msg)
			}

			var resp pb.DesiredLRPLifecycleResponse
			s.post("/v1/desired_lrp/remove", &pb.RemoveDesiredLRPRequest{ProcessGuid: guid}, &resp)
			ev = st.nextDesired()
			if removed, ok := ev.msg.(*pb.DesiredLRPRemovedEvent); !ok || !proto.Equal(removed.GetDesiredLrp(), after) {
				t.Fatalf("%s: %v", ev.name, ev.msg)
			}
		})
	}
}
