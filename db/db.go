// Package db is the BBS store on PostgreSQL: plain SQL next to the Go that runs it, private row
// structs converted to and from the model, and every multi-row change in one transaction.
package db

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the PostgreSQL driver
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

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	d, err := sqlx.Open("postgres", withBinaryParameters(url))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	d.SetMaxOpenConns(32)
	d.SetMaxIdleConns(32) // as many as open: reconnecting costs PostgreSQL a fork
	d.SetConnMaxIdleTime(5 * time.Minute)
	if err := d.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	s := &Store{db: d, url: url, log: zap.NewNop(), now: time.Now, restartPolicy: model.DefaultRestartPolicy()}
	for _, o := range opts {
		o(s)
	}
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
// lock while it works, so any number of processes may call it at start-up at once.
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

// withBinaryParameters asks lib/pq to send each query's parameters with the query itself
// (one round trip) instead of preparing an unnamed statement first (two), and turns
// PostgreSQL's JIT compilation off for the session: it costs 100–200 ms on every query that
// reads the whole fleet and saves nothing on queries this short. Either can be overridden in
// the URL. []byte parameters travel in binary format: pass JSON as a string (jsonText).
func withBinaryParameters(url string) string {
	return withParameter(withParameter(url, "binary_parameters", "yes"), "jit", "off")
}

// withParameter adds name=value to a connection string, URL or key=value form, unless it
// sets name already.
func withParameter(url, name, value string) string {
	if strings.Contains(url, name+"=") {
		return url
	}
	p := name + "=" + value
	switch {
	case !strings.Contains(url, "://"):
		return url + " " + p
	case strings.Contains(url, "?"):
		return url + "&" + p
	default:
		return url + "?" + p
	}
}
