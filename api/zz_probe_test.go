package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"go.uber.org/zap"
)

func TestZZProbe(t *testing.T) {
	s := api.NewServer(dbtest.NewStore(t), nil, zap.NewNop())
	s.MarkReady()
	lrp := `{"desired_lrp":{"process_guid":"p1","domain":"D","instances":2,"rootfs":"docker:///x","action":{"run":{"path":"/bin/true"}}%s}}`
	for _, c := range []struct{ path, body string }{
		{"/v1/desired_lrp/desire", strings.Replace(lrp, "%s", `,"annotation":"a\u0000b"`, 1)},
		{"/v1/desired_lrp/desire", strings.Replace(strings.Replace(lrp, "%s", `,"env":[{"name":"X","value":"a\u0000b"}]`, 1), "p1", "p2", 1)},
		{"/v1/desired_lrp/desire", strings.Replace(strings.Replace(lrp, "%s", `,"egress_rules":[1e1000000]`, 1), "p1", "p3", 1)},
		{"/v1/desired_lrp/desire", strings.Replace(strings.Replace(lrp, "%s", `,"egress_rules":`+strings.Repeat("[", 9000)+strings.Repeat("]", 9000), 1), "p1", "p4", 1)},
		{"/v1/desired_lrp/desire", strings.Replace(strings.Replace(lrp, "%s", `,"metric_tags":{"a\u0000":1}`, 1), "p1", "p5", 1)},
		{"/v1/desired_lrp/desire", strings.Replace(strings.Replace(lrp, "%s", `,"routes":{"a\u0000":1}`, 1), "p1", "p6", 1)},
		{"/v1/desired_lrps/list", `{"domain":"\u0000"}`},
		{"/v1/actual_lrps/list", `{"cell_id":"\u0000"}`},
		{"/v1/domains/upsert", `{"domain":"\u0000"}`},
		{"/v1/ping", `{`},
		{"/v1/nope", `{`},
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
		t.Logf("%s %.60s -> %d %s", c.path, c.body, rec.Code, rec.Body.String())
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(m, "/v1/ping", nil))
		t.Logf("%s -> %d %s", m, rec.Code, rec.Body.String())
	}
	_ = http.StatusOK
}
