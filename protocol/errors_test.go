package protocol_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// Bad input gets BBS's InvalidRequest in a 200 protobuf answer and changes nothing.
func TestBadInputIsAnInvalidRequestAndChangesNothing(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name string
		body []byte
		msg  string
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, "the request received is invalid"},
		{"truncated", mustMarshal(t, &pb.UpsertDomainRequest{Domain: "cf-apps", Ttl: 1})[:4], "the request received is invalid"},
		{"string not UTF-8", []byte{0x0a, 0x02, 0xc3, 0x28}, "the request received is invalid"},
		{"wrong wire type for a field", []byte{0x08, 0x01}, "the request received is invalid"},
		{"oversized", bytes.Repeat([]byte{0x0a}, model.MaxRequestBytes+1), "larger than"},
		{"empty domain", mustMarshal(t, &pb.UpsertDomainRequest{Ttl: 5}), "Invalid field: domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, b := s.postRaw("/v1/domains/upsert", tc.body)
			if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/x-protobuf" {
				t.Fatalf("%d %q", r.StatusCode, r.Header.Get("Content-Type"))
			}
			var resp pb.UpsertDomainResponse
			if err := proto.Unmarshal(b, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.GetError().GetType() != pb.Error_InvalidRequest || !strings.Contains(resp.GetError().GetMessage(), tc.msg) {
				t.Fatalf("error = %v, want InvalidRequest saying %q", resp.GetError(), tc.msg)
			}
		})
	}
	if fresh, err := s.store.FreshDomains(t.Context()); err != nil || len(fresh) != 0 {
		t.Fatalf("domains after bad requests: %v, %v", fresh, err)
	}
}

// A route we do not serve answers a plain-text 404: BBS clients take it for "endpoint not
// found" and fall back (the rep from start.r1 to start, route-emitter from routing infos to
// desired LRPs).
func TestUnknownRouteIsAPlainTextNotFound(t *testing.T) {
	s := newServer(t)
	for _, path := range []string{"/v1/no/such/route", "/v1/actual_lrps/start.r9"} {
		r, _ := s.postRaw(path, nil)
		if r.StatusCode != http.StatusNotFound || strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
			t.Fatalf("%s: %d %q", path, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}

// Until the migrations are in place the whole listener answers 503 with no body, as BBS
// does.
func TestNotReadyIsABare503(t *testing.T) {
	s := protocol.NewServer(protocol.Deps{Log: zaptest.NewLogger(t)})
	req, _ := http.NewRequest(http.MethodPost, "/v1/ping", nil)
	w := newRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || w.Body.Len() != 0 {
		t.Fatalf("%d %q", w.Code, w.Body.String())
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
