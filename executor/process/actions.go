package process

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

var (
	// errInterrupted marks a failure we caused by cancelling the action's context, so that
	// codependent and timeout actions can tell it from a failure of the process itself.
	errInterrupted = errors.New("interrupted")
	// errStopped is returned for work refused because the instance is stopping.
	errStopped = errors.New("instance is stopping")
)

// runAction runs a (possibly composite) action to completion. Cancelling ctx interrupts every
// process the action runs; Stop reaches them through their process groups instead.
func (in *instance) runAction(ctx context.Context, a *model.Action) error {
	switch {
	case a == nil:
		return errors.New("missing action")
	case a.Run != nil:
		return in.runProcess(ctx, a.Run)
	case a.Serial != nil:
		for _, step := range a.Serial.Actions {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("serial: %w", errInterrupted)
			}
			if err := in.runAction(ctx, step); err != nil {
				return err
			}
		}
		return nil
	case a.Parallel != nil:
		return in.runParallel(ctx, a.Parallel.Actions)
	case a.Codependent != nil:
		return in.runCodependent(ctx, a.Codependent.Actions)
	case a.Timeout != nil:
		d := time.Duration(a.Timeout.TimeoutMs) * time.Millisecond
		tctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		err := in.runAction(tctx, a.Timeout.Action)
		if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("timed out after %s", d)
		}
		return err
	case a.Try != nil:
		err := in.runAction(ctx, a.Try.Action)
		if err != nil && ctx.Err() == nil && !in.isStopping() {
			in.out.line("try: ignoring failure: %v", err)
			return nil
		}
		return err
	case a.EmitProgress != nil:
		ep := a.EmitProgress
		if ep.StartMessage != "" {
			in.out.line("%s", ep.StartMessage)
		}
		err := in.runAction(ctx, ep.Action)
		switch {
		case err == nil && ep.SuccessMessage != "":
			in.out.line("%s", ep.SuccessMessage)
		case err != nil && ep.FailureMessagePrefix != "":
			in.out.line("%s: %v", ep.FailureMessagePrefix, err)
		}
		return err
	default:
		// Start has rejected these already; this covers a monitor run some other way.
		return supported(a)
	}
}

// runParallel runs every action at once and fails, after all have finished, if any failed.
func (in *instance) runParallel(ctx context.Context, actions []*model.Action) error {
	errs := make([]error, len(actions))
	var wg sync.WaitGroup
	for i, a := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.runAction(ctx, a)
		}()
	}
	wg.Wait()
	return joinErrors(errs)
}

// runCodependent runs every action at once; the first to exit, whatever its status, ends the
// group and the others are interrupted. It fails if any action failed on its own.
func (in *instance) runCodependent(ctx context.Context, actions []*model.Action) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(actions))
	var wg sync.WaitGroup
	for i, a := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.runAction(cctx, a)
			cancel()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("codependent: %w", errInterrupted)
	}
	var own []error
	for _, err := range errs {
		// An action we interrupted because a sibling exited did not fail by itself.
		if err != nil && !errors.Is(err, errInterrupted) {
			own = append(own, err)
		}
	}
	return joinErrors(own)
}

// runProcess runs one process in its own process group and waits for it.
func (in *instance) runProcess(ctx context.Context, ra *model.RunAction) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", ra.Path, errInterrupted)
	}
	if in.isStopping() {
		return errStopped
	}
	cmd := exec.Command(ra.Path, ra.Args...)
	cmd.Dir = in.resolveDir(ra.Dir)
	cmd.Env = append(append([]string(nil), in.env...), envStrings(ra.Env)...)
	if !ra.SuppressLogOutput {
		cmd.Stdout, cmd.Stderr = in.out.w, in.out.w
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", ra.Path, err)
	}
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	in.mu.Lock()
	stopping := in.stopping
	if !stopping {
		in.groups[pgid] = struct{}{}
	}
	in.mu.Unlock()
	if stopping {
		// Stop has already signalled the groups it knew of; this one started too late.
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		return errStopped
	}

	var err error
	select {
	case err = <-waited:
		in.forgetIfEmpty(pgid)
	case <-ctx.Done():
		in.interrupt(pgid, waited)
		in.forgetIfEmpty(pgid)
		return fmt.Errorf("%s: %w", ra.Path, errInterrupted)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ra.Path, err)
	}
	return nil
}

// interrupt asks a process group to stop, kills it after interruptGrace and waits for the
// leader. Members that outlive their leader stay registered for Stop.
func (in *instance) interrupt(pgid int, waited <-chan error) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(interruptGrace)
	defer t.Stop()
	select {
	case <-waited:
	case <-t.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
	}
}

// forgetIfEmpty drops a process group once its last member has exited, so that monitor runs
// do not pile up and Stop never signals a group number the kernel may have reused. A group
// kept alive by a daemonized child stays registered until Stop.
func (in *instance) forgetIfEmpty(pgid int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		delete(in.groups, pgid)
	}
}

// resolveDir puts a relative run directory under the instance directory.
func (in *instance) resolveDir(dir string) string {
	if dir == "" {
		return in.dir
	}
	if filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(in.dir, dir)
}

// multiError reports several failures on one line, since it becomes a crash reason.
type multiError []error

func (m multiError) Error() string {
	msgs := make([]string, len(m))
	for i, err := range m {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (m multiError) Unwrap() []error { return m }

func joinErrors(errs []error) error {
	var m multiError
	for _, err := range errs {
		if err != nil {
			m = append(m, err)
		}
	}
	switch len(m) {
	case 0:
		return nil
	case 1:
		return m[0]
	}
	return m
}
