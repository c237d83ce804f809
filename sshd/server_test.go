package sshd

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"
	"go.uber.org/zap/zaptest"
	"golang.org/x/crypto/ssh"

	"github.com/updatable-lrps/bbs/internal/syncbuf"
)

func newSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type daemon struct {
	addr string
	host ssh.Signer
	key  ssh.Signer
	dir  string
	srv  *Server
}

// startDaemon serves a daemon on loopback whose only authorized key is the returned client's.
func startDaemon(t *testing.T, edit func(*Config)) *daemon {
	t.Helper()
	d := &daemon{host: newSigner(t), key: newSigner(t), dir: t.TempDir()}
	cfg := Config{
		HostKey: d.host, AuthorizedKeys: []ssh.PublicKey{d.key.PublicKey()},
		Env: []string{"PATH=" + os.Getenv("PATH"), "APP_SETTING=from-the-instance"}, Dir: d.dir,
		Log: zaptest.NewLogger(t),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.addr, d.srv = ln.Addr().String(), srv
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return d
}

func (d *daemon) dial(t *testing.T, key ssh.Signer) (*ssh.Client, error) {
	t.Helper()
	return ssh.Dial("tcp", d.addr, &ssh.ClientConfig{
		User: "vcap", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.FixedHostKey(d.host.PublicKey()),
	})
}

func (d *daemon) client(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := d.dial(t, d.key)
	if err != nil {
		t.Fatalf("dial the daemon: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExecInheritsTheEnvironmentAndReportsExitStatus(t *testing.T) {
	d := startDaemon(t, nil)
	c := d.client(t)
	for _, tc := range []struct {
		name, cmd string
		env       map[string]string
		wantOut   string
		wantCode  int
	}{
		{"inherited env", "echo $APP_SETTING", nil, "from-the-instance\n", 0},
		{"requested env", "echo $EXTRA", map[string]string{"EXTRA": "sent-by-client"}, "sent-by-client\n", 0},
		{"working directory", "pwd", nil, d.dir + "\n", 0},
		{"exit status", "echo out; echo err >&2; exit 3", nil, "out\n", 3},
		{"stdin", "cat", nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for k, v := range tc.env {
				if err := s.Setenv(k, v); err != nil {
					t.Fatalf("setenv: %v", err)
				}
			}
			var stdout, stderr bytes.Buffer
			s.Stdout, s.Stderr = &stdout, &stderr
			if tc.cmd == "cat" {
				s.Stdin = strings.NewReader("piped\n")
				tc.wantOut = "piped\n"
			}
			err = s.Run(tc.cmd)
			code := 0
			if ee, ok := err.(*ssh.ExitError); ok {
				code = ee.ExitStatus()
			} else if err != nil {
				t.Fatalf("run: %v", err)
			}
			if stdout.String() != tc.wantOut || code != tc.wantCode {
				t.Fatalf("stdout %q code %d; want %q %d (stderr %q)", stdout.String(), code, tc.wantOut, tc.wantCode, stderr.String())
			}
			if tc.name == "exit status" && stderr.String() != "err\n" {
				t.Fatalf("stderr %q", stderr.String())
			}
		})
	}
}

func TestShellWithATerminal(t *testing.T) {
	d := startDaemon(t, nil)
	s, err := d.client(t).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RequestPty("xterm", 40, 100, ssh.TerminalModes{ssh.ECHO: 0}); err != nil {
		t.Fatalf("pty-req: %v", err)
	}
	in, _ := s.StdinPipe()
	var out syncbuf.Buffer
	s.Stdout = &out
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := s.WindowChange(50, 120); err != nil {
		t.Fatalf("window-change: %v", err)
	}
	fmt.Fprintln(in, "test -t 0 && echo is-a-tty; echo term=$TERM; stty size; exit 7")
	err = s.Wait()
	ee, ok := err.(*ssh.ExitError)
	if !ok || ee.ExitStatus() != 7 {
		t.Fatalf("wait: %v", err)
	}
	for _, want := range []string{"is-a-tty", "term=xterm", "50 120"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("shell output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSignalReachesTheProgram(t *testing.T) {
	d := startDaemon(t, nil)
	s, err := d.client(t).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, _ := s.StdoutPipe()
	if err := s.Start("echo started; exec sleep 60"); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 8)
	if _, err := io.ReadFull(out, line); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ee, ok := s.Wait().(*ssh.ExitError)
	if !ok || ee.Signal() != "TERM" {
		t.Fatalf("wait after SIGTERM: %v", ee)
	}
}

func TestSFTPServesTheInstanceDirectory(t *testing.T) {
	d := startDaemon(t, nil)
	if err := os.WriteFile(filepath.Join(d.dir, "app.txt"), []byte("hello from the app"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := sftp.NewClient(d.client(t))
	if err != nil {
		t.Fatalf("sftp: %v", err)
	}
	defer sc.Close()
	f, err := sc.Open("app.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello from the app" {
		t.Fatalf("read %q", b)
	}
	w, err := sc.Create("uploaded.txt")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("up"))
	w.Close()
	if b, _ := os.ReadFile(filepath.Join(d.dir, "uploaded.txt")); string(b) != "up" {
		t.Fatalf("uploaded %q", b)
	}
}

func TestDirectTCPIPReachesOnlyTheInstancePorts(t *testing.T) {
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "app") })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(ln)
	defer app.Close()
	hostPort := uint32(ln.Addr().(*net.TCPAddr).Port)
	d := startDaemon(t, func(c *Config) {
		c.Ports = Ports{Address: "127.0.0.1", Mapped: map[uint32]uint32{8080: hostPort}}
	})
	c := d.client(t)
	httpc := &http.Client{Transport: &http.Transport{Dial: func(_, addr string) (net.Conn, error) { return c.Dial("tcp", addr) }}}
	for _, addr := range []string{"localhost:8080", "127.0.0.1:8080", fmt.Sprintf("127.0.0.1:%d", hostPort)} {
		res, err := httpc.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("GET through %s: %v", addr, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) != "app" {
			t.Fatalf("GET through %s: %q", addr, b)
		}
	}
	for addr, want := range map[string]string{
		"localhost:9999":   "not one of this instance's ports [8080]",
		"example.com:8080": "only this instance's own ports",
	} {
		_, err := c.Dial("tcp", addr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dial %s: %v, want a refusal with %q", addr, err, want)
		}
	}
}

func TestOnlyTheAuthorizedKeyIsAccepted(t *testing.T) {
	d := startDaemon(t, nil)
	if _, err := d.dial(t, newSigner(t)); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("dial with another key: %v", err)
	}
}

func TestBadRequestsAreRefusedClearly(t *testing.T) {
	d := startDaemon(t, nil)
	c := d.client(t)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stderr syncbuf.Buffer
	s.Stderr = &stderr
	for _, r := range []struct {
		typ     string
		payload []byte
	}{
		{"env", []byte{0xff}},
		{"pty-req", []byte{1, 2}},
		{"exec", nil},
		{"subsystem", ssh.Marshal(commandRequest{"nope"})},
		{"signal", ssh.Marshal(signalRequest{"TERM"})},
		{"no-such-request", nil},
	} {
		ok, err := s.SendRequest(r.typ, true, r.payload)
		if err != nil || ok {
			t.Errorf("%s: ok=%v err=%v, want a refusal", r.typ, ok, err)
		}
	}
	if _, _, err := c.OpenChannel("x11", nil); err == nil || !strings.Contains(err.Error(), "unsupported channel type") {
		t.Errorf("x11 channel: %v", err)
	}
	if _, _, err := c.OpenChannel("direct-tcpip", []byte{1}); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed direct-tcpip: %v", err)
	}
	if ok, _, _ := c.SendRequest("tcpip-forward", true, nil); ok {
		t.Errorf("tcpip-forward accepted")
	}
	// The session still works after all that.
	if err := s.Run("true"); err != nil {
		t.Fatalf("run after refusals: %v", err)
	}
	if !strings.Contains(stderr.String(), "unknown subsystem") {
		t.Errorf("stderr lacks the refusal: %q", stderr.String())
	}
}

func TestConnectionsAreBoundedAndIdleHandshakesEnd(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.MaxConnections = 1; c.HandshakeTimeout = 200e6 })
	idle, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The idle connection holds the only slot: the next one is told so and closed.
	second, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(second)
	if !strings.Contains(string(b), "too many connections") {
		t.Fatalf("second connection got %q", b)
	}
	// The idle one never speaks: the daemon ends it (after its version line) ...
	if _, err := io.ReadAll(idle); err != nil {
		t.Fatalf("idle connection: %v", err)
	}
	// ... and its slot serves a real client again.
	testwaitDial(t, d)
}

// testwaitDial dials until the slot of a closed connection is free again.
func testwaitDial(t *testing.T, d *daemon) {
	t.Helper()
	for i := 0; ; i++ {
		c, err := d.dial(t, d.key)
		if err == nil {
			c.Close()
			return
		}
		if i == 100 {
			t.Fatalf("dial after the idle connection ended: %v", err)
		}
	}
}

// A program that exits at once still gets its exec answered yes before its channel closes:
// the client must never see "exec request failed" for a command that ran. Many at once, so
// that the daemon's goroutines interleave every way.
func TestQuickProgramsAreAnsweredBeforeTheChannelCloses(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Shell = "/bin/true" })
	c := d.client(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s, err := c.NewSession()
				if err != nil {
					errs <- err
					return
				}
				err = s.Run("")
				s.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
