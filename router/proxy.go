package router

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Proxy routes requests by Host header to the table's endpoints: round-robin, or by
// definition weight while a rollout holds a weighted step (traffic.go).
type Proxy struct {
	Table     *Table
	Transport http.RoundTripper
	// MaxAttempts bounds the endpoints an idempotent request tries when connecting fails;
	// default 3.
	MaxAttempts int

	// Telemetry, when set, counts requests per LRP and definition.
	Telemetry *Telemetry

	// Counters, reported on the admin endpoint.
	Requests, Retries, Failures atomic.Int64
}

// NewProxy returns a proxy over table with a pooled transport.
func NewProxy(table *Table) *Proxy {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Proxy{Table: table, Transport: tr, MaxAttempts: 3, Telemetry: NewTelemetry()}
}

// hopHeaders are not forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		return true
	}
	return false
}

// The contract's names (ROLLOUTS-NEXT.md section 5): the preview header, the sticky cookie,
// and the header that says why the router could not serve.
const (
	PreviewHeader = "X-LRP-Preview"
	StickyCookie  = "bbs_definition"
	ReasonHeader  = "X-LRP-Reason"
)

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.Requests.Add(1)
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	route := p.Table.Route(host)
	if route == nil || len(route.Endpoints) == 0 {
		p.Failures.Add(1)
		http.Error(w, fmt.Sprintf("404 Not Found: no running instance serves %q\n", host), http.StatusNotFound)
		return
	}
	eps, sticky, reason := p.choose(route, r)
	if len(eps) == 0 {
		p.Failures.Add(1)
		w.Header().Set(ReasonHeader, reason)
		http.Error(w, "503 Service Unavailable: "+reason+"\n", http.StatusServiceUnavailable)
		return
	}
	p.forward(w, r, eps, sticky)
}

// choose is the endpoints a request tries, in order (as many as it may try): a preview's
// definition's; under a weighted step, the sticky or drawn definition's first; else all,
// round-robin. sticky is the cookie the answer carries; reason says why nothing may serve.
func (p *Proxy) choose(route *Route, r *http.Request) (eps []Endpoint, sticky setCookie, reason string) {
	next := p.Table.next.Add(1)
	k := max(p.MaxAttempts, 1)
	if def := r.Header.Get(PreviewHeader); def != "" {
		for _, ep := range route.Endpoints {
			if ep.DefinitionID == def {
				eps = append(eps, ep)
			}
		}
		if len(eps) == 0 {
			return nil, setCookie{}, fmt.Sprintf("no routable instance of definition %q to preview", def)
		}
		return appendRotated(nil, eps, next, k), setCookie{}, ""
	}
	first := route.Endpoints[next%uint64(len(route.Endpoints))]
	var cookie *http.Cookie
	if len(r.Header["Cookie"]) > 0 { // most requests carry none: no parse
		cookie, _ = r.Cookie(StickyCookie)
	}
	split := route.splits[first.ProcessGUID]
	if split == nil {
		if cookie != nil {
			sticky.header = releaseCookie // the weighted step is over: let the user go
		}
		return appendRotated(make([]Endpoint, 0, k), route.Endpoints, next, k), sticky, ""
	}
	want := ""
	if cookie != nil {
		want = cookie.Value
	}
	g := split.pick(want)
	if g == nil {
		return nil, setCookie{}, "no routable instance of a definition with traffic weight"
	}
	if g.def != want {
		sticky = setCookie{def: g.def, header: g.cookie}
	}
	return split.candidates(g, next, k), sticky, ""
}

// setCookie is the sticky cookie an answer carries: header (Set-Cookie's value), when def
// answered ("" any).
type setCookie struct {
	def    string
	header []string
}

// releaseCookie clears the sticky cookie.
var releaseCookie = []string{(&http.Cookie{Name: StickyCookie, Path: "/", MaxAge: -1}).String()}

// forward sends the request to the first endpoint that takes it: only a request that can be
// sent again (idempotent, no body to replay) is retried on another, and only when
// connecting failed.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, eps []Endpoint, sticky setCookie) {
	attempts := 1
	if idempotent(r.Method) && (r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0) {
		attempts = min(p.MaxAttempts, len(eps))
	}
	began := time.Now()
	var lastErr error
	for i := 0; i < attempts; i++ {
		ep := eps[i]
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = "http", ep.Address
		for _, h := range hopHeaders {
			out.Header.Del(h)
		}
		if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			out.Header.Set("X-Forwarded-For", strings.TrimPrefix(out.Header.Get("X-Forwarded-For")+", "+ip, ", "))
		}
		res, err := p.Transport.RoundTrip(out)
		if err != nil {
			lastErr = err
			if i+1 < attempts && connectFailed(err) {
				p.Retries.Add(1)
				continue
			}
			p.observe(ep, http.StatusBadGateway, began)
			break
		}
		defer res.Body.Close()
		for _, h := range hopHeaders {
			res.Header.Del(h)
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		// Which instance answered: the demo reports which definition served each request.
		w.Header().Set("X-LRP-Definition", ep.DefinitionID)
		w.Header().Set("X-LRP-Index", fmt.Sprint(ep.Index))
		// The cookie goes with an answer of the definition it names (a retry may have gone to
		// another), or clears the user's.
		if sticky.header != nil && (sticky.def == "" || sticky.def == ep.DefinitionID) {
			if app := w.Header()["Set-Cookie"]; len(app) > 0 {
				w.Header()["Set-Cookie"] = append(slices.Clip(app), sticky.header...) // the app's cookies stay
			} else {
				w.Header()["Set-Cookie"] = sticky.header // built once, never changed: shared
			}
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
		p.observe(ep, res.StatusCode, began)
		return
	}
	p.Failures.Add(1)
	http.Error(w, fmt.Sprintf("502 Bad Gateway: %v\n", lastErr), http.StatusBadGateway)
}

// observe counts a request in the telemetry of the definition that answered it (or failed
// to), from the router's first byte to its last.
func (p *Proxy) observe(ep Endpoint, status int, began time.Time) {
	if p.Telemetry != nil {
		p.Telemetry.Observe(ep.ProcessGUID, ep.DefinitionID, status, time.Since(began))
	}
}

// connectFailed reports an error before the request reached the instance, which is safe to
// retry elsewhere.
func connectFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Stats are the proxy's counters.
type Stats struct {
	Requests int64          `json:"requests"`
	Retries  int64          `json:"retries"`
	Failures int64          `json:"failures"`
	Hosts    map[string]int `json:"hosts"`
}

// Stats reads the counters and the routed hosts.
func (p *Proxy) Stats() Stats {
	return Stats{Requests: p.Requests.Load(), Retries: p.Retries.Load(), Failures: p.Failures.Load(), Hosts: p.Table.Hosts()}
}
