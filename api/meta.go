package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"go.uber.org/zap"
)

// Pinger is what the ping and health routes need of the database: whether it answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

type pingResponse struct {
	Available bool `json:"available"`
}

// ping reports whether the BBS can serve: schema in place and database answering.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	writeJSON(w, http.StatusOK, pingResponse{Available: s.ready.Load() && s.pinger.Ping(ctx) == nil})
}

// healthz is for process supervisors and load balancers: 200 when the database answers.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pinger.Ping(ctx); err != nil {
		s.log.Warn("health check: database unavailable", zap.String("request_id", middleware.GetReqID(r.Context())), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
		return
	}
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "migrating"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
