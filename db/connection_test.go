package db_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// keyValueDSN is a URL of dbtest's in PostgreSQL's key=value form, with sep between each
// key and its value (libpq allows spaces around the '=').
func keyValueDSN(t *testing.T, raw, sep string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	kv := []string{"host", u.Hostname(), "port", u.Port(), "user", u.User.Username(), "dbname", strings.TrimPrefix(u.Path, "/")}
	for k, v := range u.Query() {
		kv = append(kv, k, v[0])
	}
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		fmt.Fprintf(&b, "%s%s%s ", kv[i], sep, kv[i+1])
	}
	return strings.TrimSpace(b.String())
}

// sessionOf reports what the store's sessions run with: whether []byte parameters travel in
// binary format (lib/pq's binary_parameters: JSON as []byte then reaches jsonb in binary
// format, which jsonb refuses, where lib/pq's text format passes it as text), and jit with
// where its value came from (pg_settings.source: "client" for a startup parameter,
// "session" for a SET).
func sessionOf(t *testing.T, s *db.Store) (binary bool, jit, source string) {
	t.Helper()
	var text string
	err := s.DB().GetContext(ctx, &text, `SELECT $1::jsonb::text`, []byte(`{"a": 1}`))
	switch {
	case err == nil && text == `{"a": 1}`:
	case err != nil && strings.Contains(err.Error(), "unsupported jsonb version"):
		binary = true
	default:
		t.Fatalf("jsonb from []byte: %q, %v", text, err)
	}
	var row struct {
		Setting string `db:"setting"`
		Source  string `db:"source"`
	}
	if err := s.DB().GetContext(ctx, &row, `SELECT setting, source FROM pg_settings WHERE name = 'jit'`); err != nil {
		t.Fatal(err)
	}
	return binary, row.Setting, row.Source
}

// The store's defaults (binary parameters, jit off) apply unless the connection string sets
// them itself, in either of its forms, however it is spaced.
func TestConnectionStringSettings(t *testing.T) {
	raw := dbtest.NewURL(t)
	cases := []struct {
		name   string
		dsn    string
		binary bool
		jit    string
	}{
		{"URL", raw, true, "off"},
		{"URL with binary_parameters=no", raw + "&binary_parameters=no", false, "off"},
		{"URL with jit=on", raw + "&jit=on", true, "on"},
		{"key=value", keyValueDSN(t, raw, "="), true, "off"},
		{"key=value with binary_parameters=no", keyValueDSN(t, raw, "=") + " binary_parameters=no", false, "off"},
		{"key = value with binary_parameters = no", keyValueDSN(t, raw, " = ") + " binary_parameters = no", false, "off"},
		{"key = value with jit = on", keyValueDSN(t, raw, " = ") + " jit = on", true, "on"},
		{"key=value with a quoted jit", keyValueDSN(t, raw, "=") + " jit='on'", true, "on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := db.Open(ctx, c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			binary, jit, _ := sessionOf(t, s)
			if binary != c.binary || jit != c.jit {
				t.Fatalf("%s: binary parameters %v, jit %s; want %v, %s", c.dsn, binary, jit, c.binary, c.jit)
			}
		})
	}
}
