package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestUnavailableDatabaseKeepsItsAnswerAndLogsItsCause: a client of a database that cannot
// answer gets the same 503 as ever, and the log says why, under the request's id.
func TestUnavailableDatabaseKeepsItsAnswerAndLogsItsCause(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	server := api.NewServer(deps(dbtest.NewStore(t), &recorders.Stopper{}, nil, zap.New(core)))
	server.MarkReady()

	// A deadline already past: the store's query fails with context.DeadlineExceeded, which
	// the db layer reports as "database unavailable".
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/domains/list", strings.NewReader("{}"))
	req.Header.Set(middleware.RequestIDHeader, "req-503")
	rec := httptest.NewRecorder()
	server.ServeHTTP(rec, req)

	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; body %s", rec.Code, rec.Body)
	}
	if got, want := rec.Body.String(), `{"error":{"type":"Unavailable","message":"database unavailable"}}`+"\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	entries := logs.FilterMessage("request failed").FilterField(zap.String("request_id", "req-503")).All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries for the request, want 1; all: %+v", len(entries), logs.All())
	}
	e := entries[0]
	fields := e.ContextMap()
	if e.Level != zapcore.WarnLevel || fields["path"] != "/v1/domains/list" || fields["type"] != "Unavailable" {
		t.Fatalf("log entry %+v", e)
	}
	if msg, _ := fields["error"].(string); !strings.Contains(msg, "database unavailable") || !strings.Contains(msg, "context deadline exceeded") {
		t.Fatalf("logged error %q does not carry the cause", fields["error"])
	}
}

// TestUnavailableWithoutCauseIsNotLogged: a 503 that says all there is (the schema is being
// migrated) does not fill the log while every request gets it.
func TestUnavailableWithoutCauseIsNotLogged(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	server := api.NewServer(deps(dbtest.NewStore(t), &recorders.Stopper{}, nil, zap.New(core)))
	rec := httptest.NewRecorder()
	server.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/domains/list", strings.NewReader("{}")))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
	if n := logs.FilterMessage("request failed").Len(); n != 0 {
		t.Fatalf("%d log entries, want none: %+v", n, logs.All())
	}
}
