package protocol

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/updatable-lrps/bbs/api"
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

// Store is what the protocol's handlers read and write: the same store as the JSON API's.
type Store interface {
	api.Pinger
	api.DomainStore
	api.CellStore
	api.ActualLRPStore
	DesiredLRPStore
}

// Server answers the BBS protocol.
type Server struct {
	store   Store
	log     *zap.Logger
	ready   atomic.Bool
	mux     *http.ServeMux
	streams eventStreams
	// lrps makes the changes to LRPs the JSON API makes too, the same way (WithStopper and
	// WithRollouts give it the cells and the rollout workflows).
	lrps *lrps.Service
	// tasks makes the task changes the JSON API makes too (WithTasks); nil: the task
	// routes answer 503.
	tasks *tasks.Service
}

// NewServer builds the protocol server over store. It answers 503 with no body, as BBS does,
// until MarkReady is called (after migrations). Retired instances that need a stop are left
// to convergence until WithStopper names who stops them; the event streams answer 503 until
// WithEvents gives them events; the changes that start rollouts (an update with a
// definition, cancel_update, rollback, the LRP deployments') answer 503 until WithRollouts;
// the task routes answer 503 until WithTasks.
func NewServer(store Store, log *zap.Logger) *Server {
	s := &Server{store: store, log: log.Named("bbs-protocol"), mux: http.NewServeMux()}
	s.lrps = lrps.NewService(store, nil, s.log)
	s.streams.closing = make(chan struct{})
	s.streams.desired = desiredLRPEvent
	s.routes()
	return s
}

// WithStopper lets retire, and the changes that retire instances (a scale-down, a removal),
// hand CLAIMED and RUNNING instances to their cells to stop, as the JSON API's do.
func (s *Server) WithStopper(stopper api.Stopper) *Server {
	s.lrps.SetStopper(stopper)
	return s
}

// WithRollouts lets the server start rollouts (an update with a definition, cancel_update,
// rollback, the LRP deployments' changes); without it those answer a bare 503. Call it
// before serving.
func (s *Server) WithRollouts(r lrps.Rollouts) *Server {
	s.lrps.SetRollouts(r)
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
