package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// references are the files a page or script loads: src and href attributes, and imports.
var references = regexp.MustCompile(`(?:src|href)="([^"#]+)"|from "([^"]+)"|import\("([^"]+)"\)`)

// The page and every file it loads are served from the binary, under the prefix, with a
// policy that lets the page load nothing from anywhere else; nothing it loads names another
// origin; a file that is not there is a 404.
func TestThePageLoadsOnlyWhatTheBinaryServes(t *testing.T) {
	h := Handler("/ui/")
	page := get(t, h, "/ui/")
	if page.Code != http.StatusOK || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ui/: %d %s", page.Code, page.Header().Get("Content-Type"))
	}
	csp := page.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	types := map[string]string{".js": "text/javascript", ".css": "text/css"}
	seen := map[string]bool{}
	queue := []string{"index.html"}
	bodies := map[string]string{"index.html": page.Body.String()}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, m := range references.FindAllStringSubmatch(bodies[name], -1) {
			ref := m[1] + m[2] + m[3]
			if strings.Contains(ref, "//") || strings.HasPrefix(ref, "/") {
				t.Errorf("%s loads %q: not a file of the page", name, ref)
				continue
			}
			ref = strings.TrimPrefix(ref, "./")
			if seen[ref] {
				continue
			}
			seen[ref] = true
			rec := get(t, h, "/ui/"+ref)
			ext := ref[strings.LastIndex(ref, "."):]
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), types[ext]) {
				t.Errorf("%s loads %s: %d %s", name, ref, rec.Code, rec.Header().Get("Content-Type"))
				continue
			}
			body, _ := io.ReadAll(rec.Body)
			bodies[ref] = string(body)
			queue = append(queue, ref)
		}
	}
	for _, want := range []string{"app.js", "style.css", "view.js", "charts.js", "dom.js", "traffic.js", "analysis.js"} {
		if !seen[want] {
			t.Errorf("the page never loads %s (loaded: %v)", want, seen)
		}
	}
	if rec := get(t, h, "/ui/nothing.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/nothing.js: %d", rec.Code)
	}
}
