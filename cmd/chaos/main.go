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

// options are the flags of both modes.
type options struct {
	bbs, temporal, dir, demo, trials, faults string
	short                                    bool
	duration, faultEvery                     time.Duration
	lrps, cells                              int
	seed                                     uint64
}

// parseOptions parses mode's flags, names the binaries absolutely, and takes the soak's
// duration from SOAK_DURATION when it is set.
func parseOptions(mode string, args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	fs.StringVar(&o.bbs, "bbs", "bin/bbs", "the bbs binary")
	fs.StringVar(&o.temporal, "temporal-server-bin", "bin/temporal-server", "the real Temporal server")
	fs.StringVar(&o.dir, "dir", "", "the cluster's data directory, kept afterwards (default: a temporary one, removed)")
	fs.StringVar(&o.demo, "demoapp", "bin/demoapp", "matrix: cmd/demoapp's binary, the apps' instances")
	fs.StringVar(&o.trials, "trials", "", `matrix: the trials, faults of a trial joined by "+" (default: every fault alone, then every pair; faults: api leader cell temporal postgres)`)
	fs.BoolVar(&o.short, "short", false, "matrix: only the short form's trials (the one inside make test)")
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "soak: how long the workload runs [SOAK_DURATION]")
	fs.IntVar(&o.lrps, "lrps", 200, "soak: LRPs kept desired")
	fs.IntVar(&o.cells, "cells", 8, "soak: sim cells")
	fs.DurationVar(&o.faultEvery, "fault-every", 30*time.Second, "soak: mean time between faults")
	fs.Uint64Var(&o.seed, "seed", 0, "soak: the random seed (0: a random one, printed)")
	fs.StringVar(&o.faults, "faults", "", "soak: the faults to draw from, comma-separated (default: all of api,leader,cell,temporal,postgres)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	// Instances run in directories of their own: the demo app must be named absolutely.
	for _, path := range []*string{&o.bbs, &o.temporal, &o.demo} {
		abs, err := filepath.Abs(*path)
		if err != nil {
			return o, err
		}
		*path = abs
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" && mode == "soak" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, fmt.Errorf("SOAK_DURATION: %w", err)
		}
		o.duration = d
	}
	return o, nil
}

// run starts the cluster (in a temporary directory unless --dir), runs the matrix or the
// soak against it, prints the outcome, and says whether everything that should be zero was.
func run(ctx context.Context, mode string, args []string) (bool, error) {
	o, err := parseOptions(mode, args)
	if err != nil {
		return false, err
	}
	if o.dir == "" {
		tmp, err := os.MkdirTemp("", "bbs-chaos-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(tmp)
		o.dir = tmp
	}
	cfg := chaos.Config{BBS: o.bbs, TemporalServer: o.temporal, Dir: o.dir, Logf: logf}
	if mode == "soak" {
		cfg.CellExecutor, cfg.Cells = "sim", o.cells
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
		return soak(ctx, c, o), nil
	}
	return matrix(ctx, c, o)
}

// logf logs progress on standard error, the outcome going to standard output.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// soak runs the soak and prints its figures.
func soak(ctx context.Context, c *chaos.Cluster, o options) bool {
	sc := chaos.SoakConfig{Duration: o.duration, LRPs: o.lrps, FaultEvery: o.faultEvery, Seed: o.seed, Progress: os.Stderr}
	if o.faults != "" {
		sc.Faults = strings.Split(o.faults, ",")
	}
	r := chaos.Soak(ctx, c, sc)
	chaos.WriteSoak(os.Stdout, r)
	return r.Violations() == 0 && len(r.Problems) == 0
}

// matrix runs the trials one after another and prints the table of their outcomes.
func matrix(ctx context.Context, c *chaos.Cluster, o options) (bool, error) {
	plan := chaos.MatrixFull()
	switch {
	case o.trials != "":
		plan = nil
		for _, t := range strings.Fields(o.trials) {
			plan = append(plan, strings.Split(t, "+"))
		}
	case o.short:
		plan = chaos.MatrixShort
	}
	m, err := chaos.NewMatrix(ctx, c, o.demo)
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
		out := m.Run(ctx, faults)
		logf("%s: %s in %s", out.Faults, map[bool]string{true: "ok", false: "FAILED"}[out.OK()], time.Since(began).Round(time.Second))
		outcomes = append(outcomes, out)
		ok = ok && out.OK()
	}
	chaos.WriteTable(os.Stdout, outcomes)
	return ok, nil
}
