package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// The API serves the page at /ui/ — also while the schema is still being migrated, since the
// page asks again — and sends /ui there.
func TestTheAPIServesThePage(t *testing.T) {
	h := newUnreadyHarness(t)
	if rec := h.do(http.MethodGet, "/ui/", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<script type="module" src="app.js">`) {
		t.Fatalf("GET /ui/: %d %.200s", rec.Code, rec.Body)
	}
	if rec := h.do(http.MethodGet, "/ui", nil); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("GET /ui: %d %v", rec.Code, rec.Header())
	}
}
