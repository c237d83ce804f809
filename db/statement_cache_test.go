package db_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// openOneConnection opens a store on a fresh database whose pool holds a single connection,
// so that what one call prepared is there for the next.
func openOneConnection(t *testing.T, opts ...db.Option) *db.Store {
	t.Helper()
	s, err := db.Open(ctx, dbtest.NewURL(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.DB().SetMaxOpenConns(1)
	return s
}

// prepared lists the statements the session has prepared (pg_prepared_statements), read
// without parameters so that reading adds none.
func prepared(t *testing.T, s *db.Store) []string {
	t.Helper()
	var stmts []string
	if err := s.DB().SelectContext(ctx, &stmts, `SELECT statement FROM pg_prepared_statements ORDER BY prepare_time`); err != nil {
		t.Fatal(err)
	}
	return stmts
}

func TestStatementsWithParametersArePreparedOnce(t *testing.T) {
	s := openOneConnection(t)
	const q = `SELECT $1::int + 1`
	for i := range 3 {
		var n int
		if err := s.DB().GetContext(ctx, &n, q, i); err != nil {
			t.Fatal(err)
		}
		if n != i+1 {
			t.Fatalf("call %d: %d", i, n)
		}
	}
	if _, err := s.DB().ExecContext(ctx, `SELECT pg_sleep($1)`, 0); err != nil {
		t.Fatal(err)
	}
	if got := prepared(t, s); len(got) != 2 || got[0] != q || got[1] != `SELECT pg_sleep($1)` {
		t.Fatalf("prepared statements: %q, want the two queries once each", got)
	}

	// A query whose plan depends on its parameters is planned for each call.
	if _, err := s.DB().ExecContext(ctx, db.PlanPerCall+`SELECT $1::text = '' OR $1 = 'x'`, "x"); err != nil {
		t.Fatal(err)
	}
	if got := prepared(t, s); len(got) != 2 {
		t.Fatalf("prepared statements after a query planned per call: %q", got)
	}

	off := openOneConnection(t, db.WithStatementCache(false))
	var n int
	if err := off.DB().GetContext(ctx, &n, q, 1); err != nil {
		t.Fatal(err)
	}
	if got := prepared(t, off); len(got) != 0 {
		t.Fatalf("with the cache off: prepared %q", got)
	}
}

func TestStatementCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	s := openOneConnection(t, db.WithStatementCacheSize(2))
	run := func(q string) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, q, 1); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := `SELECT $1::int AS a`, `SELECT $1::int AS b`, `SELECT $1::int AS c`
	run(a)
	run(b)
	run(a) // b is now the least recently used
	run(c)
	if got := strings.Join(prepared(t, s), " | "); got != a+" | "+c {
		t.Fatalf("prepared statements: %s, want %s | %s", got, a, c)
	}
}

func TestStatementCacheForgetsAStatementWhoseResultChanged(t *testing.T) {
	s := openOneConnection(t)
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 7)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT * FROM t WHERE id = $1`
	var row struct {
		ID int    `db:"id"`
		V  string `db:"v"`
	}
	if err := s.DB().GetContext(ctx, &row, q, 1); err != nil {
		t.Fatal(err)
	}
	// A migration changes what the prepared query returns.
	if _, err := s.DB().ExecContext(ctx, `ALTER TABLE t ALTER COLUMN v TYPE text`); err != nil {
		t.Fatal(err)
	}
	err := s.DB().GetContext(ctx, &row, q, 1)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "0A000" {
		t.Fatalf("first call after the change: %v, want PostgreSQL's cached plan error (if PostgreSQL now replans, this test and the cache's check can go)", err)
	}
	if err := s.DB().GetContext(ctx, &row, q, 1); err != nil || row.V != "7" {
		t.Fatalf("next call: %+v, %v; want it prepared afresh", row, err)
	}
}
