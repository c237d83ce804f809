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

// fuzzRoutes are the routes the fuzzer posts to, with the message each answers.
var fuzzRoutes = []struct {
	path string
	resp func() proto.Message
}{
	{"/v1/ping", func() proto.Message { return &pb.PingResponse{} }},
	{"/v1/domains/list", func() proto.Message { return &pb.DomainsResponse{} }},
	{"/v1/domains/upsert", func() proto.Message { return &pb.UpsertDomainResponse{} }},
	{"/v1/cells/list.r1", func() proto.Message { return &pb.CellsResponse{} }},
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
	f.Add(uint8(3), []byte{0xf8, 0x3e, 0x01}) // an unknown field 999
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rt := fuzzRoutes[int(which)%len(fuzzRoutes)]
		store := &recordingStore{}
		s := protocol.NewServer(store, zap.NewNop())
		s.MarkReady()
		req := httptest.NewRequest(http.MethodPost, rt.path, strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
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
