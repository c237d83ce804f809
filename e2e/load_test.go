package e2e

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load sends requests for host through the router, one after another, until stopped, and
// counts what failed and which definitions answered.
type load struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	byDef        map[string]int
	// appErrors are 500s an instance answered (the app's own, by definition): a bad
	// release's answers, not a request the platform failed.
	appErrors map[string]int
	lastErr   string
	stop      chan struct{}
	wg        sync.WaitGroup
}

func (d *devStack) drive(host string, workers int) *load {
	return driveThrough(newRouterSet(d.routerPort), host, workers)
}

// driveThrough is drive over several routers, each request to the next one in service.
func driveThrough(routers *routerSet, host string, workers int) *load {
	l := &load{byDef: map[string]int{}, appErrors: map[string]int{}, stop: make(chan struct{})}
	c := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < workers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				port, done := routers.pick()
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
				req.Host = host
				l.sent.Add(1)
				res, err := c.Do(req)
				if err != nil {
					done()
					l.fail(fmt.Sprintf("router :%d: %v", port, err))
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				done()
				if def := res.Header.Get("X-LRP-Definition"); res.StatusCode == http.StatusInternalServerError && def != "" {
					l.mu.Lock()
					l.appErrors[def]++
					l.mu.Unlock()
					continue
				}
				if res.StatusCode != http.StatusOK {
					l.fail(res.Status)
					continue
				}
				l.mu.Lock()
				l.byDef[res.Header.Get("X-LRP-Definition")]++
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) fail(why string) {
	l.failed.Add(1)
	l.mu.Lock()
	l.lastErr = why
	l.mu.Unlock()
}

func (l *load) finish(t *testing.T, what string) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	t.Logf("%s: %d requests through the router, %d failed, answered by %v, app errors %v", what, l.sent.Load(), l.failed.Load(), l.byDef, l.appErrors)
	if l.failed.Load() > 0 {
		t.Fatalf("%s: %d of %d requests failed (last: %s)", what, l.failed.Load(), l.sent.Load(), l.lastErr)
	}
}

// routerSet is the routers a load spreads its requests over, in turn, as a load balancer in
// front of several routers does. One drained (as a load balancer deregisters a router before
// it is replaced) gets no new request, and drain returns once those it had are answered.
type routerSet struct {
	mu       sync.Mutex
	idle     *sync.Cond
	ports    []int
	out      map[int]bool
	inFlight map[int]int
	next     int
}

func newRouterSet(ports ...int) *routerSet {
	r := &routerSet{ports: ports, out: map[int]bool{}, inFlight: map[int]int{}}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// pick is the next router in service, and what to call once its answer is read.
func (r *routerSet) pick() (port int, done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range r.ports {
		port = r.ports[r.next%len(r.ports)]
		r.next++
		if !r.out[port] {
			break
		}
	}
	r.inFlight[port]++
	return port, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inFlight[port]--
		r.idle.Broadcast()
	}
}

// drain takes port out of service and waits until its requests are answered.
func (r *routerSet) drain(port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out[port] = true
	for r.inFlight[port] > 0 {
		r.idle.Wait()
	}
}

// restore puts port back in service.
func (r *routerSet) restore(port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.out, port)
}
