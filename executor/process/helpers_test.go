package process_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/process"
	"github.com/updatable-lrps/bbs/internal/syncbuf"
	"github.com/updatable-lrps/bbs/internal/testwait"
	"github.com/updatable-lrps/bbs/model"
)

const deadline = 20 * time.Second

// httpServer is the test instance binary built by TestMain.
var httpServer string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "process-test-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		httpServer = filepath.Join(dir, "httpserver")
		build := exec.Command("go", "build", "-o", httpServer, "./testdata/httpserver/main.go")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build test server: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

func run(path string, args ...string) *model.Action {
	return &model.Action{Run: &model.RunAction{Path: path, Args: args}}
}

func sh(script string) *model.Action { return run("/bin/sh", "-c", script) }

func serial(as ...*model.Action) *model.Action {
	return &model.Action{Serial: &model.SerialAction{Actions: as}}
}

func freePort(t *testing.T) uint32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}

// fixture is a backend with its work directory and output.
type fixture struct {
	t       *testing.T
	backend *process.Backend
	workDir string
	out     *syncbuf.Buffer
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	return &fixture{t: t, workDir: dir, out: &syncbuf.Buffer{}, backend: process.New(dir, zaptest.NewLogger(t))}
}

func (f *fixture) spec(guid string, d model.LRPDefinition) executor.StartSpec {
	s := executor.StartSpec{
		Guid:       guid,
		Key:        model.ActualLRPKey{ProcessGUID: "pg", Index: 3},
		Definition: d,
		Address:    "127.0.0.1",
		Env:        d.Env,
		Log:        f.out,
	}
	for _, p := range d.Ports {
		s.Ports = append(s.Ports, model.PortMapping{ContainerPort: p, HostPort: freePort(f.t)})
	}
	if len(s.Ports) > 0 {
		s.Env = append(s.Env, model.EnvironmentVariable{Name: "PORT", Value: fmt.Sprint(s.Ports[0].HostPort)})
	}
	return s
}

// start starts the action directly on the backend; the instance is stopped at cleanup.
func (f *fixture) start(guid string, d model.LRPDefinition) (executor.Instance, error) {
	f.t.Helper()
	in, err := f.backend.Start(context.Background(), f.spec(guid, d))
	if err == nil {
		f.t.Cleanup(func() { in.Stop(time.Second) })
	}
	return in, err
}

func (f *fixture) mustStart(guid string, d model.LRPDefinition) executor.Instance {
	f.t.Helper()
	in, err := f.start(guid, d)
	if err != nil {
		f.t.Fatalf("start: %v", err)
	}
	return in
}

func waitExit(t *testing.T, in executor.Instance) error {
	t.Helper()
	select {
	case <-in.Done():
		return in.Err()
	case <-time.After(deadline):
		t.Fatal("action did not exit")
		return nil
	}
}

func running(in executor.Instance) bool {
	select {
	case <-in.Done():
		return false
	default:
		return true
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, deadline, 10*time.Millisecond, what, cond)
}

// readFileEventually waits for a file an instance writes in its directory.
func readFileEventually(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	eventually(t, path, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n'
	})
	return strings.TrimSpace(string(b))
}

// alive reports whether pid is a live process (a zombie nobody reaped counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func def(action *model.Action) model.LRPDefinition {
	return model.LRPDefinition{RootFS: "preloaded:local", Action: action}
}
