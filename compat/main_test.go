package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs/models"
	"github.com/gogo/protobuf/proto"
)

// sys is the one `bbs dev` system of this test binary, started by TestMain.
var sys *devSystem

// devSystem is a running `bbs dev`: PostgreSQL, the Temporal dev server, the API with its
// BBS-protocol listener, the worker, the router and three cells.
type devSystem struct {
	bbsBin string
	// protocolURL is the BBS-protocol listener, e.g. http://127.0.0.1:20123.
	protocolURL string
	// apiURL is our JSON API, for what the listener does not serve yet (desiring LRPs).
	apiURL string
	// dbURL is the PostgreSQL database the dev mode started, for other processes (`bbs api`).
	dbURL string
	// temporal is the Temporal frontend's host:port.
	temporal string
	// protocolTLSURL is the listener's mutual-TLS twin (https), whose certificates the dev
	// mode made in certsDir: what cfdot is pointed at.
	protocolTLSURL string
	certsDir       string
	proc           *process
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	temporal, err := temporalBin()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "bbs-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bbs")
	if err := buildBBS(bin); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	s, err := startDev(bin, temporal, filepath.Join(dir, "data"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	sys = s
	code := m.Run()
	if err := s.proc.stop(time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, "compat: stopping bbs dev:", err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "compat: bbs dev output (last lines):\n%s\n", s.proc.tail(150))
	}
	return code
}

// temporalBin finds the temporal CLI that `bbs dev` needs: $TEMPORAL_BIN, the pinned build in
// ../bin (`make test` builds it), or temporal on PATH.
func temporalBin() (string, error) {
	if bin := os.Getenv("TEMPORAL_BIN"); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("TEMPORAL_BIN=%s is not an executable temporal CLI: %v", bin, err)
		}
		return bin, nil
	}
	if bin, err := filepath.Abs("../bin/temporal"); err == nil {
		if _, err := exec.LookPath(bin); err == nil {
			return bin, nil
		}
	}
	if bin, err := exec.LookPath("temporal"); err == nil {
		return bin, nil
	}
	return "", errors.New("these tests run `bbs dev`, which needs the temporal CLI, and there is none: " +
		"set TEMPORAL_BIN, or run `make compat` from the repository root, which builds it into bin/")
}

// buildBBS builds ../cmd/bbs into bin. It builds in the product's module (the parent
// directory), not in this one.
func buildBBS(bin string) error {
	build := exec.Command("go", "build", "-o", bin, "./cmd/bbs")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/bbs: %w", err)
	}
	return nil
}

// startDev starts `bbs dev` on free ports with its state in dataDir and waits until it says
// it is up and its BBS-protocol listener answers a ping.
func startDev(bin, temporal, dataDir string) (*devSystem, error) {
	ports := make([]int, 9)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	apiPort, bbsPort, pgPort, tPort, uiPort, routerPort, routerAdminPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	args := []string{"dev", "--data-dir", dataDir,
		"--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--bbs-listen", fmt.Sprintf("127.0.0.1:%d", bbsPort),
		"--bbs-tls-listen", fmt.Sprintf("127.0.0.1:%d", ports[7]),
		"--pg-port", fmt.Sprint(pgPort),
		"--temporal-bin", temporal, "--temporal-port", fmt.Sprint(tPort), "--temporal-ui-port", fmt.Sprint(uiPort),
		"--router-listen", fmt.Sprintf("127.0.0.1:%d", routerPort),
		"--router-admin-listen", fmt.Sprintf("127.0.0.1:%d", routerAdminPort),
		// Not the default 2222, which `make run` or another test run may hold.
		"--ssh-proxy-listen", fmt.Sprintf("127.0.0.1:%d", ports[8])}
	// No DATABASE_URL: the dev mode starts a PostgreSQL of its own.
	p, err := startProcess(bin, nil, args...)
	if err != nil {
		return nil, err
	}
	s := &devSystem{
		bbsBin:         bin,
		protocolURL:    fmt.Sprintf("http://127.0.0.1:%d", bbsPort),
		protocolTLSURL: fmt.Sprintf("https://127.0.0.1:%d", ports[7]),
		certsDir:       filepath.Join(dataDir, "certs"),
		apiURL:         fmt.Sprintf("http://127.0.0.1:%d", apiPort),
		dbURL:          fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bbs?sslmode=disable", pgPort),
		temporal:       fmt.Sprintf("127.0.0.1:%d", tPort),
		proc:           p,
	}
	err = p.waitOutput("Ctrl-C stops everything", 3*time.Minute)
	if err == nil {
		err = waitPing(http.DefaultClient, s.protocolURL, p, 30*time.Second)
	}
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("%w\nbbs dev output (last lines):\n%s", err, p.tail(150))
	}
	return s, nil
}

// waitPing polls POST /v1/ping at url until it answers a PingResponse saying available.
func waitPing(c *http.Client, url string, p *process, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for {
		var ping models.PingResponse
		status, ctype, err := postProto(c, url+"/v1/ping", nil, &ping)
		switch {
		case err != nil:
			last = err
		case status != http.StatusOK || ctype != protoContentType:
			last = fmt.Errorf("answered %d %q", status, ctype)
		case !ping.Available:
			last = errors.New("answered available=false")
		default:
			return nil
		}
		if p.exited() {
			return fmt.Errorf("bbs exited (%v) before its BBS-protocol listener at %s answered a ping", p.err, url)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the BBS-protocol listener at %s did not answer a ping within %s: %v", url, within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const protoContentType = "application/x-protobuf"

// postProto POSTs body (nil: empty) to url as the real client does, and decodes a protobuf
// answer into out. It returns the status and the media type of the answer.
func postProto(c *http.Client, url string, body []byte, out proto.Message) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", protoContentType)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", err
	}
	ctype := mediaType(resp.Header.Get("Content-Type"))
	if ctype == protoContentType && out != nil {
		if err := proto.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, ctype, fmt.Errorf("decode %T: %w", out, err)
		}
	}
	return resp.StatusCode, ctype, nil
}

// mediaType is a Content-Type without its parameters.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(mt)
}

// process is a running bbs command whose output is kept for failure messages.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startProcess runs bin with args in a minimal environment (PATH, HOME and env): nothing of
// ours, such as DATABASE_URL or BBS_*, leaks in from the caller's.
func startProcess(bin string, env []string, args ...string) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.SysProcAttr = dieWithParent()
	p := &process{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %v: %w", bin, args, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop interrupts the process (Ctrl-C) and waits for a clean exit; past within it kills it.
func (p *process) stop(within time.Duration) error {
	if p.exited() {
		return fmt.Errorf("it had already exited: %v", p.err)
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		p.kill()
		return fmt.Errorf("it did not stop within %s of SIGINT, and was killed", within)
	}
}

func (p *process) kill() {
	if !p.exited() {
		p.cmd.Process.Kill()
		<-p.done
	}
}

// waitOutput waits until the process has printed want.
func (p *process) waitOutput(want string, within time.Duration) error {
	deadline := time.After(within)
	for !strings.Contains(p.out.String(), want) {
		select {
		case <-p.done:
			return fmt.Errorf("bbs exited (%v) before printing %q", p.err, want)
		case <-deadline:
			return fmt.Errorf("bbs did not print %q within %s", want, within)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// tail is the last n lines of the output.
func (p *process) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freePort picks a port that is free now, below Linux's ephemeral range (32768–60999): a port
// the kernel hands out for ":0" is also one it hands to outgoing connections, which can take
// it between this check and the server's bind. Ports are not reused within a run.
func freePort() (int, error) {
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if _, taken := usedPorts.LoadOrStore(p, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errors.New("no free port in 20000–31999")
}

var usedPorts sync.Map

// mustFreePort is freePort for a test.
func mustFreePort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 100 ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}
