package boot

import (
	"context"
	"crypto/tls"
	"flag"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/db"
	"go.uber.org/zap"
)

// Command is a subcommand's flag set and the preamble it asks of Start. Every command has
// --log-level; metrics, the server and peer TLS files and the store only those that ask for
// them, by the methods below, before Start.
type Command struct {
	// Flags is the command's flag set: the command registers its own flags on it.
	Flags *flag.FlagSet

	logLevel  *string
	console   bool
	checks    []func() error
	metrics   *Metrics
	serverTLS *ServerTLS
	peerTLS   *ClientTLS
	store     bool
}

// NewCommand is the preamble of the command name, whose flag set has --log-level.
func NewCommand(name string) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return &Command{Flags: fs, logLevel: LogLevelFlag(fs)}
}

// LogLevel is the --log-level flag, once parsed: the stacks hand it to their children.
func (c *Command) LogLevel() string { return *c.logLevel }

// ConsoleLog makes Start build a console logger, for the stacks an operator watches in a
// terminal, instead of JSON.
func (c *Command) ConsoleLog() { c.console = true }

// Check adds a check of the parsed flags, run before anything is started.
func (c *Command) Check(check func() error) { c.checks = append(c.checks, check) }

// ServerTLS registers the BBS_TLS_* files (--tls-*) the command's listeners require beyond
// loopback; Start loads them into Process.ServerTLS.
func (c *Command) ServerTLS() *ServerTLS {
	c.serverTLS = &ServerTLS{}
	c.serverTLS.Register(c.Flags)
	return c.serverTLS
}

// PeerTLS registers the files the command presents to and trusts of the API, the cells or
// the replicas it calls (--peer-ca, --client-*); Start loads them into Process.PeerTLS.
func (c *Command) PeerTLS() *ClientTLS {
	c.peerTLS = &ClientTLS{}
	c.peerTLS.Register(c.Flags)
	return c.peerTLS
}

// Metrics registers --metrics-listen with the default def; Start serves the process's
// registry there. Called after ServerTLS, the metrics listener takes the same files;
// otherwise files of its own.
func (c *Command) Metrics(def string) { c.metrics = RegisterMetrics(c.Flags, def, c.serverTLS) }

// Store makes Start open the store named by DATABASE_URL (or DATABASE_URL_FILE).
func (c *Command) Store() { c.store = true }

// Process is what Start made: close it when the command returns.
type Process struct {
	Log *zap.Logger
	// Metrics is the process's registry, served unless --metrics-listen is empty (or
	// Command.Metrics was not called).
	Metrics *prometheus.Registry
	// Store is open when Command.Store was called.
	Store *db.Store
	// ServerTLS and PeerTLS are the loaded files, nil when none are named.
	ServerTLS, PeerTLS *tls.Config

	closers []func()
}

// Close releases what Start made, in reverse order: the store, the metrics listener, and
// the logger's buffer last.
func (p *Process) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

// Start is the preamble every command runs, in this order: parse args (flag.ErrHelp for
// -h), run the checks, build the logger, serve the metrics, open the store, load the TLS
// files. On an error what was started is released again.
func (c *Command) Start(ctx context.Context, args []string) (*Process, error) {
	if err := c.Flags.Parse(args); err != nil {
		return nil, err
	}
	for _, check := range c.checks {
		if err := check(); err != nil {
			return nil, err
		}
	}
	log, err := NewLogger(*c.logLevel, c.console)
	if err != nil {
		return nil, err
	}
	p := &Process{Log: log, closers: []func(){func() { log.Sync() }}}
	if err := c.start(ctx, p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// start does what Start does after the logger.
func (c *Command) start(ctx context.Context, p *Process) error {
	if c.metrics != nil {
		reg, stop, err := c.metrics.Start(p.Log)
		if err != nil {
			return err
		}
		p.Metrics, p.closers = reg, append(p.closers, stop)
	}
	if c.store {
		store, err := OpenStoreFromEnv(ctx, p.Log)
		if err != nil {
			return err
		}
		p.Store, p.closers = store, append(p.closers, func() { store.Close() })
	}
	var err error
	if c.serverTLS != nil {
		if p.ServerTLS, err = c.serverTLS.Config(); err != nil {
			return err
		}
	}
	if c.peerTLS != nil {
		if p.PeerTLS, err = c.peerTLS.Config(); err != nil {
			return err
		}
	}
	return nil
}
