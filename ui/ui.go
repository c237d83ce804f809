// Package ui is the page the API serves at /ui/ (ROLLOUTS-NEXT.md section 7): live rollouts,
// their progress by index, the traffic split over time, canary against baseline per analysis
// step, and the failure and revert story. It is hand-written HTML, CSS and JavaScript with
// SVG charts, embedded in the binary: the page loads nothing from anywhere but the API that
// serves it, needs no build step, and reads only the API's public routes and event stream.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy keeps the page to its own origin: scripts, styles and every fetch
// and event stream come from the API that served it, so a page that reached for a CDN, or
// anything injected into it, would simply not load.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page's files under prefix (e.g. "/ui/"), with the headers that keep it
// same-origin. The files change only with the binary, but a browser is told to ask again
// (no-cache) so that an upgraded API never runs with an older script.
func Handler(prefix string) http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	fileServer := http.StripPrefix(prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	})
}
