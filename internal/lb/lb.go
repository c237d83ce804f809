// Package lb is the small load-balancing front of `make cluster` (`bbs lb`): a TCP proxy that
// hands each new connection to the next of its backends in turn (round robin) and, when a
// backend refuses the connection, to the one after it (failover), so that clients given one
// address keep being served while an API replica is down or restarting.
//
// It balances connections, not requests: an HTTP client's keep-alive connection stays with
// its replica until that replica goes away, and an event stream stays open on the replica
// that serves it. That is what a cloud's network load balancer does in front of the BBS.
// With TLS configured it terminates the clients' mutual TLS and opens its own to the
// backends, so that it listens only as the API would (see system.Listen).
package lb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Front is one listener and the backends it balances over.
type Front struct {
	// Name says what it serves, for the log ("api", "bbs-protocol").
	Name     string
	Listener net.Listener
	Backends []string
	// BackendTLS, when set, is used to dial the backends (re-encrypting what the listener,
	// a TLS listener then, decrypted).
	BackendTLS *tls.Config
	// DownFor is how long a backend that refused a connection is skipped (default 2 s).
	DownFor time.Duration
	Log     *zap.Logger

	next   atomic.Uint64
	mu     sync.Mutex
	downAt map[string]time.Time
	conns  sync.WaitGroup
}

// Serve accepts connections until the listener is closed or ctx ends, then waits for the
// connections it proxies to end (ctx ending closes them).
func (f *Front) Serve(ctx context.Context) error {
	if len(f.Backends) == 0 {
		return fmt.Errorf("lb %s: no backends", f.Name)
	}
	if f.DownFor <= 0 {
		f.DownFor = 2 * time.Second
	}
	f.downAt = map[string]time.Time{}
	go func() { <-ctx.Done(); f.Listener.Close() }()
	defer f.conns.Wait()
	for {
		conn, err := f.Listener.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		f.conns.Add(1)
		go func() {
			defer f.conns.Done()
			f.proxy(ctx, conn)
		}()
	}
}

// proxy dials a backend for conn, in round-robin order starting after the last one used,
// skipping those that refused recently unless all did, and copies both ways until either
// side closes.
func (f *Front) proxy(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	if tc, ok := conn.(*tls.Conn); ok {
		// Finish the client's handshake first: a client that fails it never costs a backend
		// connection.
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			f.Log.Debug("client TLS handshake", zap.String("front", f.Name), zap.Error(err))
			return
		}
	}
	backend, up, err := f.dial(ctx)
	if err != nil {
		f.Log.Warn("no backend answers", zap.String("front", f.Name), zap.Error(err))
		return
	}
	defer up.Close()
	f.Log.Debug("connection", zap.String("front", f.Name), zap.String("backend", backend))
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, conn); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(conn, up); closeWrite(conn); done <- struct{}{} }()
	select {
	case <-done:
		// One direction ended; give the other a moment to drain, then close both.
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
}

func (f *Front) dial(ctx context.Context) (string, net.Conn, error) {
	n := len(f.Backends)
	start := int(f.next.Add(1) - 1)
	var errs []error
	// First the backends not marked down, then (all down) every one once more.
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < n; i++ {
			b := f.Backends[(start+i)%n]
			if pass == 0 && f.isDown(b) {
				continue
			}
			if pass == 1 && !f.isDown(b) {
				continue
			}
			conn, err := f.dialOne(ctx, b)
			if err == nil {
				f.markUp(b)
				return b, conn, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", b, err))
			if f.markDown(b) {
				f.Log.Warn("backend down; failing over", zap.String("front", f.Name), zap.String("backend", b), zap.Error(err))
			}
		}
	}
	return "", nil, errors.Join(errs...)
}

func (f *Front) dialOne(ctx context.Context, backend string) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if f.BackendTLS == nil {
		return d.DialContext(ctx, "tcp", backend)
	}
	td := tls.Dialer{NetDialer: &d, Config: f.BackendTLS}
	return td.DialContext(ctx, "tcp", backend)
}

func (f *Front) isDown(b string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.downAt[b]
	return ok && time.Since(at) < f.DownFor
}

// markDown records a refusal and reports whether the backend was up until now.
func (f *Front) markDown(b string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, was := f.downAt[b]
	f.downAt[b] = time.Now()
	return !was
}

func (f *Front) markUp(b string) {
	f.mu.Lock()
	_, was := f.downAt[b]
	delete(f.downAt, b)
	f.mu.Unlock()
	if was {
		f.Log.Info("backend up again", zap.String("front", f.Name), zap.String("backend", b))
	}
}

// closeWrite half-closes a connection where it can, so that the peer sees the end of what
// was sent while answers may still come back.
func closeWrite(c net.Conn) {
	switch c := c.(type) {
	case *net.TCPConn:
		c.CloseWrite()
	case *tls.Conn:
		c.CloseWrite()
	default:
		c.Close()
	}
}
