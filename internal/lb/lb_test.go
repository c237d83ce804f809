package lb

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
)

func backend(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) }))
	t.Cleanup(s.Close)
	return s
}

// get asks through the front on a new connection each time, as a client after its
// keep-alive connection broke would.
func get(t *testing.T, addr string) (string, error) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestRoundRobinAndFailover(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &Front{Name: "api", Listener: ln, Backends: []string{a.Listener.Addr().String(), b.Listener.Addr().String()}, Log: zap.NewNop()}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- f.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	seen := map[string]int{}
	for range 4 {
		got, err := get(t, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Fatalf("round robin over a and b: %v", seen)
	}

	a.Close() // a replica dies: every request goes to b, none fails
	for range 4 {
		got, err := get(t, ln.Addr().String())
		if err != nil || got != "b" {
			t.Fatalf("with a down: %q, %v", got, err)
		}
	}
	b.Close()
	if got, err := get(t, ln.Addr().String()); err == nil {
		t.Fatalf("with both down the front answered %q", got)
	}
}
