// Package tcpserve is the accept loop the SSH daemon and the SSH proxy share: it bounds the
// connections served at once (refusing more with a line saying why), gives each a deadline
// for its handshake, and closes every connection on Close, so that neither server can be
// exhausted by clients that connect and never speak.
package tcpserve

import (
	"errors"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Server serves connections with Handle, at most Max at once.
type Server struct {
	// Max bounds the connections handled at once; a connection beyond it is sent Refusal
	// and closed.
	Max int
	// Refusal is written to a connection refused for being over Max. A line before the SSH
	// version string is allowed (RFC 4253 4.2), and `ssh -v` shows it.
	Refusal string
	// HandshakeTimeout is the deadline set on each connection before Handle runs; Handle
	// clears it once its handshake is done.
	HandshakeTimeout time.Duration
	Handle           func(net.Conn)
	Log              *zap.Logger

	once   sync.Once
	slots  chan struct{}
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	lns    []net.Listener
	closed bool
	wg     sync.WaitGroup
}

func (s *Server) init() {
	s.once.Do(func() {
		s.slots = make(chan struct{}, max(s.Max, 1))
		s.conns = map[net.Conn]struct{}{}
		if s.Log == nil {
			s.Log = zap.NewNop()
		}
	})
}

// Serve accepts connections on ln until Close, which makes it return nil.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond) // out of file descriptors: let some close
				continue
			}
			return err
		}
		select {
		case s.slots <- struct{}{}:
		default:
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.Write([]byte(s.Refusal + "\r\n"))
			conn.Close()
			s.Log.Warn("refused a connection: at the limit", zap.Int("max_connections", s.Max),
				zap.String("remote", conn.RemoteAddr().String()))
			continue
		}
		if !s.track(conn) {
			conn.Close()
			<-s.slots
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			defer s.untrack(conn)
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(s.HandshakeTimeout))
			s.Handle(conn)
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// Close stops accepting, closes every connection and waits for their handlers.
func (s *Server) Close() error {
	s.init()
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
