package router

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Proxy routes requests by Host header to the table's endpoints, round-robin.
type Proxy struct {
	Table     *Table
	Transport http.RoundTripper
	// MaxAttempts bounds the endpoints an idempotent request tries when connecting fails;
	// default 3.
	MaxAttempts int

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
	return &Proxy{Table: table, Transport: tr, MaxAttempts: 3}
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

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.Requests.Add(1)
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	eps := p.Table.Endpoints(host)
	if len(eps) == 0 {
		p.Failures.Add(1)
		http.Error(w, fmt.Sprintf("404 Not Found: no running instance serves %q\n", host), http.StatusNotFound)
		return
	}
	// Only a request that can be sent again (idempotent, no body to replay) is retried on
	// another instance, and only when connecting failed.
	attempts := 1
	if idempotent(r.Method) && (r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0) {
		attempts = min(p.MaxAttempts, len(eps))
	}
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
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
		return
	}
	p.Failures.Add(1)
	http.Error(w, fmt.Sprintf("502 Bad Gateway: %v\n", lastErr), http.StatusBadGateway)
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
