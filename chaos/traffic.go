package chaos

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Traffic sends requests through the router, one after another per worker, to each of its
// hosts until Stop, and counts what failed: anything but a 200 within 5 s.
type Traffic struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	hosts map[string]*HostCount
}

// HostCount is what one host's requests came to.
type HostCount struct {
	Sent, Failed int
	// LastError is the latest failure, for the report.
	LastError string
}

// StartTraffic sends requests for each host with workers workers per host.
func StartTraffic(routerURL string, hosts []string, workers int) *Traffic {
	t := &Traffic{stop: make(chan struct{}), hosts: map[string]*HostCount{}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, host := range hosts {
		t.hosts[host] = &HostCount{}
		for range workers {
			t.wg.Add(1)
			go t.drive(client, routerURL, host)
		}
	}
	return t
}

func (t *Traffic) drive(client *http.Client, routerURL, host string) {
	defer t.wg.Done()
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, routerURL+"/", nil)
		req.Host = host
		failure := ""
		res, err := client.Do(req)
		if err != nil {
			failure = err.Error()
		} else {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				failure = res.Status
			}
		}
		t.mu.Lock()
		c := t.hosts[host]
		c.Sent++
		if failure != "" {
			c.Failed++
			c.LastError = failure
		}
		t.mu.Unlock()
	}
}

// Counts is a copy of every host's count so far.
func (t *Traffic) Counts() map[string]HostCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]HostCount{}
	for h, c := range t.hosts {
		out[h] = *c
	}
	return out
}

// Stop ends the requests and returns the counts.
func (t *Traffic) Stop() map[string]HostCount {
	close(t.stop)
	t.wg.Wait()
	return t.Counts()
}

// Totals sums counts over hosts.
func Totals(counts map[string]HostCount) (sent, failed int) {
	for _, c := range counts {
		sent += c.Sent
		failed += c.Failed
	}
	return sent, failed
}

// describeFailures names each host that had failures, with its last error.
func describeFailures(counts map[string]HostCount) string {
	var out []string
	for h, c := range counts {
		if c.Failed > 0 {
			out = append(out, fmt.Sprintf("%s: %d of %d failed (last: %s)", h, c.Failed, c.Sent, c.LastError))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
