package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/freeport"
	"github.com/updatable-lrps/bbs/internal/scrape"
	"golang.org/x/crypto/ssh"
)

// waitMetrics waits until url serves every series of want with its value (a negative
// value: any) and every name of series, and returns what it served last.
func waitMetrics(t *testing.T, what, url string, within time.Duration, want map[string]float64, series ...string) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	var last map[string]float64
	var problem string
	for time.Now().Before(deadline) {
		got, err := scrape.URL(url)
		problem = ""
		if err != nil {
			problem = err.Error()
		} else {
			last = got
			for s, v := range want {
				if g, ok := got[s]; !ok || (v >= 0 && g != v) {
					problem += fmt.Sprintf(" %s=%v (served: %v), want %v;", s, g, ok, v)
				}
			}
			have := scrape.Names(got)
			for _, n := range series {
				if !have[n] {
					problem += " no " + n + ";"
				}
			}
			if problem == "" {
				return got
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s (%s):%s\nlast served: %v", what, url, problem, last)
	return nil
}

// TestEveryProcessServesMetrics starts each long-running bbs command as operators do and
// reads its /metrics: the worker's fleet series follow a real LRP through convergence
// passes, and its rollout series a real rollout; the API, router, cell, lb, tps-watcher and
// ssh proxy serve their own series (and every process the Go runtime's).
func TestEveryProcessServesMetrics(t *testing.T) {
	const n = 2
	d := startDev(t, "--no-worker")
	if !strings.Contains(d.p.out.String(), d.api.base+"/metrics") {
		t.Errorf("the dev banner does not say where the metrics are:\n%s", d.p.out.String())
	}
	env := []string{"DATABASE_URL=" + d.databaseURL(), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", d.temporalPort)}
	workerURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", freeport.Port(t))
	start(t, env, "worker", "--convergence-interval", "1s",
		"--metrics-listen", strings.TrimSuffix(strings.TrimPrefix(workerURL, "http://"), "/metrics"))

	d.api.mustPost("/v1/domains/upsert", obj{"domain": "cf-apps", "ttl": 0}, nil)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "2 RUNNING", 30*time.Second, func() bool { return d.allOn("web", "web", n) })
	waitMetrics(t, "the worker's fleet series after a pass", workerURL, 30*time.Second, map[string]float64{
		"bbs_lrps_desired": n, "bbs_lrps_running": n, "bbs_lrps_unclaimed": 0, "bbs_present_cells": 3,
		`bbs_domain_fresh{domain="cf-apps"}`: 1, `bbs_rollouts_in_progress{state="active"}`: 0,
		"bbs_convergence_lrp_duration_seconds_count": -1, "bbs_convergence_task_duration_seconds_count": -1,
	}, "bbs_convergence_last_pass_timestamp_seconds", "bbs_suspect_cells", "bbs_lrps_missing", "bbs_lrps_extra",
		"bbs_crashed_actual_lrps", "bbs_tasks_pending", "bbs_task_callbacks_pending", "go_goroutines")

	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v2", "v2")}}, nil)
	d.waitFor(t, "the rollout to complete", 60*time.Second, func() bool { return d.rollout("web").State == "completed" })
	waitMetrics(t, "the worker's rollout series", workerURL, 10*time.Second, map[string]float64{
		`bbs_rollouts_finished_total{state="completed"}`:                    1,
		`bbs_rollouts_finished_total{state="canceled"}`:                     0,
		`bbs_rollout_index_step_duration_seconds_count{outcome="updated"}`:  n,
		`bbs_rollout_index_step_duration_seconds_count{outcome="given_up"}`: 0,
	})

	// The dev process serves every part it runs (here the API and the router) on the API.
	waitMetrics(t, "bbs dev's series", d.api.base+"/metrics", 10*time.Second, nil,
		"bbs_http_requests_total", "bbs_http_request_duration_seconds_bucket", "bbs_router_routes", "process_resident_memory_bytes")

	hostKey := ed25519Key(t)
	apiAddr, routerAdmin := addr(t), addr(t)
	for _, p := range []struct {
		name   string
		env    []string
		args   []string
		series []string
		// own is the process's own HTTP listener, which serves /metrics too.
		own string
	}{
		{"api", env, []string{"api", "--listen", apiAddr, "--bbs-listen", ""}, []string{"bbs_http_requests_total"}, apiAddr},
		{"cell", nil, []string{"cell", "--id", "cell-metrics", "--api-url", d.api.base, "--executor", "sim", "--port-range", "64000-64099"},
			[]string{"bbs_cell_containers", "bbs_cell_capacity_remaining_memory_bytes", "bbs_cell_capacity_total_containers"}, ""},
		{"router", nil, []string{"router", "--listen", addr(t), "--admin-listen", routerAdmin, "--api-url", d.api.base},
			[]string{"bbs_router_requests_total", "bbs_router_routes"}, routerAdmin},
		{"lb", nil, []string{"lb", "--listen", addr(t), "--backends", strings.TrimPrefix(d.api.base, "http://"), "--bbs-listen", ""}, nil, ""},
		{"tps-watcher", nil, []string{"tps-watcher", "--api-url", d.api.base, "--cc-url", "http://127.0.0.1:1"}, nil, ""},
		{"ssh-proxy", []string{"BBS_SSH_PROXY_PASSWORD=secret", "BBS_SSH_PROXY_HOST_KEY=" + hostKey},
			[]string{"ssh-proxy", "--listen", addr(t), "--api-url", d.api.base}, nil, ""},
	} {
		t.Run(p.name, func(t *testing.T) {
			metricsAddr := addr(t)
			start(t, p.env, append(p.args, "--metrics-listen", metricsAddr)...)
			// Its own listener first: the API counts the requests there, and the first scrape
			// is one.
			urls := []string{"http://" + metricsAddr + "/metrics"}
			if p.own != "" {
				urls = append([]string{"http://" + p.own + "/metrics"}, urls...)
			}
			for _, url := range urls {
				waitMetrics(t, "bbs "+p.name, url, 20*time.Second, nil, append(p.series, "go_goroutines", "process_start_time_seconds")...)
			}
		})
	}
}

func addr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)) }

// ed25519Key is a fresh private key in OpenSSH PEM.
func ed25519Key(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}
