package protocol

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/lrps"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"github.com/updatable-lrps/bbs/tasks"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// contentType is what every protobuf answer says it is; clients tell a protobuf answer from
// anything else (a 404 of a route we do not serve, a 503) by it.
const contentType = "application/x-protobuf"

// Store is what the protocol's handlers read and write of the database directly: the same
// store as the JSON API's (*db.Store). The changes that start rollouts, stop instances or
// follow a task's change go through the services in Deps, which declare what they need.
type Store interface {
	Ping(ctx context.Context) error
	DomainStore
	CellStore
	ActualLRPStore
	DesiredLRPStore
	LRPDeploymentStore
}

// Deps are what a Server serves over. The services are built once per process and shared
// with the JSON API's server (internal/system), so that a change made through either API is
// made by the same service, by the same rules.
type Deps struct {
	// Store is the database (*db.Store).
	Store Store
	// LRPs changes LRPs (rolling updates, removals) and retires instances; required. Without
	// its rollout workflows the changes that start rollouts answer a bare 503.
	LRPs *lrps.Service
	// Tasks serves the task routes and the task changes of the event streams; nil: the task
	// routes answer a bare 503.
	Tasks *tasks.Service
	// Events feeds the event streams; nil: they answer 503.
	Events events.Feed
	// DesiredLRPEvents replaces the translation of the desired-LRP events of both LRP
	// streams; nil: desiredLRPEvent (desired_lrp_events.go), BBS's messages.
	DesiredLRPEvents DesiredLRPEvents
	// Groups reads rollout groups (*db.Store); nil: get and list answer a bare 503.
	Groups GroupStore
	Log    *zap.Logger
}

// Server answers the BBS protocol.
type Server struct {
	store   Store
	log     *zap.Logger
	ready   atomic.Bool
	mux     *http.ServeMux
	streams eventStreams
	// lrps makes the changes to LRPs the JSON API makes too, the same way.
	lrps *lrps.Service
	// tasks makes the task changes the JSON API makes too; nil: the task routes answer 503.
	tasks *tasks.Service
	// groups reads rollout groups; nil: get and list answer 503.
	groups GroupStore
}

// NewServer builds the protocol server over d. It answers 503 with no body, as BBS does,
// until MarkReady is called (after migrations).
func NewServer(d Deps) *Server {
	s := &Server{store: d.Store, log: d.Log.Named("bbs-protocol"), mux: http.NewServeMux(), lrps: d.LRPs, tasks: d.Tasks, groups: d.Groups}
	s.streams.source = d.Events
	s.streams.desired = d.DesiredLRPEvents
	if s.streams.desired == nil {
		s.streams.desired = desiredLRPEvent
	}
	s.streams.closing = make(chan struct{})
	s.routes()
	return s
}

// MarkReady lets requests through once the database schema is in place.
func (s *Server) MarkReady() { s.ready.Store(true) }

// ServeHTTP implements http.Handler. A route we do not serve answers a plain-text 404, which
// BBS clients take as "endpoint not found" and use to fall back to an older revision.
//
// A handler that panics (a converter meeting a stored row it did not expect) is logged and,
// when nothing was written yet, answered with a bare 500; http.ErrAbortHandler, with which a
// list cut short aborts its connection, passes through.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &writeTracker{ResponseWriter: w}
	w = rw
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panicked", zap.String("path", r.URL.Path), zap.Any("panic", p), zap.Stack("stack"))
			if !rw.wrote {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}
	}()
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		http.NotFound(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// route serves POST path with fn, which takes a decoded Req and returns a Resp or an error;
// an error is answered as the Resp with field 1 (every BBS response's `error`) set.
func route[Req, Resp proto.Message](s *Server, path string, fn func(context.Context, Req) (Resp, error)) {
	s.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		req = req.ProtoReflect().Type().New().Interface().(Req)
		var resp Resp
		if err := s.decode(w, r, req); err != nil {
			s.reply(w, r, resp, err)
			return
		}
		resp, err := fn(r.Context(), req)
		s.reply(w, r, resp, err)
	})
}

// decode reads the whole body (an empty one is a message with every field at its default)
// into req. Anything that is not a well-formed req is BBS's InvalidRequest.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, req proto.Message) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, model.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return model.Errorf(model.ErrInvalidRequest, "request body is larger than %d bytes", model.MaxRequestBytes)
		}
		return model.WrapError(model.ErrInvalidRequest, msgInvalidRequest, err)
	}
	if err := proto.Unmarshal(body, req); err != nil {
		return model.WrapError(model.ErrInvalidRequest, msgInvalidRequest, err)
	}
	if misTyped(req.ProtoReflect()) {
		return model.Errorf(model.ErrInvalidRequest, msgInvalidRequest)
	}
	return nil
}

// reply writes resp, with err in its error field when err is not nil. Unavailable is a bare
// 503, as BBS answers while it cannot serve.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, resp proto.Message, err error) {
	if err != nil {
		if model.IsType(err, model.ErrUnavailable) {
			s.log.Warn("unavailable", zap.String("path", r.URL.Path), zap.Error(err))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		perr := toError(err)
		if perr.Type == pb.Error_UnknownError {
			s.log.Error("request failed", zap.String("path", r.URL.Path), zap.Error(err))
		}
		resp = resp.ProtoReflect().Type().New().Interface()
		setError(resp, perr)
	}
	b, merr := proto.Marshal(resp)
	if merr != nil {
		s.log.Error("encode response", zap.String("path", r.URL.Path), zap.Error(merr))
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// setError sets field 1 of a BBS response message, which is its Error in every response
// but PingResponse.
func setError(resp proto.Message, e *pb.Error) {
	m := resp.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(1)
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != e.ProtoReflect().Descriptor().FullName() {
		return
	}
	m.Set(fd, protoreflect.ValueOfMessage(e.ProtoReflect()))
}

// writeTracker remembers whether a response was begun, so that a panic after it leaves the
// connection alone. It passes Flush on, for the event streams.
type writeTracker struct {
	http.ResponseWriter
	wrote bool
}

func (t *writeTracker) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *writeTracker) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (t *writeTracker) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (write deadlines of the lists).
func (t *writeTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }
