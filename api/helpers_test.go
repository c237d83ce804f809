package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/tasks"
	"go.uber.org/zap"
)

// harness is an API server over a fresh, migrated database of its own.
type harness struct {
	t        *testing.T
	store    *db.Store
	server   *api.Server
	stopper  *recorders.Stopper
	rollouts *recorders.Rollouts
	groups   *recorders.Groups
}

// newHarness returns a ready server with a recording Stopper.
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := newUnreadyHarness(t)
	h.server.MarkReady()
	return h
}

// newUnreadyHarness returns a server on which MarkReady has not been called.
func newUnreadyHarness(t *testing.T) *harness {
	t.Helper()
	store := dbtest.NewStore(t)
	stopper := &recorders.Stopper{}
	rollouts, groups := &recorders.Rollouts{}, &recorders.Groups{}
	d := deps(store, stopper, rollouts, zap.NewNop())
	d.LRPs.WithGroups(store, groups)
	server := api.NewServer(d)
	return &harness{t: t, store: store, server: server, stopper: stopper, rollouts: rollouts, groups: groups}
}

// deps are a server's parts over store as a process builds them, with stopper and rollouts
// (either may be nil: no cells, no Temporal) standing in for the cells and the workflows, and
// a task service with neither.
func deps(store *db.Store, stopper lrps.Stopper, rollouts lrps.Rollouts, log *zap.Logger) api.Deps {
	var gates *lrps.Gates
	if signals, ok := rollouts.(lrps.GateSignals); ok && rollouts != nil {
		gates = lrps.NewGates(store, signals, log)
	}
	return api.Deps{
		Store: store,
		Gates: gates,
		LRPs:  lrps.NewService(store, stopper, rollouts, log),
		Tasks: tasks.NewService(store, nil, model.DefaultMaxTaskRetries, log),
		Log:   log,
	}
}

// do sends one request through the server's handler.
func (h *harness) do(method, path string, body io.Reader) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.server.ServeHTTP(rec, req)
	return rec
}

// post sends body (raw text) to path.
func (h *harness) post(path, body string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(http.MethodPost, path, strings.NewReader(body))
}

// postJSON marshals v and sends it to path; a nil v sends an empty body (an empty request).
func (h *harness) postJSON(path string, v any) *httptest.ResponseRecorder {
	h.t.Helper()
	if v == nil {
		return h.post(path, "")
	}
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatalf("marshal request for %s: %v", path, err)
	}
	return h.do(http.MethodPost, path, bytes.NewReader(b))
}

// ok posts v to path, requires 200 with a JSON object, and returns it.
func (h *harness) ok(path string, v any) obj {
	h.t.Helper()
	rec := h.postJSON(path, v)
	if rec.Code != http.StatusOK {
		h.t.Fatalf("POST %s: status %d, want 200; body %s", path, rec.Code, rec.Body)
	}
	requireJSONContentType(h.t, rec)
	return decodeObject(h.t, rec.Body.Bytes())
}

// exec runs SQL directly against the test database.
func (h *harness) exec(query string, args ...any) {
	h.t.Helper()
	if _, err := h.store.DB().Exec(query, args...); err != nil {
		h.t.Fatalf("exec %q: %v", query, err)
	}
}

// count returns the number of rows in table.
func (h *harness) count(table string) int {
	h.t.Helper()
	var n int
	if err := h.store.DB().Get(&n, `SELECT count(*) FROM `+table); err != nil {
		h.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// rowCounts counts the rows of the tables a desire writes.
func (h *harness) rowCounts() map[string]int {
	h.t.Helper()
	out := map[string]int{}
	for _, table := range []string{"desired_lrps", "lrp_definitions", "actual_lrps"} {
		out[table] = h.count(table)
	}
	return out
}

// desire creates an LRP through the API and returns the desired_lrp of the response.
func (h *harness) desire(lrp obj) obj {
	h.t.Helper()
	return h.ok("/v1/desired_lrp/desire", obj{"desired_lrp": lrp}).obj(h.t, "desired_lrp")
}

// actuals lists instances through the API with the given filter.
func (h *harness) actuals(filter obj) []obj {
	h.t.Helper()
	return h.ok("/v1/actual_lrps/list", filter).list(h.t, "actual_lrps")
}

// makeRunning turns an instance into a RUNNING one on cell, as a cell agent would have.
func (h *harness) makeRunning(guid, definitionID string, index int, cell string) {
	h.t.Helper()
	res, err := h.store.DB().Exec(`UPDATE actual_lrps SET state = 'RUNNING', cell_id = $4,
    instance_guid = $1 || '-' || $3::text || '-ig', address = '10.0.0.1'
WHERE process_guid = $1 AND definition_id = $2 AND instance_index = $3 AND presence = 'ORDINARY'`,
		guid, definitionID, index, cell)
	if err != nil {
		h.t.Fatalf("make %s/%s/%d RUNNING: %v", guid, definitionID, index, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		h.t.Fatalf("make %s/%s/%d RUNNING: %d rows updated, want 1", guid, definitionID, index, n)
	}
}

// obj is a JSON object, to build requests and to read decoded responses.
type obj map[string]any

func (o obj) obj(t *testing.T, key string) obj       { t.Helper(); return getObj(t, o, key) }
func (o obj) list(t *testing.T, key string) []obj    { t.Helper(); return getList(t, o, key) }
func (o obj) str(t *testing.T, key string) string    { t.Helper(); return getString(t, o, key) }
func (o obj) integer(t *testing.T, key string) int64 { t.Helper(); return getInt(t, o, key) }

// decodeObject decodes a JSON object, keeping numbers exact.
func decodeObject(t *testing.T, b []byte) obj {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response is not JSON: %v; body %s", err, b)
	}
	if dec.More() {
		t.Fatalf("response has trailing data: %s", b)
	}
	o, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("response is not a JSON object: %s", b)
	}
	return obj(o)
}

func getObj(t *testing.T, o obj, key string) obj {
	t.Helper()
	v, ok := o[key]
	if !ok {
		t.Fatalf("no %q in %v", key, o)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%q is %T (%v), want an object", key, v, v)
	}
	return obj(m)
}

func getList(t *testing.T, o obj, key string) []obj {
	t.Helper()
	v, ok := o[key]
	if !ok {
		t.Fatalf("no %q in %v", key, o)
	}
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%q is %T (%v), want an array (not null)", key, v, v)
	}
	out := make([]obj, 0, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			t.Fatalf("%s[%d] is %T, want an object", key, i, e)
		}
		out = append(out, obj(m))
	}
	return out
}

func getString(t *testing.T, o obj, key string) string {
	t.Helper()
	v, ok := o[key]
	if !ok {
		t.Fatalf("no %q in %v", key, o)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%q is %T (%v), want a string", key, v, v)
	}
	return s
}

func getInt(t *testing.T, o obj, key string) int64 {
	t.Helper()
	v, ok := o[key]
	if !ok {
		t.Fatalf("no %q in %v", key, o)
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%q is %T (%v), want a number", key, v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%q = %v is not an integer", key, n)
	}
	return i
}

// requireKeys fails unless o has every key in required and no key outside allowed (required
// keys are allowed implicitly): the JSON field names of API.md, exactly.
func requireKeys(t *testing.T, what string, o obj, required, allowed []string) {
	t.Helper()
	for _, k := range required {
		if _, ok := o[k]; !ok {
			t.Errorf("%s: missing field %q in %v", what, k, keys(o))
		}
	}
	for k := range o {
		if !slices.Contains(required, k) && !slices.Contains(allowed, k) {
			t.Errorf("%s: unexpected field %q (fields: %v)", what, k, keys(o))
		}
	}
}

func keys(o obj) []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func requireJSONContentType(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	ct := rec.Header().Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}

// requireError checks an error response: the status, the type, and the exact shape
// {"error": {"type", "message"}} with a non-empty message, as JSON.
func requireError(t *testing.T, rec *httptest.ResponseRecorder, status int, typ model.ErrorType) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	gotType := requireErrorShape(t, rec)
	if gotType != string(typ) {
		t.Errorf("error type = %q, want %q; body %s", gotType, typ, rec.Body)
	}
}

// requireErrorShape checks the shape of an error response and returns its type.
func requireErrorShape(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	requireJSONContentType(t, rec)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &top); err != nil {
		t.Errorf("error body is not a JSON object: %v; body %q", err, rec.Body)
		return ""
	}
	if len(top) != 1 || top["error"] == nil {
		t.Errorf("error body has fields %v, want exactly \"error\"; body %s", rawKeys(top), rec.Body)
		return ""
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(top["error"], &inner); err != nil {
		t.Errorf("\"error\" is not an object: %s", rec.Body)
		return ""
	}
	if len(inner) != 2 || inner["type"] == nil || inner["message"] == nil {
		t.Errorf("\"error\" has fields %v, want exactly type and message; body %s", rawKeys(inner), rec.Body)
	}
	var typ, msg string
	if err := json.Unmarshal(inner["type"], &typ); err != nil || typ == "" {
		t.Errorf("error.type is not a non-empty string: %s", rec.Body)
	}
	if err := json.Unmarshal(inner["message"], &msg); err != nil || strings.TrimSpace(msg) == "" {
		t.Errorf("error.message is not a non-empty string: %s", rec.Body)
	}
	return typ
}

// errorMessage returns error.message of an error response.
func errorMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error model.Error `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body: %v", err)
	}
	return body.Error.Message
}

func rawKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lrp returns a valid DesiredLRP request object; extra fields are merged in (a nil value
// deletes the field).
func lrp(guid, domain string, instances int, extra obj) obj {
	o := obj{
		"process_guid": guid,
		"domain":       domain,
		"instances":    instances,
		"rootfs":       "docker:///busybox",
		"memory_mb":    128,
		"disk_mb":      256,
		"action": obj{"run": obj{
			"path": "/bin/sh",
			"args": []string{"-c", "exec ./server"},
		}},
		"log_guid": guid + "-logs",
	}
	for k, v := range extra {
		if v == nil {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
	return o
}

// definition returns a valid LRPDefinition object; extra fields are merged in.
func definition(extra obj) obj {
	o := obj{
		"rootfs":    "docker:///busybox",
		"memory_mb": 64,
		"disk_mb":   64,
		"action":    obj{"run": obj{"path": "/bin/true"}},
		"env":       []obj{{"name": "PORT", "value": "8080"}},
		"ports":     []int{8080},
	}
	for k, v := range extra {
		if v == nil {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
	return o
}

var errCellsUnreachable = errors.New("cells unreachable")
