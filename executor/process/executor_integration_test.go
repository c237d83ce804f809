package process_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/process"
	"github.com/updatable-lrps/bbs/internal/syncbuf"
	"github.com/updatable-lrps/bbs/model"
)

// The executor driving real processes: health checks, crashes and stops end to end.

func newExecutor(t *testing.T) (*executor.Executor, *syncbuf.Buffer) {
	out := &syncbuf.Buffer{}
	e := executor.New(process.New(t.TempDir(), zaptest.NewLogger(t)), executor.Config{
		// Above Linux's ephemeral ports, apart from the ranges of the executor package's own
		// tests and from the cells that the dev and cluster modes start in other packages'
		// tests, running at the same time (61000 + 1,000 per cell: 63000-63999 is the third
		// cell's, and a real instance there once held a port this test allocated).
		PortRangeStart:         64500,
		PortRangeEnd:           64999,
		MonitorInterval:        20 * time.Millisecond,
		HealthyMonitorInterval: 100 * time.Millisecond,
		StopGracePeriod:        2 * time.Second,
		DefaultStartTimeout:    deadline,
		Log:                    out,
	}, zaptest.NewLogger(t))
	t.Cleanup(e.Close)
	return e, out
}

func serverDef() model.LRPDefinition {
	d := def(run(httpServer))
	d.Ports = []uint32{8080}
	d.CheckDefinition = &model.CheckDefinition{Checks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}}}
	return d
}

func runContainer(t *testing.T, e *executor.Executor, guid string, d model.LRPDefinition) {
	t.Helper()
	if _, err := e.Reserve(executor.RunSpec{Guid: guid, Key: model.ActualLRPKey{ProcessGUID: "pg", Index: 0}, Definition: d}); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(guid); err != nil {
		t.Fatal(err)
	}
}

func waitState(t *testing.T, e *executor.Executor, guid string, s executor.State) executor.Container {
	t.Helper()
	var c executor.Container
	eventually(t, guid+" "+string(s), func() bool {
		c, _ = e.Get(guid)
		if c.State == executor.StateCompleted && s != executor.StateCompleted {
			t.Fatalf("%s completed: %+v", guid, c.Result)
		}
		return c.State == s
	})
	return c
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestHTTPCheckedServerRunsAndItsDeathIsACrash(t *testing.T) {
	e, out := newExecutor(t)
	runContainer(t, e, "g1", serverDef())
	c := waitState(t, e, "g1", executor.StateRunning)
	base := fmt.Sprintf("http://%s:%d", c.Address, c.Ports[0].HostPort)
	pid, err := strconv.Atoi(get(t, base+"/pid"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance's output", func() bool { return strings.Contains(out.String(), "[pg/0 g1] listening on") })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c = waitState(t, e, "g1", executor.StateCompleted)
	if !c.Result.Failed || c.Result.Stopped || c.Result.FailureReason == "" {
		t.Fatalf("result = %+v", c.Result)
	}
	t.Logf("crash reason: %s", c.Result.FailureReason)
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
}

func TestStoppedServerIsNotACrash(t *testing.T) {
	e, _ := newExecutor(t)
	d := serverDef()
	// A shell that exits non-zero on SIGTERM, as many apps do.
	d.Action = sh(`trap 'exit 143' TERM; ` + httpServer + ` & wait`)
	runContainer(t, e, "g1", d)
	waitState(t, e, "g1", executor.StateRunning)
	if err := e.Stop("g1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete("g1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Get("g1"); ok {
		t.Fatal("still listed after Delete")
	}
}

func TestUnhealthyServerTimesOut(t *testing.T) {
	e, _ := newExecutor(t)
	d := serverDef()
	d.CheckDefinition.Checks[0].HTTPCheck.Path = "/missing"
	d.StartTimeoutMs = 500
	runContainer(t, e, "g1", d)
	c := waitState(t, e, "g1", executor.StateCompleted)
	// The server's line comes with the reason, unless a slow machine started it too late.
	reason, output, _ := strings.Cut(c.Result.FailureReason, "; last output: ")
	if reason != "instance did not become healthy within 500ms" || !strings.HasPrefix(output, `"listening on `) && output != "" {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestDownloadIsACrashWithAClearReason(t *testing.T) {
	e, _ := newExecutor(t)
	d := serverDef()
	d.Setup = &model.Action{Download: &model.DownloadAction{From: "http://example.com/app.tgz", To: "."}}
	runContainer(t, e, "g1", d)
	c := waitState(t, e, "g1", executor.StateCompleted)
	want := executor.Result{Failed: true, FailureReason: "download actions are not supported by the process executor"}
	if c.Result != want {
		t.Fatalf("result = %+v", c.Result)
	}
}

func TestServersGetDistinctFreePorts(t *testing.T) {
	e, _ := newExecutor(t)
	d := serverDef()
	d.Ports = []uint32{8080, 9090}
	seen := map[uint32]string{}
	for _, g := range []string{"a", "b", "c"} {
		runContainer(t, e, g, d)
	}
	for _, g := range []string{"a", "b", "c"} {
		c := waitState(t, e, g, executor.StateRunning)
		for _, p := range c.Ports {
			if other, dup := seen[p.HostPort]; dup {
				t.Fatalf("host port %d given to %s and %s", p.HostPort, other, g)
			}
			seen[p.HostPort] = g
		}
		// The second port is allocated but unused by the server: it must still be bindable.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.Ports[1].HostPort))
		if err != nil {
			t.Fatalf("allocated port %d is not free: %v", c.Ports[1].HostPort, err)
		}
		l.Close()
	}
}
