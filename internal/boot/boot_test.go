package boot

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnvHelpers(t *testing.T) {
	t.Setenv("BOOT_TEST_STR", "x")
	t.Setenv("BOOT_TEST_INT", "12")
	t.Setenv("BOOT_TEST_DUR", "3s")
	t.Setenv("BOOT_TEST_BAD", "-1s")
	if got := EnvOr("BOOT_TEST_STR", "d"); got != "x" {
		t.Errorf("EnvOr = %q", got)
	}
	if got := EnvOr("BOOT_TEST_UNSET", "d"); got != "d" {
		t.Errorf("EnvOr unset = %q", got)
	}
	if got := EnvInt("BOOT_TEST_INT", 1); got != 12 {
		t.Errorf("EnvInt = %d", got)
	}
	if got := EnvInt("BOOT_TEST_STR", 1); got != 1 {
		t.Errorf("EnvInt of a non-number = %d", got)
	}
	if got := EnvDuration("BOOT_TEST_DUR", time.Second); got != 3*time.Second {
		t.Errorf("EnvDuration = %s", got)
	}
	if got := EnvDuration("BOOT_TEST_BAD", time.Second); got != time.Second {
		t.Errorf("EnvDuration of a negative duration = %s", got)
	}
}

// A secret comes from the variable, else from the file its _FILE twin names, trimmed.
func TestSecretFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BOOT_TEST_SECRET_FILE", file)
	if got, err := SecretFromEnv("BOOT_TEST_SECRET"); err != nil || got != "from-file" {
		t.Errorf("from the file: %q, %v", got, err)
	}
	t.Setenv("BOOT_TEST_SECRET", "direct")
	if got, err := SecretFromEnv("BOOT_TEST_SECRET"); err != nil || got != "direct" {
		t.Errorf("from the variable: %q, %v", got, err)
	}
	t.Setenv("DATABASE_URL", "")
	t.Setenv("DATABASE_URL_FILE", "")
	if _, err := RequireDatabaseURL(); err == nil {
		t.Error("RequireDatabaseURL without DATABASE_URL: no error")
	}
}

func TestRedactURL(t *testing.T) {
	got := RedactURL("postgres://bbs:s3cret@127.0.0.1:5432/bbs?sslmode=disable")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "127.0.0.1:5432/bbs") {
		t.Errorf("RedactURL = %q", got)
	}
	if got := RedactURL("postgres://a b:%zz@x/"); got != "(unparseable DATABASE_URL)" {
		t.Errorf("RedactURL of an unparseable URL = %q", got)
	}
}

// No TLS file: no TLS (loopback only); some but not all: an error, never a server without
// client authentication.
func TestServerTLSNeedsAllFiles(t *testing.T) {
	var none ServerTLS
	if cfg, err := none.Config(); cfg != nil || err != nil {
		t.Errorf("no files: %v, %v", cfg, err)
	}
	partial := ServerTLS{CertFile: "server.crt"}
	if _, err := partial.Config(); err == nil || !strings.Contains(err.Error(), "BBS_TLS_KEY_FILE") {
		t.Errorf("a certificate alone: %v", err)
	}
	var client ClientTLS
	if cfg, err := client.Config(); cfg != nil || err != nil {
		t.Errorf("no client files: %v, %v", cfg, err)
	}
}

// Start parses, runs the checks before it builds anything, and hands back what it made.
func TestCommandStart(t *testing.T) {
	cmd := NewCommand("test")
	cmd.Flags.SetOutput(io.Discard)
	name := cmd.Flags.String("name", "", "")
	checked := false
	cmd.Check(func() error { checked = true; return nil })
	if _, err := cmd.Start(context.Background(), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if checked {
		t.Error("a check ran although the flags asked for help")
	}
	p, err := cmd.Start(context.Background(), []string{"--name", "x", "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !checked || *name != "x" || cmd.LogLevel() != "warn" || p.Log == nil {
		t.Errorf("checked %v, name %q, level %q, log %v", checked, *name, cmd.LogLevel(), p.Log)
	}
	if p.Metrics != nil || p.Store != nil || p.ServerTLS != nil || p.PeerTLS != nil {
		t.Errorf("made what was not asked for: %+v", p)
	}
}

func TestCommandCheckFails(t *testing.T) {
	cmd := NewCommand("test")
	cmd.Check(func() error { return errors.New("no") })
	if _, err := cmd.Start(context.Background(), nil); err == nil || err.Error() != "no" {
		t.Errorf("Start = %v", err)
	}
	bad := NewCommand("test")
	if _, err := bad.Start(context.Background(), []string{"--log-level", "loud"}); err == nil {
		t.Error("an unknown log level: no error")
	}
}

// A command with metrics on no listener of its own still gets a registry to record to, and
// its TLS flags load (here: none named).
func TestCommandMetricsAndTLS(t *testing.T) {
	cmd := NewCommand("test")
	cmd.ServerTLS()
	cmd.Metrics("")
	cmd.PeerTLS()
	p, err := cmd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Metrics == nil {
		t.Error("no registry")
	}
	for _, name := range []string{"tls-cert", "tls-key", "tls-client-ca", "peer-ca", "client-cert", "client-key", "metrics-listen", "log-level"} {
		if cmd.Flags.Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
}
