package clusterstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/updatable-lrps/bbs/internal/supervise"
	"go.uber.org/zap"
)

// child is a supervised child of the cluster.
type child struct {
	name string
	sup  *supervise.Supervisor
}

// pidFile is where a child's pid is kept, for fault injection (make chaos).
func (c *cluster) pidFile(name string) string { return filepath.Join(c.dir, "run", name+".pid") }

// watch supervises a child that is running, restarting it with start when it dies; the
// first that fails for good ends Run.
func (c *cluster) watch(name string, first supervise.Child, start func(context.Context) (supervise.Child, error)) {
	s := supervise.Watch(name, first, start, supervise.DefaultPolicy, c.log)
	c.children = append(c.children, &child{name: name, sup: s})
	go func() {
		<-s.Failed()
		select {
		case c.failed <- s.Err():
		default:
		}
	}()
	c.log.Info(name+" is up", zap.Int("pid", first.PID()))
}

// start starts a child with start and supervises it.
func (c *cluster) start(ctx context.Context, name string, start func(context.Context) (supervise.Child, error)) error {
	first, err := start(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.watch(name, first, start)
	return nil
}

// process starts and supervises a child process described by cmd, its pid file named after
// name in lower case ("Temporal UI" → run/temporal-ui.pid).
func (c *cluster) process(ctx context.Context, name string, cmd supervise.Command) error {
	if cmd.PIDFile == "" {
		cmd.PIDFile = c.pidFile(strings.ToLower(strings.ReplaceAll(name, " ", "-")))
	}
	return c.start(ctx, name, func(ctx context.Context) (supervise.Child, error) { return supervise.Start(ctx, cmd) })
}

// bbs starts `bbs <args>` as the child name, configured by env (on top of ours, without any
// BBS_, DATABASE_URL or TEMPORAL_ setting of our own, so that the children get exactly what
// the banner says), its output in <dir>/<name>.log; ready once it listens on ready, if set.
func (c *cluster) bbs(ctx context.Context, name string, args []string, env map[string]string, ready string, stop syscall.Signal) error {
	return c.process(ctx, name, supervise.Command{Path: c.self, Args: args, Env: childEnv(os.Environ(), env),
		LogFile: filepath.Join(c.dir, name+".log"), PIDFile: c.pidFile(name), ReadyAddr: ready,
		StopSignal: stop, StopTimeout: 30 * time.Second})
}

// stopAll stops the children in reverse order: cells first (they withdraw their presence
// through the API), PostgreSQL last.
func (c *cluster) stopAll() {
	for i := len(c.children) - 1; i >= 0; i-- {
		ch := c.children[i]
		c.log.Info("stopping " + ch.name)
		if err := ch.sup.Stop(); err != nil {
			c.log.Error("stopping "+ch.name, zap.Error(err))
		}
	}
}

// childEnv is environ without the settings `bbs cluster` decides, plus env.
func childEnv(environ []string, env map[string]string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "BBS_") || strings.HasPrefix(name, "DATABASE_URL") || strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "SSHD_") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
