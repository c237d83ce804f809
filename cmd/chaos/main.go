// Command chaos runs package chaos against a `bbs cluster` of its own, started from the
// binaries it is given in a directory of its own (ports picked free, so that it never meets a
// `make cluster` or `make run`):
//
//	chaos matrix [-trials "cell api+leader ..."]   # make chaos: every fault alone, then every pair
//	chaos soak -duration 10m [-lrps 200]            # make soak: a mixed workload on sim cells, random faults
//
// It prints the table of faults × outcomes (matrix) or the soak's figures on stdout, and exits
// with status 1 when anything that should be zero was not.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/chaos"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "matrix" && os.Args[1] != "soak") {
		fmt.Fprintln(os.Stderr, "usage: chaos matrix|soak [flags] (chaos matrix -h, chaos soak -h)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ok, err := run(ctx, os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(ctx context.Context, mode string, args []string) (bool, error) {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	bbs := fs.String("bbs", "bin/bbs", "the bbs binary")
	temporal := fs.String("temporal-server-bin", "bin/temporal-server", "the real Temporal server")
	dir := fs.String("dir", "", "the cluster's data directory, kept afterwards (default: a temporary one, removed)")
	demo := fs.String("demoapp", "bin/demoapp", "matrix: cmd/demoapp's binary, the apps' instances")
	trials := fs.String("trials", "", `matrix: the trials, faults of a trial joined by "+" (default: every fault alone, then every pair; faults: api leader cell temporal postgres)`)
	short := fs.Bool("short", false, "matrix: only the short form's trials (the one inside make test)")
	duration := fs.Duration("duration", 10*time.Minute, "soak: how long the workload runs [SOAK_DURATION]")
	lrps := fs.Int("lrps", 200, "soak: LRPs kept desired")
	cells := fs.Int("cells", 8, "soak: sim cells")
	faultEvery := fs.Duration("fault-every", 30*time.Second, "soak: mean time between faults")
	seed := fs.Uint64("seed", 0, "soak: the random seed (0: a random one, printed)")
	faults := fs.String("faults", "", "soak: the faults to draw from, comma-separated (default: all of api,leader,cell,temporal,postgres)")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	// Instances run in directories of their own: the demo app must be named absolutely.
	for _, path := range []*string{bbs, temporal, demo} {
		abs, err := filepath.Abs(*path)
		if err != nil {
			return false, err
		}
		*path = abs
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" && mode == "soak" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return false, fmt.Errorf("SOAK_DURATION: %w", err)
		}
		*duration = d
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "bbs-chaos-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	cfg := chaos.Config{BBS: *bbs, TemporalServer: *temporal, Dir: *dir, Logf: logf}
	if mode == "soak" {
		cfg.CellExecutor, cfg.Cells = "sim", *cells
	}
	c, err := chaos.Start(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			logf("stopping the cluster: %v", err)
		}
	}()
	if mode == "soak" {
		sc := chaos.SoakConfig{Duration: *duration, LRPs: *lrps, FaultEvery: *faultEvery, Seed: *seed, Progress: os.Stderr}
		if *faults != "" {
			sc.Faults = strings.Split(*faults, ",")
		}
		r := chaos.Soak(ctx, c, sc)
		chaos.WriteSoak(os.Stdout, r)
		return r.Violations() == 0 && len(r.Problems) == 0, nil
	}
	plan := chaos.MatrixFull()
	switch {
	case *trials != "":
		plan = nil
		for _, t := range strings.Fields(*trials) {
			plan = append(plan, strings.Split(t, "+"))
		}
	case *short:
		plan = chaos.MatrixShort
	}
	m, err := chaos.NewMatrix(ctx, c, *demo)
	if err != nil {
		return false, err
	}
	defer m.Close()
	var outcomes []chaos.Outcome
	ok := true
	for _, faults := range plan {
		if ctx.Err() != nil {
			break
		}
		began := time.Now()
		o := m.Run(ctx, faults)
		logf("%s: %s in %s", o.Faults, map[bool]string{true: "ok", false: "FAILED"}[o.OK()], time.Since(began).Round(time.Second))
		outcomes = append(outcomes, o)
		ok = ok && o.OK()
	}
	chaos.WriteTable(os.Stdout, outcomes)
	return ok, nil
}
