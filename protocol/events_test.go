package protocol_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// newStreamingServer is newServer with event streams: a hub over the store's log, and a
// stand-in for the desired-LRP hook (the DesiredLRP conversion is not this file's) that
// names the LRP of each desired-LRP event.
func newStreamingServer(t *testing.T) *server {
	t.Helper()
	store := dbtest.NewStore(t)
	log := zaptest.NewLogger(t)
	hub := events.NewHub(store, store.Notifications(), events.Options{GapWait: 100 * time.Millisecond, Poll: 100 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	hooks := &taskHooks{}
	d := deps(store, nil, nil, log)
	d.Events, d.DesiredLRPEvents, d.Tasks = hub, desiredStandIn, hooks.service(store, log)
	srv := protocol.NewServer(d)
	srv.MarkReady()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(srv.CloseStreams) // before ts.Close, which waits for the streams' handlers
	return &server{t: t, url: ts.URL, store: store, tasks: hooks}
}

// desiredStandIn is a desired-LRP hook that carries the process guid alone.
func desiredStandIn(_ context.Context, e model.Event) (proto.Message, error) {
	var d struct {
		ProcessGUID string `json:"process_guid"`
		After       *struct {
			ProcessGUID string `json:"process_guid"`
		} `json:"after"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return nil, err
	}
	switch e.Name {
	case model.EventDesiredLRPCreated:
		return &pb.DesiredLRPCreatedEvent{DesiredLrp: &pb.DesiredLRP{ProcessGuid: d.ProcessGUID}}, nil
	case model.EventDesiredLRPRemoved:
		return &pb.DesiredLRPRemovedEvent{DesiredLrp: &pb.DesiredLRP{ProcessGuid: d.ProcessGUID}}, nil
	}
	return &pb.DesiredLRPChangedEvent{After: &pb.DesiredLRP{ProcessGuid: d.After.ProcessGUID}}, nil
}

// sse is one event as a client reads it off the stream.
type sse struct {
	id   int
	name string
	msg  proto.Message
}

// stream is a client's event stream: a small SSE reader, as BBS's client has, that decodes
// each event's data (base64, then the protobuf message its name says).
type stream struct {
	t      *testing.T
	name   string
	events chan sse
	last   int // the id of the last event read
}

// messages are the message types of BBS's event names.
var messages = map[string]func() proto.Message{
	"actual_lrp_instance_created": func() proto.Message { return &pb.ActualLRPInstanceCreatedEvent{} },
	"actual_lrp_instance_changed": func() proto.Message { return &pb.ActualLRPInstanceChangedEvent{} },
	"actual_lrp_instance_removed": func() proto.Message { return &pb.ActualLRPInstanceRemovedEvent{} },
	"actual_lrp_crashed":          func() proto.Message { return &pb.ActualLRPCrashedEvent{} },
	"actual_lrp_created":          func() proto.Message { return &pb.ActualLRPCreatedEvent{} },
	"actual_lrp_changed":          func() proto.Message { return &pb.ActualLRPChangedEvent{} },
	"actual_lrp_removed":          func() proto.Message { return &pb.ActualLRPRemovedEvent{} },
	"desired_lrp_created":         func() proto.Message { return &pb.DesiredLRPCreatedEvent{} },
	"desired_lrp_changed":         func() proto.Message { return &pb.DesiredLRPChangedEvent{} },
	"desired_lrp_removed":         func() proto.Message { return &pb.DesiredLRPRemovedEvent{} },
	"task_created":                func() proto.Message { return &pb.TaskCreatedEvent{} },
	"task_changed":                func() proto.Message { return &pb.TaskChangedEvent{} },
	"task_removed":                func() proto.Message { return &pb.TaskRemovedEvent{} },
}

// open opens a stream (method and path of one of BBS's streams) for cell ("" for all) as
// BBS's client does: the EventsByCellId body, no Content-Type. It checks BBS's headers.
func (s *server) open(method, path, cell string) *stream {
	s.t.Helper()
	body, _ := proto.Marshal(&pb.EventsByCellId{CellId: cell})
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	for k, want := range map[string]string{
		"Content-Type":  "text/event-stream; charset=utf-8",
		"Cache-Control": "no-cache, no-store, must-revalidate",
		"Connection":    "keep-alive",
	} {
		if got := resp.Header.Get(k); got != want {
			s.t.Fatalf("%s %s: %s %q, want %q", method, path, k, got, want)
		}
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		s.t.Fatalf("%s %s: %d %s %v, want 200 over chunked HTTP/1.1", method, path, resp.StatusCode, resp.Proto, resp.TransferEncoding)
	}
	st := &stream{t: s.t, name: path + " " + cell, events: make(chan sse, 100), last: -1}
	go st.read(resp.Body)
	return st
}

// read parses the SSE framing: "id: <n>", "event: <name>", "data: <base64>", a blank line.
func (st *stream) read(r io.Reader) {
	defer close(st.events)
	br := bufio.NewReader(r)
	var ev sse
	var data string
	fields := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if fields != 3 {
				st.t.Errorf("%s: an event of %d fields", st.name, fields)
				return
			}
			raw, err := base64.StdEncoding.DecodeString(data)
			newMsg, known := messages[ev.name]
			if err != nil || !known {
				st.t.Errorf("%s: event %q with data %q: %v", st.name, ev.name, data, err)
				return
			}
			ev.msg = newMsg()
			if err := proto.Unmarshal(raw, ev.msg); err != nil {
				st.t.Errorf("%s: %s: %v", st.name, ev.name, err)
				return
			}
			st.events <- ev
			ev, data, fields = sse{}, "", 0
		case strings.HasPrefix(line, "id: "):
			ev.id, err = strconv.Atoi(line[len("id: "):])
			fields++
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
			fields++
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
			fields++
		default:
			st.t.Errorf("%s: unexpected line %q", st.name, line)
			return
		}
		if err != nil {
			st.t.Errorf("%s: %q: %v", st.name, line, err)
			return
		}
	}
}

// next is the stream's next event.
func (st *stream) next() sse {
	st.t.Helper()
	ev, ok := st.within(10 * time.Second)
	if !ok {
		st.t.Fatalf("%s: no event", st.name)
	}
	return ev
}

// within is the stream's next event if one comes within d.
func (st *stream) within(d time.Duration) (sse, bool) {
	st.t.Helper()
	select {
	case ev, ok := <-st.events:
		if !ok {
			st.t.Fatalf("%s ended", st.name)
		}
		if ev.id != st.last+1 {
			st.t.Fatalf("%s: event %s has id %d after %d: ids count from 0 by one on each connection", st.name, ev.name, ev.id, st.last)
		}
		st.last = ev.id
		return ev, true
	case <-time.After(d):
		return sse{}, false
	}
}

// sync waits until every stream follows the hub: the hub starts from where the log ends when
// it first reads it, and a stream from when it subscribes. Desired-LRP events pass every
// cell filter, so probes of them reach every LRP stream.
func (s *server) sync(streams ...*stream) {
	s.t.Helper()
	s.syncWith(model.EventDesiredLRPRemoved, "process_guid", func(ev sse) string {
		r, _ := ev.msg.(*pb.DesiredLRPRemovedEvent)
		return r.GetDesiredLrp().GetProcessGuid()
	}, streams...)
}

// syncWith is sync with probes of the event name, whose data names the probe in the JSON
// field key, and which guidOf reads back off a stream ("" for any other event).
func (s *server) syncWith(name, key string, guidOf func(sse) string, streams ...*stream) {
	s.t.Helper()
	probe := func(n int) string {
		guid := fmt.Sprintf("probe-%d", n)
		if _, err := s.store.DB().ExecContext(s.t.Context(), `INSERT INTO events (name, data) VALUES ($1, $2)`,
			name, `{"`+key+`":"`+guid+`"}`); err != nil {
			s.t.Fatal(err)
		}
		return guid
	}
	n := 0
	for _, st := range streams {
		for got := false; !got; {
			n++
			probe(n)
			ev, ok := st.within(300 * time.Millisecond)
			got = ok && guidOf(ev) != ""
		}
	}
	last := probe(n + 1)
	for _, st := range streams {
		for guidOf(st.next()) != last {
		}
	}
}

// summary is an event in a line: its name and what it says of the instance.
func summary(ev sse) string {
	switch m := ev.msg.(type) {
	case *pb.ActualLRPInstanceCreatedEvent:
		return ev.name + " " + lrpSummary(m.GetActualLrp())
	case *pb.ActualLRPInstanceRemovedEvent:
		return ev.name + " " + lrpSummary(m.GetActualLrp())
	case *pb.ActualLRPInstanceChangedEvent:
		return fmt.Sprintf("%s %s>%s@%s", ev.name, m.GetBefore().GetState(), m.GetAfter().GetState(), m.GetActualLrpInstanceKey().GetCellId())
	case *pb.ActualLRPCrashedEvent:
		return fmt.Sprintf("%s %d@%s", ev.name, m.GetCrashCount(), m.GetActualLrpInstanceKey().GetCellId())
	case *pb.ActualLRPCreatedEvent:
		return ev.name + " " + lrpSummary(m.GetActualLrpGroup().GetInstance())
	case *pb.ActualLRPRemovedEvent:
		return ev.name + " " + lrpSummary(m.GetActualLrpGroup().GetInstance())
	case *pb.ActualLRPChangedEvent:
		return fmt.Sprintf("%s %s>%s", ev.name, m.GetBefore().GetInstance().GetState(), m.GetAfter().GetInstance().GetState())
	case *pb.DesiredLRPCreatedEvent:
		return ev.name + " " + m.GetDesiredLrp().GetProcessGuid()
	}
	return ev.name
}

func lrpSummary(a *pb.ActualLRP) string {
	return a.GetActualLrpKey().GetProcessGuid() + " " + a.GetState() + "@" + a.GetActualLrpInstanceKey().GetCellId()
}

// expect reads len(want) events and compares their summaries.
func (st *stream) expect(want ...string) []sse {
	st.t.Helper()
	var got []sse
	var lines []string
	for range want {
		ev, ok := st.within(10 * time.Second)
		if !ok {
			lines = append(lines, "(nothing more)")
			break
		}
		got = append(got, ev)
		lines = append(lines, summary(ev))
	}
	if !equal(lines, want) {
		st.t.Fatalf("%s:\n got %s\nwant %s", st.name, strings.Join(lines, "\n     "), strings.Join(want, "\n     "))
	}
	return got
}

// An instance's life driven through the store's lifecycle functions, as three instance
// streams (every cell, its cell, another cell) and the deprecated group stream see it.
func TestEventStreams(t *testing.T) {
	s := newStreamingServer(t)
	s.cell("cell-a", "z1")
	policy := model.DefaultRestartPolicy()
	policy.ImmediateRestarts = 1 // the first crash restarts at once, the second waits CRASHED
	s.store.SetRestartPolicy(policy)
	all := s.open(http.MethodPost, "/v1/events/lrp_instances.r1", "")
	onA := s.open(http.MethodPost, "/v1/events/lrp_instances.r1", "cell-a")
	onB := s.open(http.MethodPost, "/v1/events/lrp_instances.r1", "cell-b")
	groups := s.open(http.MethodGet, "/v1/events.r1", "")
	s.sync(all, onA, onB, groups)

	ctx := t.Context()
	s.desireModel(lrp("web", "cf-apps", 1))
	k := key("web", 0)
	s.run(k, cellA, netA)
	if _, err := s.store.CrashActualLRP(ctx, k, cellA, "exit 1", nil); err != nil { // back to UNCLAIMED at once
		t.Fatal(err)
	}
	s.run(k, cellA, netA)
	if _, err := s.store.CrashActualLRP(ctx, k, cellA, "exit 2", nil); err != nil { // CRASHED
		t.Fatal(err)
	}
	if err := s.store.RemoveActualLRP(ctx, k, model.PresenceOrdinary, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.desireModel(lrp("other", "cf-apps", 1))
	if _, err := s.store.FailActualLRP(ctx, key("other", 0), "insufficient resources", nil); err != nil { // UNCLAIMED → UNCLAIMED
		t.Fatal(err)
	}
	s.desireModel(lrp("last", "cf-apps", 0)) // a desired event, which every stream passes: the end

	want := []string{
		"desired_lrp_created web",
		"actual_lrp_instance_created web UNCLAIMED@",
		"actual_lrp_instance_changed UNCLAIMED>CLAIMED@cell-a",
		"actual_lrp_instance_changed CLAIMED>RUNNING@cell-a",
		"actual_lrp_crashed 1@cell-a",
		"actual_lrp_instance_created web UNCLAIMED@",
		"actual_lrp_instance_removed web RUNNING@cell-a",
		"actual_lrp_instance_changed UNCLAIMED>CLAIMED@cell-a",
		"actual_lrp_instance_changed CLAIMED>RUNNING@cell-a",
		"actual_lrp_crashed 2@cell-a",
		"actual_lrp_instance_changed RUNNING>CRASHED@cell-a",
		"actual_lrp_instance_removed web CRASHED@",
		"desired_lrp_created other",
		"actual_lrp_instance_created other UNCLAIMED@",
		"actual_lrp_instance_changed UNCLAIMED>UNCLAIMED@",
		"desired_lrp_created last",
	}
	got := all.expect(want...)
	var onCellA []string
	for _, w := range want {
		if strings.HasPrefix(w, "desired") || strings.HasSuffix(w, "@cell-a") {
			onCellA = append(onCellA, w)
		}
	}
	onA.expect(onCellA...)
	onB.expect("desired_lrp_created web", "desired_lrp_created other", "desired_lrp_created last")
	groups.expect(
		"desired_lrp_created web",
		"actual_lrp_created web UNCLAIMED@",
		"actual_lrp_changed UNCLAIMED>CLAIMED",
		"actual_lrp_changed CLAIMED>RUNNING",
		"actual_lrp_crashed 1@cell-a",
		"actual_lrp_changed RUNNING>UNCLAIMED",
		"actual_lrp_changed UNCLAIMED>CLAIMED",
		"actual_lrp_changed CLAIMED>RUNNING",
		"actual_lrp_crashed 2@cell-a",
		"actual_lrp_changed RUNNING>CRASHED",
		"actual_lrp_removed web CRASHED@",
		"desired_lrp_created other",
		"actual_lrp_created other UNCLAIMED@",
		"actual_lrp_changed UNCLAIMED>UNCLAIMED",
		"desired_lrp_created last",
	)

	// What tps-watcher and route-emitter read of them.
	started := got[3].msg.(*pb.ActualLRPInstanceChangedEvent)
	if b, a := started.GetBefore(), started.GetAfter(); b.Routable == nil || b.GetRoutable() || !a.GetRoutable() ||
		a.GetAvailabilityZone() != "z1" || a.GetActualLrpNetInfo().GetAddress() != "10.0.0.1" ||
		started.GetActualLrpKey().GetDefinitionId() != "web" || started.GetActualLrpInstanceKey().GetInstanceGuid() != "ig-a" {
		t.Errorf("the start = %v", started)
	}
	crash := got[4].msg.(*pb.ActualLRPCrashedEvent)
	if crash.GetCrashReason() != "exit 1" || crash.GetActualLrpInstanceKey().GetInstanceGuid() != "ig-a" ||
		crash.GetActualLrpKey().GetProcessGuid() != "web" || crash.GetSince() == 0 {
		t.Errorf("the first crash = %v", crash)
	}
	if r := got[6].msg.(*pb.ActualLRPInstanceRemovedEvent).GetActualLrp(); r.GetActualLrpInstanceKey().GetInstanceGuid() != "ig-a" || !r.GetRoutable() {
		t.Errorf("the crashed incarnation's removal = %v", r)
	}
}

// A stream whose request does not parse is BBS's bare 500; a server without events, a bare
// 503.
func TestEventStreamErrors(t *testing.T) {
	s := newServer(t) // no events
	for _, tc := range []struct {
		method, path string
		body         []byte
		status       int
	}{
		{http.MethodPost, "/v1/events/lrp_instances.r1", []byte{0xff, 0xff}, http.StatusInternalServerError},
		{http.MethodGet, "/v1/events.r1", []byte{0x08, 0x01}, http.StatusInternalServerError}, // cell_id with a number's wire type
		{http.MethodPost, "/v1/events/lrp_instances.r1", nil, http.StatusServiceUnavailable},
	} {
		req, _ := http.NewRequest(tc.method, s.url+tc.path, bytes.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(body) != 0 {
			t.Errorf("%s %s %x: %d %q, want %d and no body", tc.method, tc.path, tc.body, resp.StatusCode, body, tc.status)
		}
	}
}
