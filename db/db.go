// Package db is the BBS store on PostgreSQL: plain SQL next to the Go that runs it, private row
// structs converted to and from the model, and every multi-row change in one transaction.
package db

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store reads and writes the BBS records.
type Store struct {
	db            *sqlx.DB
	url           string // for the notification connection; nobody outside needs it
	log           *zap.Logger
	now           func() time.Time
	restartPolicy model.RestartPolicy
	jit           JITMode
	unprepared    bool // WithStatementCache(false)
	cacheSize     int  // statements per connection; 0: statementCacheSize

	// claims and starts group the cells' batch reports into shared transactions.
	claims, starts reportGroup

	// patchProtobuf patches the protobuf of a definition a rollout group rolls
	// (WithProtobufPatcher).
	patchProtobuf ProtobufPatcher

	notifyMu sync.Mutex
	notifier *Notifier
	closed   bool
}

// Option tunes Open.
type Option func(*Store)

// WithLogger is where the store reports trouble it handles itself, such as a lost
// notification connection; without it, nowhere.
func WithLogger(log *zap.Logger) Option {
	return func(s *Store) {
		if log != nil {
			s.log = log
		}
	}
}

// JITMode is how the store keeps PostgreSQL's JIT compilation off in its sessions: it costs
// 100–200 ms on every query that reads the whole fleet and saves nothing on queries this
// short. A jit parameter in the connection string is sent as it is, whatever the mode, and
// an empty one (jit=) sends none, as JITServer does.
type JITMode string

const (
	// JITStartup sends jit=off as a startup parameter of each connection: nothing more to
	// send. PgBouncer refuses startup parameters it does not know (unless its
	// ignore_startup_parameters names jit), so behind it use JITSession.
	JITStartup JITMode = "startup"
	// JITSession runs SET jit = off on each new connection, one round trip more per
	// connection: it passes PgBouncer in session pooling mode.
	JITSession JITMode = "session"
	// JITServer leaves jit to the server's own settings (ALTER ROLE or ALTER DATABASE ... SET
	// jit = off there): behind a pooler in transaction mode, where a session's SET would stay
	// on a server connection other clients share.
	JITServer JITMode = "server"
)

// ParseJITMode reads a JITMode (BBS_DB_JIT); empty means JITStartup.
func ParseJITMode(s string) (JITMode, error) {
	switch m := JITMode(s); m {
	case "":
		return JITStartup, nil
	case JITStartup, JITSession, JITServer:
		return m, nil
	}
	return "", fmt.Errorf("unknown JIT mode %q: startup, session or server", s)
}

// WithJIT says how the store turns JIT off; without it, JITStartup.
func WithJIT(m JITMode) Option {
	return func(s *Store) { s.jit = m }
}

// WithStatementCache says whether each connection prepares the store's queries once and
// reuses them (preparingConnector); without it, they do. Off for a pooler in transaction mode
// that does not carry named statements between server connections.
func WithStatementCache(on bool) Option {
	return func(s *Store) { s.unprepared = !on }
}

// ParseStatementCache reads BBS_DB_STATEMENT_CACHE: on (or empty) or off.
func ParseStatementCache(v string) (bool, error) {
	switch v {
	case "", "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q: on or off", v)
}

// Open connects to the database at url (a postgres:// URL or PostgreSQL's key=value form)
// and checks that it answers.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	s := &Store{url: url, log: zap.NewNop(), now: time.Now, restartPolicy: model.DefaultRestartPolicy(), jit: JITStartup}
	for _, o := range opts {
		o(s)
	}
	connector, err := connector(url, s.jit)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if !s.unprepared {
		connector = preparingConnector{Connector: connector, size: s.cacheSize}
	}
	d := sqlx.NewDb(sql.OpenDB(connector), "postgres")
	d.SetMaxOpenConns(32)
	d.SetMaxIdleConns(32) // as many as open: reconnecting costs PostgreSQL a fork
	d.SetConnMaxIdleTime(5 * time.Minute)
	if err := d.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	s.db = d
	return s, nil
}

// Notifications is the process's one listening connection, started on the first call and
// shared by every later one: each listening connection holds a PostgreSQL backend, and all
// subscribers of a process fit on one.
func (s *Store) Notifications() *Notifier {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	if s.notifier == nil {
		s.notifier = newNotifier(s.url, s.log)
		if s.closed {
			s.notifier.Close()
		}
	}
	return s.notifier
}

// Close releases the connections, the notification connection too.
func (s *Store) Close() error {
	s.notifyMu.Lock()
	s.closed = true
	n := s.notifier
	s.notifyMu.Unlock()
	if n != nil {
		n.Close()
	}
	return s.db.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// DB exposes the handle for tests and tools in this module.
func (s *Store) DB() *sqlx.DB { return s.db }

// Migrate applies every embedded migration not yet applied. It holds a PostgreSQL advisory
// lock while it works, so any number of processes may call it at start-up at once. A
// database a newer release has migrated is refused with a *SchemaNewerError: a migration is
// written to keep the previous release's code working while both run (docs/OPERATING.md,
// "Upgrades"), but a build started anew on a schema it does not know cannot tell.
func (s *Store) Migrate(ctx context.Context) error {
	src, err := iofs.New(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	// A connection of its own, released afterwards: the migrator must not close the pool.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return mapError(err)
	}
	drv, err := postgres.WithConnection(ctx, conn, &postgres.Config{MigrationsTable: "schema_migrations"})
	if err != nil {
		conn.Close()
		return fmt.Errorf("prepare migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", drv)
	if err != nil {
		drv.Close()
		return fmt.Errorf("prepare migrations: %w", err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		if at, _, verr := m.Version(); verr == nil {
			if newer := schemaNewer(at); newer != nil {
				return newer
			}
		}
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// inTx runs fn in one transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return mapError(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return mapError(err)
	}
	return mapError(tx.Commit())
}

// conflictAttempts is how often inTxRetried tries a transaction.
const conflictAttempts = 3

// inTxRetried is inTx, tried again when PostgreSQL aborted the transaction to break a
// deadlock (or a serialization failure): for writers that lock many LRPs at once, which may
// meet a single write that locks in the other order (an instance, then its LRP when the
// instance makes a definition healthy). Each attempt is a fresh transaction, so fn must not
// keep anything from an aborted one.
func (s *Store) inTxRetried(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var err error
	for range conflictAttempts {
		if err = s.inTx(ctx, fn); !model.IsType(err, model.ErrResourceConflict) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// SetRestartPolicy replaces the crash restart policy (tests and operators may shorten it).
func (s *Store) SetRestartPolicy(p model.RestartPolicy) { s.restartPolicy = p }

// timeFromNanos converts BBS's `since` back to a time.
func timeFromNanos(n int64) time.Time { return time.Unix(0, n) }

// nowNanos is the time in BBS's `since` unit.
func (s *Store) nowNanos() int64 { return s.now().UnixNano() }

// connector is lib/pq's connector for dsn with the store's session settings: each query's
// parameters travel with the query itself (binary_parameters: one round trip instead of
// two, preparing an unnamed statement first) and JIT is off as jit says. The connection
// string's own binary_parameters or jit, in either form, wins. []byte parameters travel in
// binary format: pass JSON as a string (jsonText).
func connector(dsn string, jit JITMode) (driver.Connector, error) {
	dsn, err := withParameter(dsn, "binary_parameters", "yes")
	if err != nil {
		return nil, err
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, err
	}
	own, err := parameterIn(dsn, cfg, "jit")
	if err != nil {
		return nil, err
	}
	if own != nil && *own == "" {
		// jit= with no value: send none, leave it to the server (as JITServer does).
		delete(cfg.Runtime, "jit")
	}
	if own == nil {
		switch jit {
		case JITStartup:
			cfg.Runtime["jit"] = "off"
		case JITSession:
			c, err := newConnector(cfg)
			if err != nil {
				return nil, err
			}
			return onConnect{Connector: c, setup: "SET jit = off"}, nil
		case JITServer:
		default:
			return nil, fmt.Errorf("unknown JIT mode %q", jit)
		}
	}
	return newConnector(cfg)
}

// newConnector is lib/pq's connector for cfg, dialing with bufferedDialer.
func newConnector(cfg pq.Config) (*pq.Connector, error) {
	c, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.Dialer(bufferedDialer{})
	return c, nil
}

// readBuffer is how much of what PostgreSQL sends a connection reads at once.
const readBuffer = 64 << 10

// bufferedDialer dials as lib/pq's own dialer does (a plain net.Dialer), and has the
// connection read through a buffer of readBuffer bytes. lib/pq reads through one of 4 KiB:
// a list of the fleet (75 MB from PostgreSQL at 250,000 instances) took 18,000 read system
// calls, a seventh of the list's reading time in Go. TLS, when negotiated, runs above it.
type bufferedDialer struct{ d net.Dialer }

func (b bufferedDialer) Dial(network, address string) (net.Conn, error) {
	return b.DialContext(context.Background(), network, address)
}

func (b bufferedDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return b.DialContext(ctx, network, address)
}

func (b bufferedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := b.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer)}, nil
}

// bufferedConn is a connection read through r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// parameterIn returns the value dsn (parsed as cfg) gives the run-time parameter name, or
// nil when it gives none. A URL's empty value counts: lib/pq drops it from cfg.
func parameterIn(dsn string, cfg pq.Config, name string) (*string, error) {
	if isURL(dsn) {
		u, err := neturl.Parse(dsn)
		if err != nil {
			return nil, errUnparseableURL
		}
		if q := u.Query(); q.Has(name) {
			v := q.Get(name)
			return &v, nil
		}
		return nil, nil
	}
	if v, ok := cfg.Runtime[name]; ok {
		return &v, nil
	}
	return nil, nil
}

// isURL says whether lib/pq reads dsn as a URL rather than as key=value pairs.
func isURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// errUnparseableURL stands for url.Parse's error, which would quote the URL, password and all.
var errUnparseableURL = errors.New("the database URL does not parse")

// onConnect runs setup on every connection it opens, before the pool hands it out:
// database/sql has no hook of its own for that.
type onConnect struct {
	driver.Connector
	setup string
}

func (c onConnect) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("the driver's connection cannot run %q", c.setup)
	}
	if _, err := ex.ExecContext(ctx, c.setup, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// withParameter adds name=value to a connection string unless it sets name itself: to a
// URL's query, or before the key=value pairs, where a later setting of the same key wins
// (lib/pq, like libpq, keeps the last), however the pairs are spaced or quoted.
func withParameter(dsn, name, value string) (string, error) {
	if !isURL(dsn) {
		return name + "=" + value + " " + dsn, nil
	}
	u, err := neturl.Parse(dsn)
	if err != nil {
		return "", errUnparseableURL
	}
	if u.Query().Has(name) {
		return dsn, nil
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + neturl.QueryEscape(name) + "=" + neturl.QueryEscape(value), nil
}
