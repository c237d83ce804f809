package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/metrics"
)

// requestMetrics are the API's request series and the /metrics handler that serves them,
// over the registry Deps.Metrics names (or one of the server's own).
type requestMetrics struct {
	http   *metrics.HTTP
	served http.Handler
}

func newRequestMetrics(reg *prometheus.Registry) *requestMetrics {
	return &requestMetrics{http: metrics.NewHTTP(reg), served: metrics.Handler(reg)}
}

func (m *requestMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.served.ServeHTTP(w, r) }

func (m *requestMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		aborted := true // until the handler returns: a streamed list cut short panics out
		defer func() {
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			m.http.Observe(route, statusLabel(ww.Status(), aborted), time.Since(start))
		}()
		next.ServeHTTP(ww, r)
		aborted = false
	})
}

// statusLabel is a response's status for metrics and logs; "aborted" for a response cut
// short after it began (its status line said 200).
func statusLabel(status int, aborted bool) string {
	if aborted {
		return "aborted"
	}
	return strconv.Itoa(status)
}
