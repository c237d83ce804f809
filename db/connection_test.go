package db_test

import (
	"encoding/binary"
	"fmt"
	"io"
	stdnet "net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

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
	plain, err := sqlx.Open("postgres", raw)
	if err != nil {
		t.Fatal(err)
	}
	var server string // what a session gets when it asks nothing
	if err := plain.GetContext(ctx, &server, `SHOW jit`); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	t.Logf("the server's own jit: %s", server)
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
		{"URL with an empty jit", raw + "&jit=", true, server},
		{"key=value with an empty jit", "jit='' " + keyValueDSN(t, raw, "="), true, server},
		{"key=value ending with an empty jit", keyValueDSN(t, raw, "=") + " jit =", true, server},
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

// pooler is a stand-in for PgBouncer in front of the test's server: like PgBouncer it
// refuses a connection whose startup packet carries a parameter it does not know
// ("unsupported startup parameter"), and passes the others through. It records the
// parameters of every startup packet it saw.
type pooler struct {
	addr string
	mu   sync.Mutex
	seen []map[string]string
}

// pgbouncerParams are the startup parameters PgBouncer accepts without
// ignore_startup_parameters.
var pgbouncerParams = map[string]bool{"user": true, "database": true, "application_name": true,
	"client_encoding": true, "datestyle": true, "timezone": true, "standard_conforming_strings": true}

func startPooler(t *testing.T, upstream string) *pooler {
	t.Helper()
	ln, err := stdnet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &pooler{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, upstream)
		}
	}()
	return p
}

func (p *pooler) serve(c stdnet.Conn, upstream string) {
	defer c.Close()
	var packet []byte
	for {
		var head [8]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(head[:4])
		packet = make([]byte, n)
		copy(packet, head[:])
		if _, err := io.ReadFull(c, packet[8:]); err != nil {
			return
		}
		if binary.BigEndian.Uint32(head[4:]) != 80877103 { // not an SSLRequest
			break
		}
		c.Write([]byte{'N'})
	}
	params := map[string]string{}
	fields := strings.Split(string(packet[8:]), "\x00")
	for i := 0; i+1 < len(fields) && fields[i] != ""; i += 2 {
		params[fields[i]] = fields[i+1]
	}
	p.mu.Lock()
	p.seen = append(p.seen, params)
	p.mu.Unlock()
	for k := range params {
		if !pgbouncerParams[k] {
			msg := "SFATAL\x00VFATAL\x00C08P01\x00Munsupported startup parameter: " + k + "\x00\x00"
			b := []byte{'E', 0, 0, 0, 0}
			binary.BigEndian.PutUint32(b[1:], uint32(4+len(msg)))
			c.Write(append(b, msg...))
			return
		}
	}
	up, err := stdnet.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(packet); err != nil {
		return
	}
	go io.Copy(up, c)
	io.Copy(c, up)
}

// sentJIT says whether a startup packet the pooler saw carried jit.
func (p *pooler) sentJIT() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, params := range p.seen {
		if _, ok := params["jit"]; ok {
			return true
		}
	}
	return false
}

// The store keeps JIT off in each of its sessions the way BBS_DB_JIT says: a startup
// parameter (the default, one round trip less), a SET on each new connection (behind
// PgBouncer, which refuses the startup parameter), or not at all (the server's own setting,
// for a pooler in transaction mode). A jit in the connection string is sent as it is.
func TestJITModes(t *testing.T) {
	raw := dbtest.NewURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// What a session gets from the server when it asks nothing.
	plain, err := sqlx.Open("postgres", raw)
	if err != nil {
		t.Fatal(err)
	}
	var server struct {
		Setting string `db:"setting"`
		Source  string `db:"source"`
	}
	if err := plain.GetContext(ctx, &server, `SELECT setting, source FROM pg_settings WHERE name = 'jit'`); err != nil {
		t.Fatal(err)
	}
	plain.Close()

	cases := []struct {
		name           string
		mode           db.JITMode
		extra          string // appended to the URL's query
		jit, source    string
		pooled         bool // through the PgBouncer stand-in
		refused, sends bool
	}{
		{name: "startup", mode: db.JITStartup, jit: "off", source: "client", sends: true},
		{name: "default", jit: "off", source: "client", sends: true},
		{name: "session", mode: db.JITSession, jit: "off", source: "session"},
		{name: "server", mode: db.JITServer, jit: server.Setting, source: server.Source},
		{name: "session, jit=on in the URL", mode: db.JITSession, extra: "&jit=on", jit: "on", source: "client", sends: true},
		{name: "server, jit=off in the URL", mode: db.JITServer, extra: "&jit=off", jit: "off", source: "client", sends: true},
		{name: "startup, jit= in the URL", mode: db.JITStartup, extra: "&jit=", jit: server.Setting, source: server.Source},
		{name: "startup behind PgBouncer", mode: db.JITStartup, pooled: true, refused: true, sends: true},
		{name: "startup behind PgBouncer, jit= in the URL", mode: db.JITStartup, extra: "&jit=", pooled: true, jit: server.Setting, source: server.Source},
		{name: "session behind PgBouncer", mode: db.JITSession, pooled: true, jit: "off", source: "session"},
		{name: "server behind PgBouncer", mode: db.JITServer, pooled: true, jit: server.Setting, source: server.Source},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startPooler(t, u.Host)
			to := *u
			if c.pooled {
				to.Host = p.addr
			}
			dsn := to.String() + c.extra
			var opts []db.Option
			if c.mode != "" {
				opts = append(opts, db.WithJIT(c.mode))
			}
			s, err := db.Open(ctx, dsn, opts...)
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), "unsupported startup parameter: jit") {
					t.Fatalf("connected through the pooler with jit as a startup parameter: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Every connection of the pool, not only the first.
			conns := make([]*sqlx.Conn, 3)
			for i := range conns {
				if conns[i], err = s.DB().Connx(ctx); err != nil {
					t.Fatal(err)
				}
				defer conns[i].Close()
				var got struct {
					Setting string `db:"setting"`
					Source  string `db:"source"`
				}
				if err := conns[i].GetContext(ctx, &got, `SELECT setting, source FROM pg_settings WHERE name = 'jit'`); err != nil {
					t.Fatal(err)
				}
				if got.Setting != c.jit || got.Source != c.source {
					t.Fatalf("connection %d: jit %s (from %s), want %s (from %s)", i, got.Setting, got.Source, c.jit, c.source)
				}
			}
			if c.pooled && p.sentJIT() != c.sends {
				t.Fatalf("jit in a startup packet: %v, want %v", p.sentJIT(), c.sends)
			}
		})
	}
	if _, err := db.ParseJITMode("sometimes"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	for _, m := range []string{"", "startup", "session", "server"} {
		if _, err := db.ParseJITMode(m); err != nil {
			t.Fatalf("ParseJITMode(%q): %v", m, err)
		}
	}
}
