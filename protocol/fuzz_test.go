package protocol_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// recordingStore is a store that keeps what is written, for the fuzzer: a request answered
// with an error must have written nothing.
type recordingStore struct {
	mu     sync.Mutex
	writes int
}

func (s *recordingStore) Ping(context.Context) error { return nil }
func (s *recordingStore) UpsertDomain(_ context.Context, d model.Domain) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}
func (s *recordingStore) FreshDomains(context.Context) ([]string, error) {
	return []string{"cf-apps"}, nil
}
func (s *recordingStore) Cells(context.Context) ([]model.CellPresence, error) {
	return []model.CellPresence{{CellID: "c", Zone: "z"}}, nil
}
func (s *recordingStore) UpsertCell(context.Context, model.CellPresence, time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}
func (s *recordingStore) RemoveCell(context.Context, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return nil
}

// The instances the fake store holds: two definitions at index 0 of one LRP (a rollout), a
// suspect and an evacuating record, so that every list and group path has work.
var fuzzInstances = []model.ActualLRP{
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d1", Index: 0, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i1", CellID: "c"}, State: model.StateRunning,
		Presence: model.PresenceOrdinary, AvailabilityZone: "z",
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d1", Index: 0, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i0", CellID: "c0"}, State: model.StateRunning,
		Presence: model.PresenceEvacuating},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d2", Index: 0, Domain: "cf-apps"},
		State: model.StateUnclaimed, Presence: model.PresenceOrdinary},
	{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "p", DefinitionID: "d2", Index: 1, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "i2", CellID: "gone"}, State: model.StateRunning,
		Presence: model.PresenceSuspect},
}

func (s *recordingStore) ActualLRPs(ctx context.Context, f model.ActualLRPFilter) ([]model.ActualLRP, error) {
	var out []model.ActualLRP
	err := s.EachActualLRP(ctx, f, func(a *model.ActualLRP) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

func (s *recordingStore) EachActualLRP(_ context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error {
	for _, a := range fuzzInstances {
		if (f.ProcessGUID == "" || f.ProcessGUID == a.ProcessGUID) && (f.CellID == "" || f.CellID == a.CellID) &&
			(f.Domain == "" || f.Domain == a.Domain) && (f.DefinitionID == "" || f.DefinitionID == a.DefinitionID) &&
			(f.Index == nil || *f.Index == a.Index) {
			if err := fn(&a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *recordingStore) ActualLRPGroupByProcessGUIDAndIndex(ctx context.Context, guid string, index int32) (*model.ActualLRPGroup, error) {
	lrps, _ := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid, Index: &index})
	groups := model.GroupActualLRPs(lrps)
	if len(groups) == 0 {
		return nil, model.Errorf(model.ErrResourceNotFound, "no instance")
	}
	return &groups[0], nil
}

func (s *recordingStore) RetireActualLRP(_ context.Context, key model.ActualLRPKey) (*model.ActualLRP, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return &fuzzInstances[0], nil
}

// countingStopper counts the stops retire asks for: writes too.
type countingStopper struct{ store *recordingStore }

func (s countingStopper) StopInstances(context.Context, []model.ActualLRP) error {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	s.store.writes++
	return nil
}

// endedEvents is an event source whose subscriptions have already ended (as when a
// subscriber falls behind): a stream that starts returns at once, so that the fuzzer can
// call the stream routes like the others.
type endedEvents struct{}

func (endedEvents) Subscribe() (<-chan model.Event, func()) {
	ch := make(chan model.Event)
	close(ch)
	return ch, func() {}
}

// fuzzRoutes are the routes the fuzzer calls, with the message each answers (nil: an event
// stream).
var fuzzRoutes = []struct {
	path string
	resp func() proto.Message
}{
	{"/v1/ping", func() proto.Message { return &pb.PingResponse{} }},
	{"/v1/domains/list", func() proto.Message { return &pb.DomainsResponse{} }},
	{"/v1/domains/upsert", func() proto.Message { return &pb.UpsertDomainResponse{} }},
	{"/v1/cells/list.r1", func() proto.Message { return &pb.CellsResponse{} }},
	{"/v1/actual_lrps/list", func() proto.Message { return &pb.ActualLRPsResponse{} }},
	{"/v1/actual_lrps/list_by_process_guids", func() proto.Message { return &pb.ActualLRPsByProcessGuidsResponse{} }},
	{"/v1/actual_lrp_groups/list", func() proto.Message { return &pb.ActualLRPGroupsResponse{} }},
	{"/v1/actual_lrp_groups/list_by_process_guid", func() proto.Message { return &pb.ActualLRPGroupsResponse{} }},
	{"/v1/actual_lrp_groups/get_by_process_guid_and_index", func() proto.Message { return &pb.ActualLRPGroupResponse{} }},
	{"/v1/actual_lrps/retire", func() proto.Message { return &pb.ActualLRPLifecycleResponse{} }},
	{"POST /v1/events/lrp_instances.r1", nil},
	{"GET /v1/events.r1", nil},
}

// FuzzRequests posts arbitrary bytes to every route: the answer is always a 200 protobuf
// message of the route's response type, never a panic or a 500, and an answer carrying an
// error wrote nothing. `make fuzz` runs it; `make test` replays testdata/fuzz.
func FuzzRequests(f *testing.F) {
	f.Add(uint8(2), []byte{})
	f.Add(uint8(2), []byte{0x0a, 0x07, 'c', 'f', '-', 'a', 'p', 'p', 's', 0x10, 0x78})
	f.Add(uint8(2), []byte{0x08, 0x01})
	f.Add(uint8(2), []byte{0x0a, 0x02, 0xc3, 0x28})
	f.Add(uint8(0), []byte{0xff})
	f.Add(uint8(3), []byte{0xf8, 0x3e, 0x01})                                                      // an unknown field 999
	f.Add(uint8(4), []byte{0x1a, 0x01, 'p', 0x20, 0x00})                                           // actual_lrps/list {process_guid p, index 0}
	f.Add(uint8(4), []byte{0x20, 0xff, 0xff, 0xff, 0xff, 0x0f})                                    // index -1
	f.Add(uint8(5), []byte{0x0a, 0x01, 'p', 0x0a, 0x01, 'p', 0x0a, 0x00})                          // list_by_process_guids p, p, ""
	f.Add(uint8(8), []byte{0x0a, 0x01, 'p', 0x10, 0x01})                                           // group of p at index 1
	f.Add(uint8(9), []byte{0x0a, 0x0b, 0x0a, 0x01, 'p', 0x1a, 0x06, 'c', 'f', '-', 'a', 'p', 'p'}) // retire p/0 in cf-app
	f.Add(uint8(9), []byte{0x0a, 0x00})                                                            // retire an empty key
	f.Add(uint8(10), []byte{0x0a, 0x01, 'c'})                                                      // instance events of cell c
	f.Add(uint8(11), []byte{0x0a, 0x01})                                                           // group events, truncated
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rt := fuzzRoutes[int(which)%len(fuzzRoutes)]
		store := &recordingStore{}
		s := protocol.NewServer(store, zap.NewNop()).WithStopper(countingStopper{store}).WithEvents(endedEvents{})
		s.MarkReady()
		method, path := http.MethodPost, rt.path
		if m, p, ok := strings.Cut(rt.path, " "); ok {
			method, path = m, p
		}
		req := httptest.NewRequest(method, path, strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if rt.resp == nil {
			// An event stream: BBS's bare 500 for a request that does not parse, else the
			// stream's headers (and, its subscription over, nothing more).
			parses := proto.Unmarshal(body, &pb.EventsByCellId{}) == nil
			switch {
			case w.Code == http.StatusInternalServerError && w.Body.Len() == 0:
			case w.Code == http.StatusOK && w.Header().Get("Content-Type") == "text/event-stream; charset=utf-8" && parses:
			default:
				t.Fatalf("%s: %d %q %q", rt.path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
			}
			if store.writes != 0 {
				t.Fatalf("%s: a stream wrote %d times", rt.path, store.writes)
			}
			return
		}
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/x-protobuf" {
			t.Fatalf("%s: %d %q", rt.path, w.Code, w.Header().Get("Content-Type"))
		}
		resp := rt.resp()
		if err := proto.Unmarshal(w.Body.Bytes(), resp); err != nil {
			t.Fatalf("%s: answer does not decode as %T: %v", rt.path, resp, err)
		}
		if e, ok := resp.(interface{ GetError() *pb.Error }); ok && e.GetError() != nil {
			if store.writes != 0 {
				t.Fatalf("%s: answered %v but wrote %d times", rt.path, e.GetError(), store.writes)
			}
			if e.GetError().GetType() == pb.Error_UnknownError {
				t.Fatalf("%s: unknown error for bad input: %v", rt.path, e.GetError())
			}
		}
	})
}
