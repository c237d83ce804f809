package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/recorders"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// cutStore is a store whose instance lists fail after the first instance, as when the
// database goes away in the middle of a list.
type cutStore struct{ *db.Store }

func (s cutStore) EachActualLRP(ctx context.Context, f model.ActualLRPFilter, fn func(*model.ActualLRP) error) error {
	if err := fn(&model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: "a", Domain: "d"}, State: model.StateRunning}); err != nil {
		return err
	}
	return errors.New("connection lost")
}

// TestListCutShortIsAbortedNotWhole: a list that fails after it began streaming aborts the
// response (no client takes a cut list for a whole one), and the metrics count it as
// aborted, not as a 200.
func TestListCutShortIsAbortedNotWhole(t *testing.T) {
	t.Parallel()
	store := dbtest.NewStore(t)
	d := deps(store, &recorders.Stopper{}, nil, zap.NewNop())
	d.Store = cutStore{store}
	server := api.NewServer(d)
	server.MarkReady()

	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("panic = %v, want http.ErrAbortHandler (the connection is cut)", p)
			}
		}()
		server.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/actual_lrps/list", strings.NewReader("{}")))
	}()
	if body := rec.Body.String(); strings.HasSuffix(strings.TrimSpace(body), "]}") {
		t.Fatalf("a cut list was closed as whole: %s", body)
	}

	metrics := httptest.NewRecorder()
	server.ServeHTTP(metrics, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(metrics.Body.String(), `bbs_http_requests_total{code="aborted",route="/v1/actual_lrps/list"} 1`) {
		t.Fatalf("the aborted list is not counted as aborted:\n%s", metrics.Body.String())
	}
}
