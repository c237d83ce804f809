package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/freeport"
	"github.com/updatable-lrps/bbs/internal/syncbuf"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// BenchmarkScale is issue 5's fleet: 1,000 sim cells and 250,000 ActualLRPs in 25,000 LRPs
// (BENCH_SCALE_LRPS and BENCH_SCALE_CELLS shrink it for a quick look). It measures, in
// order: placing and running everything from empty through the API, the auctioneer and the
// cells; one convergence pass with nothing to do and one with 1% of the instances missing;
// listing every ActualLRP, group, LRP and scheduling info from a separate `bbs api` process
// (the way Cloud Controller or an operator reads them), with the fleet running and then
// stopped; and that API process's memory.
// `make bench-scale` runs it; docs/BENCHMARKS.md holds the figures next to Diego's.
func BenchmarkScale(b *testing.B) {
	lrps := envInt(b, "BENCH_SCALE_LRPS", 25000)
	cells := envInt(b, "BENCH_SCALE_CELLS", 1000)
	const perLRP = 10
	total := lrps * perLRP
	perCell := (total + cells - 1) / cells
	for i := 0; i < b.N; i++ {
		started := time.Now()
		c := testcluster.New(b, testcluster.Options{
			Cells: cells, Zones: 3,
			Capacity: model.CellCapacity{MemoryMB: int32(perCell*2) * 16, DiskMB: int32(perCell*2) * 16, Containers: int32(perCell * 2)},
			// Diego's defaults: the rep reconciles every 30 s and checks a running instance's
			// health every 30 s; presence is refreshed every few seconds.
			CellHeartbeat: 5 * time.Second, CellPoll: 30 * time.Second, CellHealthCheck: 30 * time.Second,
		})
		b.Logf("%d cells up in %s", cells, time.Since(started).Round(time.Millisecond))

		// Place and run everything from empty.
		// Its CPU, which bounds it on two cores, is logged per instance by process (bench: the
		// API, auctioneer, cells and sim instances; postgres), and BENCH_CPUPROFILE profiles
		// this process over it alone.
		_, cpuBefore := treeCPUByChild()
		stopProfile := profileWindow(b)
		start := time.Now()
		desireAll(b, c, lrps, perLRP)
		desired := time.Since(start)
		waitRunning(b, c, total, 60*time.Minute)
		placed := time.Since(start)
		stopProfile()
		b.Logf("place and run %d instances of %d LRPs on %d cells: desired in %s, all RUNNING after %s (%.0f instances/s); CPU per instance: %s",
			total, lrps, cells, desired.Round(time.Millisecond), placed.Round(time.Millisecond), float64(total)/placed.Seconds(),
			cpuSince(cpuBefore, total))
		b.ReportMetric(placed.Seconds(), "s-place-all")

		// Convergence with nothing to do, once as placement leaves the store (the dead row
		// versions of 500,000 claim and start writes not yet vacuumed)...
		took, _ := idlePass(b, c)
		b.Logf("convergence pass, nothing to do, just placed: %s", took.Round(time.Millisecond))

		// ...then in the steady state: a running system's autovacuum has long cleaned them up,
		// and its passes have long pruned the placement's events to the log's bounds (575,000
		// beyond them in the session-8 runs; a pass prunes at most 100,000). The reads below measure that state too.
		t0 := time.Now()
		pruned := 0
		for range 20 { // bounded, should events keep arriving
			n, err := c.Store.PruneEvents(ctx, db.DefaultEventRetention, db.DefaultEventsKept)
			if err != nil {
				b.Fatal(err)
			}
			if pruned += n; n == 0 {
				break
			}
		}
		b.Logf("event log pruned to its bounds after placement: %d events in %s", pruned, time.Since(t0).Round(time.Millisecond))
		t0 = time.Now()
		if _, err := c.Store.DB().ExecContext(ctx, `VACUUM (ANALYZE) actual_lrps, desired_lrps, lrp_definitions, events`); err != nil {
			b.Fatal(err)
		}
		b.Logf("vacuum after placement: %s", time.Since(t0).Round(time.Millisecond))

		// Convergence: passes with nothing to do, then one with 1% of the instances gone.
		var idle []time.Duration
		for range 3 {
			took, res := idlePass(b, c)
			idle = append(idle, took)
			b.Logf("  pass: %s (%d events pruned)", res.StepTimes(), res.EventsPruned)
		}
		b.Logf("convergence pass, nothing to do: %s", durations(idle))
		missing := total / 100
		deleted, err := c.Store.DB().ExecContext(ctx, `DELETE FROM actual_lrps WHERE ctid IN (SELECT ctid FROM actual_lrps ORDER BY random() LIMIT $1)`, missing)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := deleted.RowsAffected(); int(n) != missing {
			b.Fatalf("removed %d instance records, want %d", n, missing)
		}
		t0 = time.Now()
		conv, err := c.Store.Converge(ctx, db.ConvergeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pass := time.Since(t0)
		// What the pass created, as it says: counting instances not yet RUNNING would miss
		// those the cells have already started (placement runs as soon as the pass commits).
		recreated := conv.MissingIndices
		b.Logf("convergence pass with %d instances (1%%) missing: %s, %d instances created", missing, pass.Round(time.Millisecond), recreated)
		if recreated != missing {
			b.Fatalf("convergence created %d instances, want %d", recreated, missing)
		}
		waitRunning(b, c, total, 10*time.Minute)
		b.Logf("all %d RUNNING again %s after the pass", total, (time.Since(t0) - pass).Round(time.Millisecond))
		b.ReportMetric(pass.Seconds(), "s-converge-1pct")

		// Reads, from an API process of their own so that its memory is its own: first with the
		// fleet's 1,000 agents and their instances running on the same two cores, then with
		// the cluster stopped (agents, worker and API: stopped agents withdraw their presence,
		// and a running worker would then unclaim and try to place all 250,000 instances
		// during the reads), as the BBS's API sees the store on a machine of its own (Diego's
		// setting).
		api := startAPIProcess(b, c.DatabaseURL)
		rss0 := api.memory(b)
		readAll(b, api, "fleet running")
		c.Stop()
		runtime.GC() // the stopped fleet's garbage, collected before the reads, not during
		readAll(b, api, "fleet stopped")
		rss := api.memory(b)
		b.Logf("API process memory: %s idle after start, %s resident after the reads, peak %s", mib(rss0.rss), mib(rss.rss), mib(rss.peak))
		b.ReportMetric(float64(rss.peak)/(1<<20), "MiB-api-peak")
	}
}

// readAll lists every instance, group, LRP and scheduling info through api, three times each.
func readAll(b *testing.B, api *apiProcess, label string) {
	for _, read := range []struct{ name, path, field string }{
		{"actual_lrps/list", "/v1/actual_lrps/list", "actual_lrps"},
		{"desired_lrp_scheduling_infos/list", "/v1/desired_lrp_scheduling_infos/list", "desired_lrp_scheduling_infos"},
		{"desired_lrps/list", "/v1/desired_lrps/list", "desired_lrps"},
		{"actual_lrp_groups/list", "/v1/actual_lrp_groups/list", "actual_lrp_groups"},
	} {
		var times []time.Duration
		var n, size int
		for range 3 {
			d, count, bytes := api.list(b, read.path, read.field)
			times = append(times, d)
			n, size = count, bytes
		}
		b.Logf("%-14s %-34s %7d items, %6.1f MB: %s", label, read.name, n, float64(size)/1e6, durations(times))
	}
	// The same lists over the BBS protocol, as Cloud Controller, cfdot and route-emitter read
	// them (protobuf, decoded whole by the client).
	for _, read := range []struct {
		name, path string
		resp       func() (proto.Message, func() int)
	}{
		{"actual_lrps/list (protobuf)", "/v1/actual_lrps/list", func() (proto.Message, func() int) {
			m := &pb.ActualLRPsResponse{}
			return m, func() int { return len(m.GetActualLrps()) }
		}},
		{"scheduling_infos/list (protobuf)", "/v1/desired_lrp_scheduling_infos/list", func() (proto.Message, func() int) {
			m := &pb.DesiredLRPSchedulingInfosResponse{}
			return m, func() int { return len(m.GetDesiredLrpSchedulingInfos()) }
		}},
	} {
		var times []time.Duration
		var n, size int
		for range 3 {
			m, count := read.resp()
			d, bytes := api.listProtobuf(b, read.path, m)
			times = append(times, d)
			n, size = count(), bytes
		}
		b.Logf("%-14s %-34s %7d items, %6.1f MB: %s", label, read.name, n, float64(size)/1e6, durations(times))
	}
}

// idlePass runs a convergence pass over the placed fleet, which must find nothing to stop,
// and says how long it took.
func idlePass(b *testing.B, c *testcluster.Cluster) (time.Duration, *db.ConvergeResult) {
	b.Helper()
	t0 := time.Now()
	res, err := c.Store.Converge(ctx, db.ConvergeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(t0)
	if len(res.ToStop) > 0 {
		b.Fatalf("idle convergence wants %d instances stopped", len(res.ToStop))
	}
	return took, res
}

// desireAll desires lrps sim LRPs of perLRP instances each, BENCH_SCALE_DESIRERS (default
// 16) requests at a time.
func desireAll(b *testing.B, c *testcluster.Cluster, lrps, perLRP int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, envInt(b, "BENCH_SCALE_DESIRERS", 16))
	for i := range lrps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.BBS.DesireLRP(ctx, instantLRP(fmt.Sprintf("scale-%05d", i), int32(perLRP))); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// apiProcess is `bbs api` running as a process of its own.
type apiProcess struct {
	cmd *exec.Cmd
	// url is the JSON API's, protocolURL the BBS protocol's.
	url, protocolURL string
	buf              []byte // for response bodies, kept from one read to the next
}

func startAPIProcess(b *testing.B, dbURL string) *apiProcess {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "bbs")
	build := exec.Command("go", "build", "-o", bin, "../cmd/bbs")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("build bbs: %v", err)
	}
	// Ports below the ephemeral range: the cluster's thousands of open connections would
	// otherwise take one picked free before the process listens on it (a run failed so).
	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Port(b))
	protocolAddr := fmt.Sprintf("127.0.0.1:%d", freeport.Port(b))
	var out syncbuf.Buffer
	cmd := exec.Command(bin, "api", "--listen", addr, "--bbs-listen", protocolAddr, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		<-exited
	})
	p := &apiProcess{cmd: cmd, url: "http://" + addr, protocolURL: "http://" + protocolAddr}
	if !p.ready(exited) {
		b.Fatalf("bbs api not ready after 30 s:\n%s", out.String())
	}
	return p
}

// ready waits up to 30 s for the process to answer its health check; false if it did not,
// or exited first.
func (p *apiProcess) ready(exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// list posts an empty filter to path and times the whole response; the items under field
// are then counted (not timed).
func (p *apiProcess) list(b *testing.B, path, field string) (took time.Duration, items, size int) {
	b.Helper()
	t0 := time.Now()
	resp, err := http.Post(p.url+path, "application/json", strings.NewReader("{}"))
	if err != nil {
		b.Fatal(err)
	}
	body, err := readInto(p.buf[:0], resp.Body)
	resp.Body.Close()
	took = time.Since(t0)
	p.buf = body
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %v %.300s", path, resp.StatusCode, err, body)
	}
	var decoded map[string][]json.RawMessage
	if err := json.Unmarshal(body, &decoded); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return took, len(decoded[field]), len(body)
}

// listProtobuf posts an empty request to path on the BBS-protocol listener, reads the whole
// answer and decodes it into m, as a BBS client does; the time covers the read, not the
// decoding.
func (p *apiProcess) listProtobuf(b *testing.B, path string, m proto.Message) (took time.Duration, size int) {
	b.Helper()
	t0 := time.Now()
	resp, err := http.Post(p.protocolURL+path, "application/x-protobuf", nil)
	if err != nil {
		b.Fatal(err)
	}
	body, err := readInto(p.buf[:0], resp.Body)
	resp.Body.Close()
	took = time.Since(t0)
	p.buf = body
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s (protobuf): %d %v", path, resp.StatusCode, err)
	}
	if err := proto.Unmarshal(body, m); err != nil {
		b.Fatalf("%s (protobuf): %v", path, err)
	}
	return took, len(body)
}

// readInto reads r to its end into buf, growing it only when it is full: a list of the
// fleet is 100 MB, and the client's copying must not weigh on the API's figure.
func readInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

type processMemory struct{ rss, peak int64 }

// memory reads the process's resident set now and its peak from /proc.
func (p *apiProcess) memory(b *testing.B) processMemory {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var m processMemory
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.peak = kb << 10
		}
	}
	return m
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func durations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(s, ", ")
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
