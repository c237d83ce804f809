// Package temporaltest gives tests a real Temporal dev server (internal/temporaldev): one
// shared by every test of a test binary, or one of a test's own. Without a temporal CLI the
// tests that need one FAIL, saying what is missing — a green run must never have skipped half
// the system — except in -short mode, where they skip and say so.
package temporaltest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/temporaldev"
	"github.com/updatable-lrps/bbs/internal/temporalzap"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Bin returns the temporal CLI (temporaldev.FindBin). Without one it fails t, or skips it in
// -short mode.
func Bin(t testing.TB) string {
	t.Helper()
	bin, err := temporaldev.FindBin()
	if err != nil {
		if testing.Short() {
			t.Skipf("-short: skipping a test that needs a Temporal server: %v", err)
		}
		t.Fatalf("this test needs a Temporal server: %v", err)
	}
	return bin
}

// server is a dev server and a client of it.
type server struct {
	srv    *temporaldev.Server
	client client.Client
}

// start starts a dev server with the search attributes attrs (nil: temporaldev's).
func start(t testing.TB, attrs map[string]string) (*server, error) {
	bin := Bin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// BBS_TEST_TEMPORAL_LOG keeps the server's warnings in a file (a run that misbehaves).
	cfg := temporaldev.Config{Bin: bin, LogLevel: "error", SearchAttributes: attrs}
	if f := os.Getenv("BBS_TEST_TEMPORAL_LOG"); f != "" {
		cfg.LogFile, cfg.LogLevel = f, "warn"
	}
	srv, err := temporaldev.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := dial(ctx, srv)
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("dial the dev server at %s: %w", srv.Address(), err)
	}
	return &server{srv: srv, client: c}, nil
}

// dial connects to the dev server, uncompressed as the bbs processes dial
// (system.TemporalConfig.Gzip). The server's port opens before its frontend is healthy, and
// a dial's health check then fails at once ("Frontend is not healthy yet"): on a loaded
// machine that took seconds (a make test run failed so), so the dial is tried again until
// ctx ends.
func dial(ctx context.Context, srv *temporaldev.Server) (client.Client, error) {
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(),
			Logger:            temporalzap.New(zap.NewNop()),
			ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *server) stop() {
	s.client.Close()
	s.srv.Stop()
}

// New starts an in-memory dev server for t alone, stopped when t ends, and returns a client of
// it: for tests of server-wide things (a schedule's id, a namespace's search attributes).
func New(t testing.TB) client.Client {
	t.Helper()
	return NewWithSearchAttributes(t, nil)
}

// NewWithSearchAttributes is New with the search attributes attrs registered instead of
// temporaldev.SearchAttributes: a server that lacks some, as one set up before a BBS upgrade
// added them.
func NewWithSearchAttributes(t testing.TB, attrs map[string]string) client.Client {
	t.Helper()
	s, err := start(t, attrs)
	if err != nil {
		t.Fatalf("start the Temporal dev server: %v", err)
	}
	t.Cleanup(s.stop)
	return s.client
}

var shared struct {
	mu  sync.Mutex
	srv *server
}

// Shared returns a client of the one dev server shared by every test of the test binary,
// starting it on first use. Tests on it use task queues of their own (TaskQueueFor). Stop it
// once the tests are done: dbtest.Main(m, temporaltest.StopShared).
func Shared(t testing.TB) client.Client {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		s, err := start(t, nil)
		if err != nil {
			t.Fatalf("start the shared Temporal dev server: %v", err)
		}
		shared.srv = s
	}
	return shared.srv.client
}

// StopShared stops the server Shared started, if it runs; a later Shared starts another.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		shared.srv.stop()
		shared.srv = nil
	}
}

var queueSeq atomic.Int64

var unsafeQueueChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// TaskQueueFor is a task queue of t's own, unique in the process and on the server, so that a
// worker of t's runs only t's workflows.
func TaskQueueFor(t testing.TB) string {
	name := strings.Trim(unsafeQueueChars.ReplaceAllString(t.Name(), "-"), "-")
	return fmt.Sprintf("test-%s-%d-%d", name, os.Getpid(), queueSeq.Add(1))
}
