package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the cluster's PostgreSQL, read for what the API does not say
	"github.com/updatable-lrps/bbs/bbsclient"
)

// Config says how to start a cluster.
type Config struct {
	// BBS is the bbs binary; TemporalServer the real Temporal server (bin/temporal-server).
	BBS, TemporalServer string
	// Dir is the cluster's data directory (fresh for a run of its own).
	Dir string
	// Cells is how many cell agents run (default 3); CellExecutor is "process" (default)
	// or "sim".
	Cells        int
	CellExecutor string
	// Args are more flags for `bbs cluster`.
	Args []string
	// Logf, when set, receives the driver's progress.
	Logf func(format string, args ...any)
}

// Ports are the cluster's listeners, picked free on this machine so that a run never meets
// a `make cluster` or `make run` on their default ports.
type Ports struct {
	Front, Protocol, Base, PG, Temporal, UI, Router, RouterAdmin int
	// Metrics is the base of the processes' metrics listeners (up to base+30).
	Metrics int
	// Instances is where the cells' instance ports begin (a thousand per cell): above Linux's
	// ephemeral range for real processes, anywhere for simulated ones, which bind nothing.
	Instances int
}

// Cluster is a running `bbs cluster` that the driver started.
type Cluster struct {
	Dir   string
	Ports Ports
	// BBS calls the JSON API through the front with the cluster's client certificate.
	BBS *bbsclient.Client
	// RouterURL is the router's address (apps by Host header).
	RouterURL string
	// TLS is the client configuration every listener of the cluster accepts.
	TLS *tls.Config
	// Cells are the cell agents' names (cell-1, …), which are also their ids.
	Cells []string
	logf  func(format string, args ...any)

	cmd *exec.Cmd
	// log is where `bbs cluster` writes: its supervisor's lines say which process died and
	// when each is back.
	log  string
	done chan struct{}
	err  error

	dbOnce sync.Once
	db     *sql.DB
}

// Start starts `bbs cluster` and returns once it is up and its API available.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Cells == 0 {
		cfg.Cells = 3
	}
	if cfg.CellExecutor == "" {
		cfg.CellExecutor = "process"
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	p, err := pickPorts()
	if err != nil {
		return nil, err
	}
	p.Instances = 1000 // sim cells bind nothing
	if cfg.CellExecutor != "sim" {
		if p.Instances, err = pickInstanceBase(cfg.Cells, p); err != nil {
			return nil, err
		}
	}
	args := append([]string{"cluster", "--data-dir", cfg.Dir, "--temporal-server-bin", cfg.TemporalServer,
		"--listen", addr(p.Front), "--bbs-listen", addr(p.Protocol), "--port-base", strconv.Itoa(p.Base),
		"--pg-port", strconv.Itoa(p.PG), "--temporal-port", strconv.Itoa(p.Temporal), "--temporal-ui-port", strconv.Itoa(p.UI),
		"--router-listen", addr(p.Router), "--router-admin-listen", addr(p.RouterAdmin), "--metrics-port-base", strconv.Itoa(p.Metrics),
		"--instance-port-base", strconv.Itoa(p.Instances), "--cells", strconv.Itoa(cfg.Cells), "--cell-executor", cfg.CellExecutor}, cfg.Args...)
	c := &Cluster{Dir: cfg.Dir, Ports: p, RouterURL: "http://" + addr(p.Router), logf: logf,
		log: filepath.Join(cfg.Dir, "bbs-cluster.log"), done: make(chan struct{})}
	for i := 1; i <= cfg.Cells; i++ {
		c.Cells = append(c.Cells, fmt.Sprintf("cell-%d", i))
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	out, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	c.cmd = exec.Command(cfg.BBS, args...)
	c.cmd.Stdout, c.cmd.Stderr = out, out
	// Ctrl-C in a terminal reaches the driver, which stops the cluster in order; a driver
	// that dies without stopping it (a benchmark's timeout, a SIGKILL) has the cluster stop
	// itself as Ctrl-C would, PostgreSQL and the Temporal server with it, rather than leave
	// them running.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	began := time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bbs cluster: %w", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	if err := c.waitUp(ctx, 3*time.Minute); err != nil {
		c.Stop()
		out := c.Output()
		return nil, fmt.Errorf("%w\n%s", err, out[max(0, len(out)-4000):])
	}
	logf("bbs cluster up in %s (data in %s)", time.Since(began).Round(100*time.Millisecond), cfg.Dir)
	return c, nil
}

// waitUp waits for the banner, then for the API to say it is available.
func (c *Cluster) waitUp(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for !strings.Contains(c.Output(), "Ctrl-C stops everything") {
		select {
		case <-c.done:
			return fmt.Errorf("bbs cluster exited before it was up: %v", c.err)
		case <-ctx.Done():
			return fmt.Errorf("bbs cluster not up within %s", within)
		case <-time.After(100 * time.Millisecond):
		}
	}
	var err error
	if c.TLS, err = clientTLS(filepath.Join(c.Dir, "certs")); err != nil {
		return err
	}
	c.BBS = bbsclient.New("https://"+addr(c.Ports.Front), c.TLS)
	return retry(ctx, func(ctx context.Context) error {
		ok, err := c.BBS.Ping(ctx)
		if err == nil && !ok {
			err = errors.New("the API is not available yet")
		}
		return err
	})
}

// Stop stops the cluster as Ctrl-C does (every process in reverse order) and waits.
func (c *Cluster) Stop() error {
	if c.db != nil {
		c.db.Close()
	}
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(2 * time.Minute):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		return errors.New("bbs cluster did not stop within 2 minutes; killed")
	}
	return c.err
}

// Output is what `bbs cluster` printed (its supervisor's log: which process died, when each
// restarted), kept in <Dir>/bbs-cluster.log.
func (c *Cluster) Output() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// PID is the pid of the cluster's process name (api-1, worker-2, cell-3, temporal, ...) as
// its pid file says; PostgreSQL's is its postmaster's.
func (c *Cluster) PID(name string) (int, error) {
	file := filepath.Join(c.Dir, "run", name+".pid")
	if name == postgres {
		file = filepath.Join(c.Dir, "postgres", "postmaster.pid")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", name, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", name, err)
	}
	return pid, nil
}

// DB is the BBS's database, read directly for what the API does not say (who holds the
// placement lock, the event log); PostgreSQL trusts local connections in `bbs cluster`.
func (c *Cluster) DB() *sql.DB {
	c.dbOnce.Do(func() {
		c.db, _ = sql.Open("postgres", c.DatabaseURL())
		c.db.SetMaxOpenConns(2)
	})
	return c.db
}

// DatabaseURL is the BBS's database, for a reader that needs more connections than DB's.
func (c *Cluster) DatabaseURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bbs?sslmode=disable&connect_timeout=2", c.Ports.PG)
}

// TemporalAddress is the Temporal server's frontend, which takes the client certificate of
// TLS; its namespace is "default".
func (c *Cluster) TemporalAddress() string { return addr(c.Ports.Temporal) }

// clientTLS is the configuration of a client of the cluster: its CA and client certificate.
func clientTLS(dir string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", filepath.Join(dir, "ca.crt"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}, nil
}

// pickPorts finds a block of free ports below Linux's ephemeral range: a port the kernel
// hands out for ":0" may go to an outgoing connection before the server binds it.
func pickPorts() (Ports, error) {
	const block = 112
outer:
	for range 200 {
		base := 20000 + rand.IntN(10000-block)
		for p := base + 1; p <= base+block; p++ {
			l, err := net.Listen("tcp", addr(p))
			if err != nil {
				continue outer
			}
			l.Close()
		}
		return Ports{Base: base, Front: base + 70, Protocol: base + 71, PG: base + 72, Temporal: base + 73, UI: base + 74,
			Router: base + 75, RouterAdmin: base + 76, Metrics: base + 80}, nil
	}
	return Ports{}, errors.New("no block of free ports in 20000–29999")
}

// pickInstanceBase is a base for the cells' instance host ports (cell N takes the range from
// base+1000(N-1)) whose low end is free in every cell's range, below the kernel's ephemeral
// ports and away from the cluster's own block. Not `bbs cluster`'s default of 61000: another
// cluster on the machine (another test's, another session's) may hold those ports, and an
// instance that could not bind its port, whose health check then reached the other
// cluster's instance on it, passed as RUNNING while it was not (found by the upgrade test).
func pickInstanceBase(cells int, own Ports) (int, error) {
	const stride, used, lo, hi = 1000, 64, 30000, 32768
	span := (max(cells, 1)-1)*stride + used
	first := rand.IntN(hi - lo - span)
outer:
	for k := range hi - lo - span {
		base := lo + (first+k)%(hi-lo-span)
		for i := range max(cells, 1) {
			for p := base + i*stride + 1; p <= base+i*stride+used; p++ {
				if p > own.Base && p <= own.Base+112 {
					continue outer
				}
				l, err := net.Listen("tcp", addr(p))
				if err != nil {
					continue outer
				}
				l.Close()
			}
		}
		return base, nil
	}
	return 0, fmt.Errorf("no free instance ports for %d cells in %d–%d", cells, lo, hi)
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
