// Package dbtest gives tests a real PostgreSQL: one server per test binary (DATABASE_URL's,
// else a throwaway cluster started from the local server binaries) and a fresh database per
// test, cloned from a template migrated once.
package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq" // the PostgreSQL driver
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/pgcluster"
)

var (
	once      sync.Once
	setupErr  error
	cluster   *pgcluster.Cluster
	tmpDir    string
	serverURL *url.URL // any database on the server, for CREATE/DROP DATABASE
	template  string
	counter   atomic.Int64
)

// Main runs a package's tests, then the cleanups (e.g. stopping a Temporal dev server the
// tests shared), and stops the throwaway cluster, if one was started. Call it from TestMain:
// func TestMain(m *testing.M) { dbtest.Main(m) }.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	if cluster != nil {
		cluster.Stop()
		os.RemoveAll(tmpDir)
	} else if template != "" {
		admin(func(d *sql.DB) error {
			_, err := d.Exec(`DROP DATABASE IF EXISTS ` + template + ` WITH (FORCE)`)
			return err
		})
	}
	os.Exit(code)
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw := os.Getenv("DATABASE_URL")
	if raw == "" {
		var err error
		if tmpDir, err = os.MkdirTemp("", "bbs-test-pg-"); err != nil {
			return err
		}
		cluster, err = pgcluster.Start(ctx, pgcluster.Config{DataDir: tmpDir + "/data", Ephemeral: true})
		if err != nil {
			return fmt.Errorf("start a throwaway PostgreSQL (set DATABASE_URL to use a server of your own): %w", err)
		}
		raw = cluster.URL("postgres")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	serverURL = u
	template = fmt.Sprintf("bbs_template_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if err := admin(func(d *sql.DB) error {
		_, err := d.ExecContext(ctx, `CREATE DATABASE `+template)
		return err
	}); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	store, err := db.Open(ctx, databaseURL(template))
	if err != nil {
		return err
	}
	defer store.Close()
	return store.Migrate(ctx)
}

func databaseURL(name string) string {
	u := *serverURL
	u.Path = "/" + name
	return u.String()
}

func admin(fn func(*sql.DB) error) error {
	d, err := sql.Open("postgres", serverURL.String())
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(d)
}

// NewURL returns the URL of a fresh, migrated database of its own for t, dropped when t ends.
func NewURL(t testing.TB) string {
	t.Helper()
	once.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("test database: %v", setupErr)
	}
	return create(t, template)
}

// create makes a database from the given template, dropped when t ends.
func create(t testing.TB, from string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", template, counter.Add(1))
	if err := admin(func(d *sql.DB) error {
		_, err := d.Exec(`CREATE DATABASE ` + name + ` TEMPLATE ` + from)
		return err
	}); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		admin(func(d *sql.DB) error {
			_, err := d.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			return err
		})
	})
	return databaseURL(name)
}

// NewEmptyURL returns the URL of a fresh database with no schema, for tests of migrations.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	once.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("test database: %v", setupErr)
	}
	return create(t, "template0")
}

// NewStore returns a Store on a fresh, migrated database of its own for t.
func NewStore(t testing.TB) *db.Store {
	t.Helper()
	store, err := db.Open(context.Background(), NewURL(t))
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// ServerPID is the postmaster of the throwaway cluster the tests share, 0 when they use
// DATABASE_URL's server or none has started: the benchmarks count its CPU as the run's.
func ServerPID() int {
	if cluster == nil {
		return 0
	}
	return cluster.PID()
}
