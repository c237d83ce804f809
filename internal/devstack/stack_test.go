package devstack

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/devcerts"
	"go.uber.org/zap"
)

// Parts stop in the reverse of their start: the cells before the API they report to,
// PostgreSQL last.
func TestStopAllStopsInReverseOrder(t *testing.T) {
	s, err := newStack(Config{DataDir: t.TempDir(), Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	var stopped []string
	for _, name := range []string{"postgres", "temporal", "api", "cells"} {
		s.onStop(func() { stopped = append(stopped, name) })
	}
	s.stopAll()
	if want := []string{"cells", "api", "temporal", "postgres"}; !slices.Equal(stopped, want) {
		t.Errorf("stopped %v, want %v", stopped, want)
	}
}

// Cell i gets its id, its zone round robin, a thousand host ports of its own, and its work
// directory and log under the data directory.
func TestCellProcessLayout(t *testing.T) {
	c := newCellProcess("/bin/bbs", 2, 2, "http://127.0.0.1:8889", "sim", "/data")
	if c.id != "cell-3" || c.zone != "z1" || c.logFile != "/data/cell-3.log" {
		t.Errorf("cell %+v", c)
	}
	want := "/bin/bbs cell --id cell-3 --zone z1 --api-url http://127.0.0.1:8889 --executor sim --work-dir /data/cells/cell-3 --port-range 63000-63999"
	if got := strings.Join(c.cmd.Args, " "); got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if c.cmd.SysProcAttr == nil || !c.cmd.SysProcAttr.Setpgid {
		t.Error("a cell shares the stack's process group: Ctrl-C would reach it before the stack stops it")
	}
}

// The mutual-TLS protocol listener makes the certificates under <data>/certs on the first
// run and keeps them; it requires a client certificate.
func TestListenProtocolTLS(t *testing.T) {
	dir := t.TempDir()
	ln, certs, err := listenProtocolTLS("127.0.0.1:0", dir)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if certs != devcerts.In(filepath.Join(dir, "certs")) {
		t.Errorf("certificates %+v", certs)
	}
	for _, f := range []string{certs.CA, certs.ServerCert, certs.ServerKey, certs.ClientCert, certs.ClientKey} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	cfg, err := serverTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("client auth %v", cfg.ClientAuth)
	}
	if ln, _, err := listenProtocolTLS("", dir); ln != nil || err != nil {
		t.Errorf("no address: %v, %v", ln, err)
	}
}
