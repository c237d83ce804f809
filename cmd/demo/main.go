// Command demo shows a rolling update against what stock BBS makes users do. Against the
// system `make run` starts (or one it starts itself), it deploys cmd/demoapp with 4
// instances and a route, drives steady load through the router by Host header, rolls the app
// to a new definition, cancels a second update halfway, rolls back, lets a crash-looping
// update revert by itself, and changes the definition the stock way (remove the LRP, desire
// it again); then it walks two traffic-weighted canaries with analysis: a good release
// promoted, and one answering 5 % of its requests with 500 judged fail and reverted. It
// prints, per phase, the requests sent and failed (apart from the 500s an app answered),
// p50/p99 latency, which definition answered, and the canary verdicts, and exits non-zero if
// a single request failed on the rolling path. `make demo` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/internal/temporaldev"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout))
}

// options are the demo's flags.
type options struct {
	apiURL, routerURL, statsURL, host, guid string
	instances, rate, concurrency            int
	steady, settle, timeout                 time.Duration
	appBin, bbsBin, temporalBin, dataDir    string
	start                                   bool
}

// parseOptions parses the flags (the flag set says what is wrong with them), naming the
// binaries and the data directory absolutely.
func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.apiURL, "api", "http://127.0.0.1:8889", "the BBS API")
	fs.StringVar(&o.routerURL, "router", "http://127.0.0.1:8080", "the router (apps by Host header)")
	fs.StringVar(&o.statsURL, "router-stats", "http://127.0.0.1:8081/stats", "the router's stats")
	fs.StringVar(&o.host, "host", "demo.bbs.local", "the demo app's route (Host header)")
	fs.StringVar(&o.guid, "process-guid", "demo-app", "the demo LRP's process guid (removed first if it exists)")
	fs.IntVar(&o.instances, "instances", 4, "instances of the demo app")
	fs.IntVar(&o.rate, "rate", 200, "requests per second through the router")
	fs.IntVar(&o.concurrency, "concurrency", 16, "requests in flight at most")
	fs.DurationVar(&o.steady, "steady", 5*time.Second, "how long the baseline phase lasts")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "load kept on each phase after it is done, to catch late failures")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for any one step")
	fs.StringVar(&o.appBin, "app", "bin/demoapp", "the demo app's binary (go build -o bin/demoapp ./cmd/demoapp)")
	fs.BoolVar(&o.start, "start", true, "start `bbs dev` if the API does not answer (and stop it at the end)")
	fs.StringVar(&o.bbsBin, "bbs-bin", "bin/bbs", "the bbs binary, for --start")
	fs.StringVar(&o.temporalBin, "temporal-bin", defaultTemporalBin(), "the temporal CLI, for --start [TEMPORAL_BIN]")
	fs.StringVar(&o.dataDir, "data-dir", ".data/demo", "state of the system --start runs: apart from make run's, which is directly under .data")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, p := range []*string{&o.appBin, &o.bbsBin, &o.temporalBin, &o.dataDir} {
		if abs, err := filepath.Abs(*p); err == nil && *p != "" {
			*p = abs
		}
	}
	return o, nil
}

// check says what is wrong with the options the flags allow.
func (o options) check() error {
	if o.instances < 1 || o.rate < 1 || o.concurrency < 1 {
		return errors.New("--instances, --rate and --concurrency must be at least 1")
	}
	return nil
}

// run is the demo, its exit status returned: 2 for bad flags, 1 for a failure.
func run(args []string, out io.Writer) (code int) {
	o, err := parseOptions(args)
	if err != nil {
		return 2
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	var started atomic.Pointer[devSystem]
	ctx, cancel := interruptible(&started)
	defer cancel()
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	if st, err := os.Stat(o.appBin); err != nil || st.IsDir() {
		fmt.Fprintf(os.Stderr, "demo: no demo app at %s: build it with `go build -o bin/demoapp ./cmd/demoapp` (make demo does)\n", o.appBin)
		return 1
	}
	api := bbsclient.New(o.apiURL, nil)
	sys, err := ensureSystem(ctx, api, o.start, startConfig{bbsBin: o.bbsBin, temporalBin: o.temporalBin, dataDir: o.dataDir,
		apiURL: o.apiURL, routerURL: o.routerURL, statsURL: o.statsURL}, logf)
	if sys != nil {
		started.Store(sys)
		defer func() {
			logf("stopping the bbs dev this demo started (SIGINT)")
			if err := sys.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "demo:", err)
				code = 1
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return runDemo(ctx, o, api, out, began)
}

// interruptible is the demo's context: the first Ctrl-C winds the demo down (its clean-up
// runs); a second one stops it at once, and with it the bbs dev it started, which runs in
// a process group of its own.
func interruptible(started *atomic.Pointer[devSystem]) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		if sys := started.Load(); sys != nil {
			syscall.Kill(-sys.cmd.Process.Pid, syscall.SIGINT)
		}
		os.Exit(130)
	}()
	return ctx, cancel
}

// runDemo walks the phases against the system, prints the report, cleans up, and returns
// the exit status: 1 if a phase failed or a request failed on the rolling path.
func runDemo(ctx context.Context, o options, api *bbsclient.Client, out io.Writer, began time.Time) int {
	d := &demo{
		api: api, statsURL: o.statsURL, stats: &http.Client{Timeout: 5 * time.Second},
		guid: o.guid, domain: "cf-apps", host: o.host, instances: o.instances, appBin: o.appBin,
		steady: o.steady, settle: o.settle, timeout: o.timeout,
		rec: &recorder{}, out: out, began: began,
	}
	load := loadConfig{routerURL: o.routerURL, host: o.host, rate: o.rate, concurrency: o.concurrency, timeout: 5 * time.Second}
	runErr := d.run(ctx, load)

	fmt.Fprintln(out)
	ok := printReport(out, d.rec.summaries())
	switch {
	case runErr != nil && ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "demo: interrupted")
	case runErr != nil:
		fmt.Fprintln(os.Stderr, "demo:", runErr)
	}
	if err := d.cleanUp(); err != nil {
		fmt.Fprintln(os.Stderr, "demo: cleaning up:", err)
	}
	if runErr != nil || !ok {
		return 1
	}
	return 0
}

// run walks the phases with load running from the baseline to the end.
func (d *demo) run(ctx context.Context, load loadConfig) error {
	if err := d.removeLeftover(ctx); err != nil {
		return err
	}
	if err := d.deploy(ctx); err != nil {
		return err
	}
	d.logf("load: GET / with Host %s through %s, %d req/s, at most %d in flight", load.host, load.routerURL, load.rate, load.concurrency)
	loadCtx, stopLoad := context.WithCancel(context.Background())
	wait := runLoad(loadCtx, load, d.rec)
	defer func() {
		stopLoad()
		wait()
	}()
	steps := []func(context.Context) error{
		d.steadyPhase,
		func(ctx context.Context) error { return d.rollingUpdate(ctx, "v1", "v2") },
		func(ctx context.Context) error { return d.canceledUpdate(ctx, "v2", "v3") },
		func(ctx context.Context) error { return d.rollback(ctx, "v1") },
		func(ctx context.Context) error { return d.crashingUpdate(ctx, "v1", "v4") },
		func(ctx context.Context) error { return d.deleteAndDesire(ctx, "v2") },
		func(ctx context.Context) error { return d.goodCanary(ctx, "v2", "v5") },
		func(ctx context.Context) error { return d.badCanary(ctx, "v5", "v6") },
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			d.finish(context.Background())
			return err
		}
	}
	d.finish(ctx)
	return nil
}

// cleanUp removes the demo LRP so that the next run starts afresh, even after a Ctrl-C.
func (d *demo) cleanUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.timeout = 50 * time.Second
	return d.removeIfExists(ctx, "(clean-up)")
}

// ensureSystem uses the system whose API answers at api, or starts `bbs dev` (when allowed)
// and returns it for the caller to stop.
func ensureSystem(ctx context.Context, api *bbsclient.Client, start bool, cfg startConfig, logf func(string, ...any)) (*devSystem, error) {
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := available(pingCtx, api)
	cancel()
	if err != nil {
		if !start {
			return nil, fmt.Errorf("the API at %s does not answer (%v); start it with `make run`, or drop --start=false", cfg.apiURL, err)
		}
		logf("the API at %s does not answer: starting the system", cfg.apiURL)
		sys, err := startDev(ctx, cfg, api, logf)
		if err != nil {
			return nil, err
		}
		logf("the system is up")
		return sys, checkRouter(ctx, cfg.statsURL)
	}
	logf("the API at %s answers: using the running system", cfg.apiURL)
	deadline := time.Now().Add(time.Minute)
	for {
		if ok, _ := available(ctx, api); ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the API answers but is not available (migrations? database? Temporal?) after a minute")
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return nil, checkRouter(ctx, cfg.statsURL)
}

func checkRouter(ctx context.Context, statsURL string) error {
	if _, err := readRouterStats(ctx, &http.Client{Timeout: 5 * time.Second}, statsURL); err != nil {
		return fmt.Errorf("the router's stats do not answer (%v): is the router running (bbs dev starts it)?", err)
	}
	return nil
}

// defaultTemporalBin finds the temporal CLI as `make run` does (temporaldev.FindBin); when
// there is none it names bin/temporal, which the demo then says is missing.
func defaultTemporalBin() string {
	if p, err := temporaldev.FindBin(); err == nil {
		return p
	}
	return "bin/temporal"
}
