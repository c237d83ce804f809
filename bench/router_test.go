package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/router"
	"go.uber.org/zap"
)

// weightedTable routes web.example.com to old instances of v1 and new ones of v2, each a
// real HTTP server answering with its definition.
func weightedTable(b *testing.B, old, new int) *router.Table {
	b.Helper()
	var addrs []string
	for i := 0; i < old+new; i++ {
		def := "v1"
		if i >= old {
			def = "v2"
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, def) }))
		b.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		addrs = append(addrs, u.Host)
	}
	return tableOf(addrs, old)
}

// tableOf routes web.example.com to the apps at addrs: the first old of v1, the rest of v2.
func tableOf(addrs []string, old int) *router.Table {
	var lrps []model.ActualLRP
	add := func(def string, index int, addr string) {
		host, portStr, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portStr)
		lrps = append(lrps, model.ActualLRP{
			ActualLRPKey:     model.ActualLRPKey{ProcessGUID: "web", DefinitionID: def, Index: int32(index)},
			ActualLRPNetInfo: model.ActualLRPNetInfo{Address: host, Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: uint32(port)}}},
			State:            model.StateRunning, Presence: model.PresenceOrdinary,
		})
	}
	for i, addr := range addrs {
		def := "v1"
		if i >= old {
			def = "v2"
		}
		add(def, i, addr)
	}
	routes, _ := json.Marshal([]router.CFRoute{{Hostnames: []string{"web.example.com"}, Port: 8080}})
	dep := &model.LRPDeployment{ProcessGUID: "web", Routes: model.Routes{"cf-router": routes}, Definitions: map[string]model.LRPDefinition{
		"v1": {DefinitionID: "v1", Ports: []uint32{8080}}, "v2": {DefinitionID: "v2", Ports: []uint32{8080}}}}
	t := router.NewTable()
	t.Replace([]router.LRP{router.LRPFromDeployment(dep)}, lrps)
	return t
}

// send makes n requests through p from workers concurrent clients over real connections and
// counts the answers by body (the definition).
func send(b *testing.B, p http.Handler, n, workers int) map[string]int {
	b.Helper()
	srv := httptest.NewServer(p)
	defer srv.Close()
	return sendURL(b, srv.URL, n, workers)
}

// sendURL is send to a router listening at url.
func sendURL(b *testing.B, url string, n, workers int) map[string]int {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(share int) {
			defer wg.Done()
			c := &http.Client{Transport: tr}
			mine := map[string]int{}
			for i := 0; i < share; i++ {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Host = "web.example.com"
				res, err := c.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Errorf("answer %d", res.StatusCode)
					return
				}
				mine[string(body)]++
			}
			mu.Lock()
			for k, v := range mine {
				got[k] += v
			}
			mu.Unlock()
		}(n / workers)
	}
	wg.Wait()
	return got
}

// BenchmarkRouterWeights sends 20,000 requests through the router at each weight of the new
// definition — 1, 10 and 50 % with one new instance of ten — and checks the share it took
// is inside the binomial 99 % interval of the weight (ROLLOUTS-NEXT.md section 5).
func BenchmarkRouterWeights(b *testing.B) {
	const n = 20_000
	t := weightedTable(b, 9, 1)
	p := router.NewProxy(t)
	for i := 0; i < b.N; i++ {
		for gen, w := range []int32{1, 10, 50} {
			t.SetSplit(model.TrafficSplit{ProcessGUID: "web", Generation: int64(i*3 + gen + 1), Weights: map[string]int32{"v2": w}})
			got := send(b, p, n, 8)
			share := float64(got["v2"]) / n
			q := float64(w) / 100
			sd := math.Sqrt(q * (1 - q) / n)
			lo, hi := q-2.576*sd, q+2.576*sd
			b.Logf("weight %2d %%: the new definition took %d of %d requests (%.2f %%), 99 %% interval [%.2f %%, %.2f %%]",
				w, got["v2"], n, 100*share, 100*lo, 100*hi)
			if share < lo || share > hi {
				b.Errorf("weight %d %%: share %.3f %% outside the binomial 99 %% interval", w, 100*share)
			}
			b.ReportMetric(100*share, fmt.Sprintf("%%-at-weight-%d", w))
		}
	}
	b.ReportMetric(0, "ns/op")
}

// cpuNow is this process's CPU time (user + system).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRouterOverhead measures the router's own CPU a request: each router runs in a
// process of its own (this test binary again, TestRouterProcess) proxying to apps in this
// process, and its CPU time is read from /proc, so that neither the clients' nor the apps'
// work is counted. Two routers run side by side — one splitting the route by instances
// without telemetry (today's router), one by a weight of 10 % with telemetry — and take the
// same load in turns (alternating which goes first, so that the machine's drift cancels);
// the figure is the median of the pairs' ratios (target ≤ 1.05). Its clients keep no cookie,
// so every weighted answer carries a Set-Cookie, the dearer case.
func BenchmarkRouterOverhead(b *testing.B) {
	const n, pairs = 40_000, 10
	var addrs []string
	for i := 0; i < 10; i++ {
		def := "v1"
		if i == 9 {
			def = "v2"
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, def) }))
		defer srv.Close()
		u, _ := url.Parse(srv.URL)
		addrs = append(addrs, u.Host)
	}
	plain, weighted := startRouterProcess(b, "plain", addrs), startRouterProcess(b, "weighted", addrs)
	cost := func(r *routerProcess) float64 {
		before := r.cpu(b)
		sendURL(b, r.url, n, 8)
		return float64(r.cpu(b)-before) / n
	}
	cost(plain) // warm both
	cost(weighted)
	var plains, fulls, ratios []float64
	for i := 0; i < b.N; i++ {
		for k := 0; k < pairs; k++ {
			var a, w float64
			if k%2 == 0 {
				a, w = cost(plain), cost(weighted)
			} else {
				w, a = cost(weighted), cost(plain)
			}
			plains, fulls, ratios = append(plains, a), append(fulls, w), append(ratios, w/a)
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	b.Logf("the router process's CPU a request: %.1f µs by instances without telemetry, %.1f µs weighted with telemetry (medians): %.3f× (median of %d pairs' ratios of %d requests, clients without cookies; target ≤ 1.05)",
		median(plains)/1e3, median(fulls)/1e3, median(ratios), len(ratios), n)
	b.ReportMetric(median(plains)/1e3, "µs-cpu-plain")
	b.ReportMetric(median(fulls)/1e3, "µs-cpu-weighted")
	b.ReportMetric(median(ratios), "overhead-ratio")
	b.ReportMetric(0, "ns/op")
}

// routerProcess is a router running in a child process.
type routerProcess struct {
	cmd *exec.Cmd
	url string
}

// startRouterProcess starts TestRouterProcess as a router (mode plain or weighted) to the
// apps at addrs, and reads where it listens.
func startRouterProcess(b *testing.B, mode string, addrs []string) *routerProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRouterProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "BENCH_ROUTER_PROCESS="+mode, "BENCH_ROUTER_APPS="+strings.Join(addrs, ","))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "ROUTER "); ok {
			go io.Copy(io.Discard, stdout)
			return &routerProcess{cmd: cmd, url: "http://" + addr}
		}
	}
	b.Fatalf("the %s router process said nowhere it listens", mode)
	return nil
}

// cpu is the process's CPU time so far.
func (r *routerProcess) cpu(b *testing.B) time.Duration {
	p, ok := readProcCPU(r.cmd.Process.Pid)
	if !ok {
		b.Fatal("the router process is gone")
	}
	return p.own
}

// TestRouterProcess is BenchmarkRouterOverhead's router, run in a child process until its
// stdin closes; alone it does nothing.
func TestRouterProcess(t *testing.T) {
	mode := os.Getenv("BENCH_ROUTER_PROCESS")
	if mode == "" {
		t.Skip("BenchmarkRouterOverhead's router process")
	}
	table := tableOf(strings.Split(os.Getenv("BENCH_ROUTER_APPS"), ","), 9)
	p := router.NewProxy(table)
	if mode == "weighted" {
		table.SetSplit(model.TrafficSplit{ProcessGUID: "web", Generation: 1, Weights: map[string]int32{"v2": 10}})
	} else {
		p.Telemetry = nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, p)
	fmt.Println("ROUTER " + ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
}

// BenchmarkAbortWeightZero aborts rollouts held at a 10 % step, each time timing the abort
// request to the router routing by the new definition's weight of 0 (its admin port), and
// reports p50 and p99 (target p99 ≤ 1 s).
func BenchmarkAbortWeightZero(b *testing.B) {
	const aborts = 40
	c := strategyCluster(b)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, err := system.StartRouter(rctx, system.RouterConfig{Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", BBS: c.BBS, Log: zap.NewNop(), ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Stop()
	const guid = "abort-weight"
	if err := c.BBS.DesireLRP(ctx, instantLRP(guid, 10)); err != nil {
		b.Fatal(err)
	}
	waitRunning(b, c, 10, time.Minute)
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		for k := 0; k < aborts; k++ {
			w, manual := int32(10), model.PromoteManual
			u := &model.DesiredLRPUpdate{Definition: nextDefinition(fmt.Sprintf("v%d-%d", i, k)),
				Strategy: &model.RolloutStrategy{Canary: &model.CanaryStrategy{Steps: []model.CanaryStep{{Weight: &w, Promote: &manual}}}}}
			if err := c.BBS.UpdateDesiredLRP(ctx, guid, u); err != nil {
				b.Fatal(err)
			}
			held := waitRolloutOf(b, c, guid, time.Minute, func(r *model.Rollout) bool {
				return r.Phase == model.PhaseAwaitingPromotion && r.Traffic[u.Definition.DefinitionID] == 10
			})
			start := time.Now()
			if _, err := c.BBS.AbortRollout(ctx, guid, "benchmark"); err != nil {
				b.Fatal(err)
			}
			for r.Applied(guid) <= held.TrafficGeneration {
				if time.Since(start) > 30*time.Second {
					b.Fatal("the router never took the abort's weight")
				}
				time.Sleep(time.Millisecond)
			}
			took = append(took, time.Since(start))
			waitRolloutOf(b, c, guid, time.Minute, ended(model.RolloutReverted))
		}
	}
	slices.Sort(took)
	p50, p99 := took[len(took)/2], took[min(len(took)-1, len(took)*99/100)]
	b.Logf("abort → the router routes the new definition at weight 0: p50 %v, p99 %v, max %v over %d aborts (target p99 ≤ 1 s)",
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(took))
	b.ReportMetric(float64(p50.Milliseconds()), "ms-p50")
	b.ReportMetric(float64(p99.Milliseconds()), "ms-p99")
	b.ReportMetric(0, "ns/op")
}
