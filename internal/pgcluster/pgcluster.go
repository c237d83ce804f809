// Package pgcluster starts and stops a private PostgreSQL server from the
// PostgreSQL server binaries installed on the machine (initdb, pg_ctl,
// postgres), with no Docker and no downloads. The dev mode (`make run`) uses
// it for a persistent cluster that keeps its data between runs, and the test
// harness for throwaway clusters in temporary directories.
//
// The server listens only on 127.0.0.1 and trusts every local connection as
// the "postgres" superuser, which is acceptable for a developer machine or a
// test but never for anything shared. The package is Unix-only.
package pgcluster

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// startTimeout bounds how long Start waits for the server to accept
// connections; crash recovery of a dev cluster can take a while.
const startTimeout = 60 * time.Second

// Config says where and how to run the cluster.
type Config struct {
	// DataDir is the cluster's directory. Start runs initdb when it holds no
	// cluster yet (no PG_VERSION file) and otherwise resumes the cluster,
	// which is how the dev mode keeps its data across runs.
	DataDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one, which lets
	// parallel test binaries each run their own server.
	Port int
	// BinDir holds initdb, pg_ctl and postgres; "" means FindBinDir.
	BinDir string
	// Ephemeral trades durability for speed (fsync, synchronous_commit and
	// full_page_writes off): right for tests, whose data is thrown away, and
	// wrong for anything that must survive a machine crash.
	Ephemeral bool
	// LogFile receives the server log; "" means DataDir+".log", next to the
	// data directory because initdb needs DataDir itself to be empty.
	LogFile string
}

// Cluster is a running PostgreSQL server started by Start. Its methods are
// safe for concurrent use.
type Cluster struct {
	binDir  string
	dataDir string
	logFile string
	port    int
	user    *runAs

	mu      sync.Mutex
	stopped bool

	// pid is the postmaster's, as postmaster.pid said once the server was up; the watch
	// closes exited (with exitErr) once that process is gone, or Stop has stopped it.
	pid       int
	exited    chan struct{}
	exitOnce  sync.Once
	exitErr   error
	quitWatch chan struct{}
	quitOnce  sync.Once
}

// watchInterval is how often a running cluster checks that its postmaster is alive.
const watchInterval = 250 * time.Millisecond

// Start brings up the cluster described by cfg and returns once it accepts
// connections. It creates DataDir (and missing parents) and initialises it if
// needed. As root it runs the server as the "postgres" (else "nobody")
// account, handing DataDir and the log file to it; every parent directory of
// DataDir must then be enterable by that account, and Start only fixes that
// by itself (chmod o+x) for directories below os.TempDir(). A postmaster.pid
// left by a crashed run is cleared, but a server still running on DataDir is
// reported as an error. On failure the error carries the tail of the server
// log, and nothing is left running.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("pgcluster: Config.DataDir is empty")
	}
	binDir := cfg.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if err := checkBinDir(binDir); err != nil {
		return nil, fmt.Errorf("pgcluster: BinDir %s: %w", binDir, err)
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	logFile := cfg.LogFile
	if logFile == "" {
		logFile = dataDir + ".log"
	}
	if logFile, err = filepath.Abs(logFile); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	u, err := serverUser()
	if err != nil {
		return nil, err
	}
	c := &Cluster{binDir: binDir, dataDir: dataDir, logFile: logFile, port: cfg.Port, user: u,
		exited: make(chan struct{}), quitWatch: make(chan struct{})}

	if err := c.prepareDirs(); err != nil {
		return nil, err
	}
	if err := c.clearStalePID(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := c.initdb(ctx, cfg.Ephemeral); err != nil {
			return nil, err
		}
	}
	if c.port == 0 {
		if c.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := c.start(ctx, cfg.Ephemeral); err != nil {
		// pg_ctl may have launched the server before failing or being
		// cancelled; the postmaster is detached from us, so stop it
		// explicitly to leave no orphan behind.
		_ = c.Stop()
		return nil, err
	}
	c.pid = readPID(filepath.Join(c.dataDir, "postmaster.pid"))
	go c.watch()
	return c, nil
}

// PID is the postmaster's process id.
func (c *Cluster) PID() int { return c.pid }

// Done is closed once the server has gone away: its postmaster died (a crash, a kill; Err
// says so) or Stop stopped it. The postmaster is not our child (pg_ctl detaches it), so its
// death is noticed by looking, every watchInterval.
func (c *Cluster) Done() <-chan struct{} { return c.exited }

// Err says why the server went away, once Done is closed: nil after Stop.
func (c *Cluster) Err() error {
	select {
	case <-c.exited:
		return c.exitErr
	default:
		return nil
	}
}

func (c *Cluster) watch() {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quitWatch:
			return
		case <-t.C:
		}
		if !postmasterAlive(c.dataDir, c.pid) {
			c.markExited(fmt.Errorf("its postmaster (pid %d) is gone (see %s)", c.pid, c.logFile))
			return
		}
	}
}

func (c *Cluster) markExited(err error) {
	c.exitOnce.Do(func() {
		c.exitErr = err
		close(c.exited)
	})
}

// Port returns the TCP port the server listens on (on 127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// URL returns a lib/pq / pgx connection URL for database dbname as the
// "postgres" superuser. TLS is off because the server is loopback-only.
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(dbname))
}

// dbNameRE keeps database names to plain identifiers, so they never need
// quoting rules beyond double quotes and cannot smuggle in SQL.
var dbNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// CreateDatabase creates database name unless it already exists, so that
// callers can run it on every start of a persistent cluster. The name must
// match ^[a-z_][a-z0-9_]*$.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	if !dbNameRE.MatchString(name) {
		return fmt.Errorf("pgcluster: invalid database name %q: want ^[a-z_][a-z0-9_]*$", name)
	}
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("pgcluster: checking for database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	// CREATE DATABASE takes no parameters; the name was validated above.
	_, err = db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "42P04" { // duplicate_database: lost a race, same outcome
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: creating database %s: %w", name, err)
	}
	return nil
}

// Stop shuts the server down and waits until it has exited. It first asks
// for a fast shutdown (clients disconnected, clean checkpoint); if that fails
// it uses an immediate shutdown (crash recovery on the next start) and, as a
// last resort, kills the server's process group, so that no postgres
// processes outlive the caller. Calling Stop again, or on a server that has
// already gone away, returns nil.
func (c *Cluster) Stop() error {
	c.quitOnce.Do(func() { close(c.quitWatch) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	defer func() {
		if c.stopped {
			c.markExited(nil)
		}
	}()
	// The server is gone when no postgres process works on DataDir any
	// more. That covers a crashed server whose stale postmaster.pid would
	// make pg_ctl report a failure although there is nothing left to stop.
	pid := readPID(filepath.Join(c.dataDir, "postmaster.pid"))
	gone := func() bool { _, alive := liveServer(c.dataDir, pid); return !alive }
	if gone() {
		c.stopped = true
		return nil
	}
	var errs []error
	for _, mode := range []string{"fast", "immediate"} {
		// Not tied to any caller context: Stop typically runs after that
		// context has been cancelled, and must still finish its job.
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout+10*time.Second)
		out, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", mode, "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)))
		cancel()
		// pg_ctl returns once postmaster.pid is gone, which the postmaster
		// removes just before it exits; wait for the exit itself so that
		// callers may delete DataDir right away.
		for deadline := time.Now().Add(10 * time.Second); err == nil && !gone() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if gone() {
			c.stopped = true
			return nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, bytes.TrimSpace(out)))
		} else {
			errs = append(errs, fmt.Errorf("pg_ctl stop -m %s succeeded but the server is still running", mode))
		}
	}
	if pid, ok := liveServer(c.dataDir, pid); ok {
		if err := killGroup(pid); err != nil {
			errs = append(errs, fmt.Errorf("killing process group of pid %d: %w", pid, err))
		}
	}
	return fmt.Errorf("pgcluster: stopping the server on %s: %w", c.dataDir, errors.Join(errs...))
}

// prepareDirs creates DataDir (0700, as postgres insists) with any missing
// parents and the log file, and hands them to the server account: pg_ctl
// opens the log file as that account, and the directory holding it may
// belong to root.
func (c *Cluster) prepareDirs() error {
	if err := os.MkdirAll(filepath.Dir(c.dataDir), 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.user.ensureTraversable(filepath.Dir(c.dataDir)); err != nil {
		return err
	}
	if err := os.Mkdir(c.dataDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.logFile), 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.user.ensureTraversable(filepath.Dir(c.logFile)); err != nil {
		return err
	}
	f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("pgcluster: creating the server log: %w", err)
	}
	f.Close()
	if err := c.user.chownAll(c.dataDir); err != nil {
		return fmt.Errorf("pgcluster: handing %s to %s: %w", c.dataDir, c.user, err)
	}
	if err := c.user.chownAll(c.logFile); err != nil {
		return fmt.Errorf("pgcluster: handing %s to %s: %w", c.logFile, c.user, err)
	}
	return nil
}

// clearStalePID refuses to start when a server still works on DataDir, and
// otherwise removes a postmaster.pid left by a crash. Postgres would clear it
// itself, except when the recorded pid has been reused by another process or
// is an unreaped zombie (common in containers), which makes it refuse to
// start; since no postgres process uses the directory, removing it is safe.
func (c *Cluster) clearStalePID() error {
	pidFile := filepath.Join(c.dataDir, "postmaster.pid")
	if _, err := os.Stat(pidFile); err != nil {
		return nil
	}
	if pid, ok := liveServer(c.dataDir, readPID(pidFile)); ok {
		return fmt.Errorf("pgcluster: a postgres server (pid %d) is already running on %s; stop it first (%s/pg_ctl stop -D %s)", pid, c.dataDir, c.binDir, c.dataDir)
	}
	if err := os.Remove(pidFile); err != nil {
		return fmt.Errorf("pgcluster: removing stale %s: %w", pidFile, err)
	}
	return nil
}

// initdb creates a new cluster in DataDir. Trust authentication is fine
// because the server only listens on 127.0.0.1; --no-locale keeps sorting and
// messages independent of the developer's environment.
func (c *Cluster) initdb(ctx context.Context, ephemeral bool) error {
	args := []string{"-D", c.dataDir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale"}
	if ephemeral {
		args = append(args, "--no-sync") // throwaway data need not reach the disk
	}
	if out, err := c.run(ctx, "initdb", args...); err != nil {
		return fmt.Errorf("pgcluster: initdb %s: %w\n%s", c.dataDir, err, bytes.TrimSpace(out))
	}
	return nil
}

// start launches the server through pg_ctl and waits for it to accept
// connections. The settings are passed on the command line rather than
// written to the configuration, so that each start may use another port and
// a dev cluster can switch between ephemeral and durable tuning.
func (c *Cluster) start(ctx context.Context, ephemeral bool) error {
	opts := []string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(c.port),
		// No Unix socket: its default directory, /var/run/postgresql, may be
		// missing or not writable by the server account.
		"-c unix_socket_directories=''",
		"-c max_connections=200",
	}
	if ephemeral {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout+10*time.Second)
	defer cancel()
	out, err := c.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", c.logFile, "-w",
		"-t", strconv.Itoa(int(startTimeout/time.Second)), "-o", strings.Join(opts, " "))
	if err != nil {
		return c.startError(fmt.Errorf("pg_ctl start: %w: %s", err, bytes.TrimSpace(out)))
	}
	// pg_ctl -w only watches postmaster.pid; a real query proves that TCP
	// and authentication work too.
	db, err := sql.Open("postgres", c.URL("postgres")+"&connect_timeout=5")
	if err != nil {
		return c.startError(err)
	}
	defer db.Close()
	for {
		var one int
		err = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.startError(fmt.Errorf("server does not accept connections on port %d: %w", c.port, err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startError wraps a start failure with the end of the server log, which is
// where postgres explains why it would not come up.
func (c *Cluster) startError(err error) error {
	return fmt.Errorf("pgcluster: starting postgres on %s: %w\n--- last lines of %s ---\n%s", c.dataDir, err, c.logFile, logTail(c.logFile, 20))
}

// run executes a server binary as the server account, in its own process
// group, and returns its combined output. The working directory is / because
// the caller's may not be accessible to the server account, and PG*
// variables are dropped so that the caller's environment (PGDATA, PGPORT...)
// cannot redirect the tools.
func (c *Cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = "/"
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	c.user.prepare(cmd)
	return cmd.CombinedOutput()
}
