// Package e2e tests the real bbs binary: built from ./cmd/bbs, started as a process, and
// driven over HTTP as Cloud Controller would.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/syncbuf"
)

var bbsBin, demoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bbs-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bbsBin = filepath.Join(dir, "bbs")
	demoBin = filepath.Join(dir, "demoapp")
	for bin, pkg := range map[string]string{bbsBin: "../cmd/bbs", demoBin: "../cmd/demoapp"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg, err)
			os.Exit(1)
		}
	}
	defer os.RemoveAll(dir)
	dbtest.Main(m)
}

// process is a running bbs command whose output is kept for failure messages.
type process struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
	err  error
}

// start runs bbs with args and env (added to a minimal environment without DATABASE_URL).
func start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return startBin(t, bbsBin, env, args...)
}

// startBin is start with another build of bbs (the upgrade test's).
func startBin(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p := &process{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bbs %v: %v", args, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			// Interrupted first: bbs dev and bbs cluster stop their children on it, and a
			// bbs cluster killed outright left its Temporal server and UI running (a failed
			// cluster test did).
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-p.done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("bbs %v output:\n%s", args, p.out.String())
		}
	})
	return p
}

// stop sends sig and waits for a clean exit.
func (p *process) stop(t *testing.T, sig os.Signal, within time.Duration) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("bbs exited with %v", p.err)
		}
	case <-time.After(within):
		t.Fatalf("bbs did not stop within %s", within)
	}
}

// waitOutput waits until the process has printed want.
func (p *process) waitOutput(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for !strings.Contains(p.out.String(), want) {
		select {
		case <-p.done:
			t.Fatalf("bbs exited (%v) before printing %q", p.err, want)
		case <-deadline:
			t.Fatalf("bbs did not print %q within %s", want, within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// client calls the API at base.
type client struct {
	t    *testing.T
	base string
	// http makes the calls (nil: http.DefaultClient); the cluster's presents a certificate.
	http *http.Client
	// failover retries a request that got no answer (a replica killed under it, behind the
	// cluster's front, or the front itself restarting), as a client of a load-balanced BBS
	// does, for up to ten seconds.
	failover bool
}

// post sends body to path and decodes the answer into out (when non-nil), returning the status.
func (c client) post(path string, body any, out any) int {
	c.t.Helper()
	b := []byte("{}")
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	resp, err := c.httpClient().Post(c.base+path, "application/json", bytes.NewReader(b))
	for try := 1; err != nil && c.failover && try <= 50; try++ {
		c.t.Logf("POST %s: %v; again", path, err)
		time.Sleep(200 * time.Millisecond)
		resp, err = c.httpClient().Post(c.base+path, "application/json", bytes.NewReader(b))
	}
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("POST %s: decode %q: %v", path, raw, err)
		}
	}
	return resp.StatusCode
}

func (c client) httpClient() *http.Client {
	if c.http != nil {
		return c.http
	}
	return http.DefaultClient
}

// mustPost is post that requires a 200.
func (c client) mustPost(path string, body any, out any) {
	c.t.Helper()
	var raw json.RawMessage
	if status := c.post(path, body, &raw); status != http.StatusOK {
		c.t.Fatalf("POST %s: status %d: %s", path, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("POST %s: decode: %v", path, err)
		}
	}
}

// waitAvailable polls /v1/ping until the API says it is available.
func (c client) waitAvailable(p *process, within time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/ping", strings.NewReader(""))
		if resp, err := c.httpClient().Do(req); err == nil {
			var ping struct{ Available bool }
			json.NewDecoder(resp.Body).Decode(&ping)
			resp.Body.Close()
			if ping.Available {
				return
			}
		}
		select {
		case <-p.done:
			c.t.Fatalf("bbs exited before it was available: %v", p.err)
		case <-ctx.Done():
			c.t.Fatalf("the API at %s was not available within %s", c.base, within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
