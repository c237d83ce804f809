package compat

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs"
	"code.cloudfoundry.org/bbs/models"
)

// served are the routes of the real client (bbs.Routes, by rata name) that our listener
// answers today. When the listener serves one more, add it here: TestEveryClientRoute then
// expects it to answer, and the cases that go through it (errors_test.go) run instead of
// waiting for it.
var served = map[string]bool{
	bbs.PingRoute_r0:         true,
	bbs.DomainsRoute_r0:      true,
	bbs.UpsertDomainRoute_r0: true,
	bbs.CellsRoute_r0:        true,

	bbs.ActualLRPsRoute_r0:                          true,
	bbs.ActualLRPsByProcessGuidsRoute_r0:            true,
	bbs.ActualLRPGroupsRoute_r0:                     true,
	bbs.ActualLRPGroupsByProcessGuidRoute_r0:        true,
	bbs.ActualLRPGroupByProcessGuidAndIndexRoute_r0: true,
	bbs.RetireActualLRPRoute_r0:                     true,
	bbs.LRPInstanceEventStreamRoute_r1:              true,
	bbs.LRPGroupEventStreamRoute_r1:                 true,

	bbs.DesireDesiredLRPRoute_r2:                 true,
	bbs.DesiredLRPByProcessGuidRoute_r3:          true,
	bbs.DesiredLRPByProcessGuidRoute_r2:          true,
	bbs.DesiredLRPsRoute_r3:                      true,
	bbs.DesiredLRPsRoute_r2:                      true,
	bbs.DesiredLRPSchedulingInfosRoute_r0:        true,
	bbs.DesiredLRPSchedulingInfoByProcessGuid_r0: true,
	bbs.DesiredLRPRoutingInfosRoute_r0:           true,
	bbs.UpdateDesiredLRPRoute_r0:                 true,
	bbs.RemoveDesiredLRPRoute_r0:                 true,

	bbs.DesireTaskRoute_r2:      true,
	bbs.TasksRoute_r3:           true,
	bbs.TasksRoute_r2:           true,
	bbs.TaskByGuidRoute_r3:      true,
	bbs.TaskByGuidRoute_r2:      true,
	bbs.StartTaskRoute_r0:       true,
	bbs.CompleteTaskRoute_r0:    true,
	bbs.RejectTaskRoute_r0:      true,
	bbs.FailTaskRoute_r0:        true,
	bbs.CancelTaskRoute_r0:      true,
	bbs.ResolvingTaskRoute_r0:   true,
	bbs.DeleteTaskRoute_r0:      true,
	bbs.TaskEventStreamRoute_r1: true,
	bbs.TaskEventStreamRoute_r0: true,
}

// isEventStream says whether a route of the real client is one of BBS's SSE streams.
func isEventStream(path string) bool { return strings.HasPrefix(path, "/v1/events") }

// TestEveryClientRoute calls every route the real client knows, with an empty body (a valid,
// all-defaults message to BBS): a served route answers 200 with a protobuf (or, for an event
// stream, an SSE stream), and any other route a 404 that is not protobuf, which the client
// turns into EndpointNotFoundErr — how the rep and route-emitter fall back to older
// revisions of a route. Any other answer (405, 500, a protobuf 404) would break them.
func TestEveryClientRoute(t *testing.T) {
	for _, r := range bbs.Routes {
		t.Run(r.Name, func(t *testing.T) {
			status, ctype := call(t, r.Method, sys.protocolURL+r.Path)
			wantType := protoContentType
			if isEventStream(r.Path) {
				wantType = "text/event-stream"
			}
			answered := status == http.StatusOK && ctype == wantType
			notFound := status == http.StatusNotFound && ctype != protoContentType
			switch {
			case served[r.Name] && !answered:
				t.Errorf("%s %s answers %d %q, want 200 %q", r.Method, r.Path, status, ctype, wantType)
			case !served[r.Name] && answered:
				t.Errorf("%s %s is served now (200 %q): add %s to served in routes_test.go, "+
					"which runs the tests that wait for it", r.Method, r.Path, ctype, r.Name)
			case !served[r.Name] && !notFound:
				t.Errorf("%s %s answers %d %q: a route the listener does not serve must answer 404 "+
					"with a content type other than %s", r.Method, r.Path, status, ctype, protoContentType)
			}
		})
	}
}

// call sends an empty request as the real client would (Content-Type protobuf, except on the
// event streams) and returns the status and media type of the answer, without reading an
// event stream's body.
func call(t *testing.T, method, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(url, "/v1/events") {
		req.Header.Set("Content-Type", protoContentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, mediaType(resp.Header.Get("Content-Type"))
}

// TestUnknownRouteIsEndpointNotFound: a path no BBS serves answers a plain 404, and the real
// client, meeting it, returns its EndpointNotFoundErr after trying DefaultRetryCount times
// (500 ms apart): a fallback on 404 costs an old client about 1.5 s.
func TestUnknownRouteIsEndpointNotFound(t *testing.T) {
	status, ctype := call(t, http.MethodPost, sys.protocolURL+"/v1/compat/no_such_route")
	if status != http.StatusNotFound || ctype == protoContentType {
		t.Errorf("POST /v1/compat/no_such_route answers %d %q, want 404 and not %s", status, ctype, protoContentType)
	}

	// The client builds its URLs as base URL + route path, so a base with a path of its own
	// makes every route of the client one that we do not serve.
	target, err := url.Parse(sys.protocolURL)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()
	c := clientAt(t, counting.URL+"/not-a-bbs")

	start := time.Now()
	domains, err := c.Domains(testLogger(t), traceID(t))
	took := time.Since(start)
	if !errors.Is(err, bbs.EndpointNotFoundErr) {
		t.Fatalf("Domains through a path we do not serve = %q, %v; want bbs.EndpointNotFoundErr", domains, err)
	}
	var merr *models.Error
	if !errors.As(err, &merr) || merr.Type != models.Error_InvalidResponse || merr.Message != "Invalid Response with status code: 404" {
		t.Errorf("the error is %#v, want InvalidResponse %q", err, "Invalid Response with status code: 404")
	}
	if n := requests.Load(); n != bbs.DefaultRetryCount {
		t.Errorf("the client sent %d requests, want %d (it retries a non-protobuf answer)", n, bbs.DefaultRetryCount)
	}
	t.Logf("the client gave up after %d requests in %s", requests.Load(), took.Round(10*time.Millisecond))

	// Ping turns every failure into false.
	if c.Ping(testLogger(t), traceID(t)) {
		t.Error("Ping through a path we do not serve = true, want false")
	}
}
