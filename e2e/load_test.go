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
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
				req.Host = host
				l.sent.Add(1)
				res, err := c.Do(req)
				if err != nil {
					l.fail(err.Error())
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
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
