package db_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/postgres" // the migrator's postgres:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// The migrations apply in the order of their numbers, a gap in them allowed (a number left to
// a change made at the same time, which then lands with its own): each number has its up and
// its down, a fresh database ends at the highest, and the latest steps down and up again.
func TestMigrationsApplyInOrder(t *testing.T) {
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.(up|down)\.sql$`)
	halves := map[uint][]string{}
	for _, f := range files {
		m := name.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			t.Fatalf("%s: not NNNN_name.up.sql or .down.sql", f)
		}
		v, _ := strconv.ParseUint(m[1], 10, 32)
		halves[uint(v)] = append(halves[uint(v)], m[2])
	}
	var versions []uint
	for v, h := range halves {
		if slices.Sort(h); !slices.Equal(h, []string{"down", "up"}) {
			t.Fatalf("migration %04d has %v, want one up and one down", v, h)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	latest, before := versions[len(versions)-1], versions[len(versions)-2]

	url := dbtest.NewEmptyURL(t)
	s, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	at := func() uint {
		var v uint
		var dirty bool
		if err := s.DB().QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&v, &dirty); err != nil {
			t.Fatal(err)
		}
		if dirty {
			t.Fatalf("schema_migrations dirty at %d", v)
		}
		return v
	}
	lastControl := func() int {
		return count(t, s, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'rollouts' AND column_name = 'last_control'`)
	}
	if v := at(); v != latest || lastControl() != 1 {
		t.Fatalf("a fresh database is at %d (last_control columns %d), want %d", v, lastControl(), latest)
	}

	src, err := iofs.New(os.DirFS("migrations"), ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, url)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Steps(-1); err != nil {
		t.Fatal(err)
	}
	if v := at(); v != before {
		t.Fatalf("one step down is %d, want %d", v, before)
	}
	if latest == 17 && lastControl() != 0 {
		t.Fatal("0017's down left rollouts.last_control")
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v := at(); v != latest || lastControl() != 1 {
		t.Fatalf("up again: at %d (last_control columns %d), want %d", v, lastControl(), latest)
	}
}

// A build started on a database a newer release migrated refuses it, saying which versions
// and what to do, rather than with the migration library's words; the database is left as
// it was.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	url := dbtest.NewEmptyURL(t)
	s, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var known uint
	if err := s.DB().QueryRowContext(ctx, `SELECT version FROM schema_migrations`).Scan(&known); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE schema_migrations SET version = $1`, known+1); err != nil {
		t.Fatal(err)
	}
	err = s.Migrate(ctx)
	var newer *db.SchemaNewerError
	if !errors.As(err, &newer) || newer.Database != known+1 || newer.Known != known {
		t.Fatalf("Migrate on a schema at %d (this build knows %d): %v", known+1, known, err)
	}
	for _, want := range []string{fmt.Sprintf("at version %d, newer than this build's %d", known+1, known), "run that release or a newer one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	var at uint
	var dirty bool
	if err := s.DB().QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&at, &dirty); err != nil || at != known+1 || dirty {
		t.Fatalf("after the refusal the schema is at %d (dirty %v, %v), want %d as it was", at, dirty, err, known+1)
	}
}
