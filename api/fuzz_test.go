package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// fuzzDecoder runs decodeAndValidate for one request type and returns the decoded request.
type fuzzDecoder struct {
	name   string
	decode func(body []byte) (any, error)
}

func fuzzDecoderFor[Req any](name string) fuzzDecoder {
	return fuzzDecoder{name: name, decode: func(body []byte) (any, error) {
		req, err := decodeAndValidate[Req](body)
		if err != nil {
			return nil, err
		}
		return req, nil
	}}
}

// fuzzDecoders is every request type the routes decode (see Server.routes).
var fuzzDecoders = []fuzzDecoder{
	fuzzDecoderFor[upsertDomainRequest]("upsertDomainRequest"),
	fuzzDecoderFor[listDomainsRequest]("listDomainsRequest"),
	fuzzDecoderFor[desireLRPRequest]("desireLRPRequest"),
	fuzzDecoderFor[processGUIDRequest]("processGUIDRequest"),
	fuzzDecoderFor[desiredLRPFilterRequest]("desiredLRPFilterRequest"),
	fuzzDecoderFor[updateDesiredLRPRequest]("updateDesiredLRPRequest"),
	fuzzDecoderFor[rollbackRequest]("rollbackRequest"),
	fuzzDecoderFor[createLRPDeploymentRequest]("createLRPDeploymentRequest"),
	fuzzDecoderFor[updateLRPDeploymentRequest]("updateLRPDeploymentRequest"),
	fuzzDecoderFor[actualLRPFilterRequest]("actualLRPFilterRequest"),
	fuzzDecoderFor[actualLRPGroupsFilterRequest]("actualLRPGroupsFilterRequest"),
	fuzzDecoderFor[actualLRPGroupByIndexRequest]("actualLRPGroupByIndexRequest"),
	fuzzDecoderFor[retireRequest]("retireRequest"),
	fuzzDecoderFor[rolloutFilterRequest]("rolloutFilterRequest"),
	fuzzDecoderFor[setPaceRequest]("setPaceRequest"),
	fuzzDecoderFor[abortRequest]("abortRequest"),
	fuzzDecoderFor[promoteRequest]("promoteRequest"),
	fuzzDecoderFor[listCellsRequest]("listCellsRequest"),
	fuzzDecoderFor[desireTaskRequest]("desireTaskRequest"),
	fuzzDecoderFor[tasksRequest]("tasksRequest"),
	fuzzDecoderFor[taskGUIDRequest]("taskGUIDRequest"),
	fuzzDecoderFor[startTaskRequest]("startTaskRequest"),
	fuzzDecoderFor[completeTaskRequest]("completeTaskRequest"),
	fuzzDecoderFor[rejectTaskRequest]("rejectTaskRequest"),
	fuzzDecoderFor[claimStopRequest]("claimStopRequest"),
	fuzzDecoderFor[routerReportRequest]("routerReportRequest"),
	fuzzDecoderFor[createGroupRequest]("createGroupRequest"),
	fuzzDecoderFor[groupRequest]("groupRequest"),
	fuzzDecoderFor[listGroupsRequest]("listGroupsRequest"),
	fuzzDecoderFor[windowRequest]("windowRequest"),
	fuzzDecoderFor[windowNameRequest]("windowNameRequest"),
	fuzzDecoderFor[freezeRequest]("freezeRequest"),
	fuzzDecoderFor[struct{}]("emptyRequest"),
}

// isJSONSpace reports whether body is empty or only JSON whitespace (RFC 8259: space, tab,
// line feed, carriage return): an empty request.
func isJSONSpace(body []byte) bool {
	return len(bytes.Trim(body, " \t\r\n")) == 0
}

func FuzzDecodeRequests(f *testing.F) {
	// A few seeds inline; the rest live in testdata/fuzz/FuzzDecodeRequests.
	f.Add([]byte(`{"desired_lrp":{"process_guid":"web-1","domain":"cf-apps","instances":1,"rootfs":"docker:///busybox","action":{"run":{"path":"/bin/sh"}}}}`))
	f.Add([]byte(`{"task":{"task_guid":"t-1","domain":"cf-tasks","rootfs":"preloaded:x","action":{"run":{"path":"/bin/true"}},"result_file":"/r","completion_callback_url":"https://cc/x"}}`))
	f.Add([]byte(`{"task_guid":"t-1","cell_id":"c","failed":true,"failure_reason":"x"}`))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Add([]byte(`{`))
	f.Add([]byte(`{"process_guid":"web 1"}`))
	f.Add([]byte(`{"process_guid":"web-1","update":{"definition_id":"v2","definition":{"rootfs":"x","action":{"run":{"path":"/a"}}}},"strategy":{"max_in_flight":2,"canary":{"steps":[{"instances":1}]}}}`))
	f.Add([]byte(`{"process_guid":"web-1","max_in_flight":3,"reason":"x"}`))
	f.Add([]byte(`{"router_id":"r-1:8080","started_at":1,"applied":{"web":3},"telemetry":[{"process_guid":"web","definition_id":"v2","requests":1,"errors":0,"latency":[1],"duration_us":5}]}`))
	f.Add([]byte(`{"name":"maintenance","schedule":[{"days":["mon","sat"],"start":"22:00","end":"02:00","time_zone":"Europe/Berlin"}]}`))
	f.Add([]byte(`{"name":"m","schedule":[{"days":["mon"],"start":"09:00","end":"09:00","time_zone":"Local","x":1}]}`))
	f.Add([]byte(`{"reason":"incident 42"}`))
	f.Add([]byte(`{"process_guid":"web-1","index":-1,"actual_lrp_key":{"process_guid":"web-1","index":0,"domain":"d"}}`))
	f.Add([]byte(`{"group_id":"g","selector":{"domain":"cf-apps","metric_tags":{"space":"s"}},"patch":{"rootfs":"preloaded:x","env":[{"name":"A","value":"b"}]},"waves":[{"percent":1},{"percent":100}],"max_concurrent_lrps":5,"max_concurrent_per_cell":2,"max_failed_percent":5,"pause_between_waves_ms":10}`))
	f.Add([]byte(`{"group_id":"g","selector":{"process_guids":["a"]},"patch":{"rootfs":"preloaded:x","rootf":"y"}}`))
	f.Add([]byte(`{"group_id":"g","reason":"bad stack"}`))

	f.Fuzz(func(t *testing.T, body []byte) {
		valid := json.Valid(body)
		blank := isJSONSpace(body)
		object := valid && bytes.TrimLeft(body, " \t\r\n")[0] == '{'

		for _, d := range fuzzDecoders {
			req, err := fuzzDecode(t, d, body)
			if err == nil {
				switch {
				case req == nil:
					t.Fatalf("%s: nil request and nil error for %q", d.name, body)
				case !valid && !blank:
					t.Fatalf("%s: accepted a body that is not JSON: %q", d.name, body)
				case valid && !object:
					t.Fatalf("%s: accepted JSON that is not an object: %q", d.name, body)
				}
				fuzzRoundTrip(t, d.name, req)
				continue
			}
			me, ok := err.(*model.Error)
			if !ok || me == nil {
				t.Fatalf("%s: error %v (%T) is not a *model.Error, for %q", d.name, err, err, body)
			}
			if me.Message == "" {
				t.Fatalf("%s: %s error without a message, for %q", d.name, me.Type, body)
			}
			switch me.Type {
			case model.ErrInvalidJSON:
				if valid || blank {
					t.Fatalf("%s: InvalidJSON for a body that is JSON or empty: %q (%v)", d.name, body, err)
				}
			case model.ErrInvalidRequest:
				if !valid && !blank {
					t.Fatalf("%s: InvalidRequest, want InvalidJSON, for a body that is not JSON: %q (%v)", d.name, body, err)
				}
			default:
				t.Fatalf("%s: error type %s, want InvalidJSON or InvalidRequest, for %q (%v)", d.name, me.Type, body, err)
			}
			if valid && !object && !blank && me.Type != model.ErrInvalidRequest {
				t.Fatalf("%s: JSON that is not an object gave %s, want InvalidRequest: %q", d.name, me.Type, body)
			}
		}
	})
}

// fuzzDecode calls the decoder, turning a panic into a test failure that names the request type.
func fuzzDecode(t *testing.T, d fuzzDecoder, body []byte) (req any, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic %v for %q", d.name, p, body)
		}
	}()
	return d.decode(body)
}

// fuzzRoundTrip checks that what a request decoded to survives a JSON round trip: encoding it
// and decoding that again validates, and encodes to the same bytes. For a desire request this
// is the DesiredLRP the API stores and later returns.
func fuzzRoundTrip(t *testing.T, name string, req any) {
	t.Helper()
	var body []byte
	var err error
	var again func([]byte) (any, error)
	switch r := req.(type) {
	case *desireLRPRequest:
		if r.DesiredLRP == nil {
			t.Fatalf("%s: accepted without a desired_lrp", name)
		}
		body, err = json.Marshal(r)
		again = fuzzDecoderFor[desireLRPRequest](name).decode
	case *createLRPDeploymentRequest:
		// What the store is given is the DesiredLRP built from the request.
		if r.desired == nil {
			t.Fatalf("%s: accepted without building a DesiredLRP", name)
		}
		body, err = json.Marshal(desireLRPRequest{DesiredLRP: r.desired})
		again = fuzzDecoderFor[desireLRPRequest](name + " as desire").decode
	case *updateDesiredLRPRequest:
		body, err = json.Marshal(r)
		again = fuzzDecoderFor[updateDesiredLRPRequest](name).decode
	case *updateLRPDeploymentRequest:
		if r.update == nil {
			t.Fatalf("%s: accepted without building a DesiredLRPUpdate", name)
		}
		body, err = json.Marshal(updateDesiredLRPRequest{ProcessGUID: r.ProcessGUID, Update: r.update})
		again = fuzzDecoderFor[updateDesiredLRPRequest](name + " as update").decode
	default:
		body, err = json.Marshal(req)
		again = func(b []byte) (any, error) {
			for _, d := range fuzzDecoders {
				if d.name == name {
					return d.decode(b)
				}
			}
			return nil, fmt.Errorf("no decoder %s", name)
		}
	}
	if err != nil {
		t.Fatalf("%s: re-encoding %+v: %v", name, req, err)
	}
	req2, err := again(body)
	if err != nil {
		t.Fatalf("%s: re-encoded request does not validate: %v\nre-encoded: %s", name, err, truncate(body))
	}
	body2, err := json.Marshal(req2)
	if err != nil {
		t.Fatalf("%s: re-encoding again: %v", name, err)
	}
	if !bytes.Equal(body, body2) {
		t.Fatalf("%s: encoding is not stable across a round trip:\nfirst:  %s\nsecond: %s", name, truncate(body), truncate(body2))
	}
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// TestDecodeRequestsCorpusSize keeps the checked-in seed corpus from silently shrinking.
func TestDecodeRequestsCorpusSize(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecodeRequests"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 25 {
		t.Fatalf("the seed corpus has %d entries, want at least 25", len(entries))
	}
}
