package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/internal/scrape"
	"github.com/updatable-lrps/bbs/metrics"
)

// scrapeReg reads reg as Prometheus does, through metrics.Handler (scrape.Samples).
func scrapeReg(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	out, err := scrape.Samples(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
