package protocol

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/updatable-lrps/bbs/api"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
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
}

// Server answers the BBS protocol.
type Server struct {
	store   Store
	log     *zap.Logger
	ready   atomic.Bool
	mux     *http.ServeMux
	retirer *api.Retirer
	streams eventStreams
}

// NewServer builds the protocol server over store. It answers 503 with no body, as BBS does,
// until MarkReady is called (after migrations). Retired instances that need a stop are left
// to convergence until WithStopper names who stops them; the event streams answer 503 until
// WithEvents gives them events.
func NewServer(store Store, log *zap.Logger) *Server {
	s := &Server{store: store, log: log.Named("bbs-protocol"), mux: http.NewServeMux()}
	s.retirer = api.NewRetirer(store, nil, s.log)
	s.streams.closing = make(chan struct{})
	s.routes()
	return s
}

// WithStopper lets retire hand CLAIMED and RUNNING instances to their cells to stop, as the
// JSON API's retire does.
func (s *Server) WithStopper(stopper api.Stopper) *Server {
	s.retirer = api.NewRetirer(s.store, stopper, s.log)
	return s
}

// MarkReady lets requests through once the database schema is in place.
func (s *Server) MarkReady() { s.ready.Store(true) }

// ServeHTTP implements http.Handler. A route we do not serve answers a plain-text 404, which
// BBS clients take as "endpoint not found" and use to fall back to an older revision.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return model.Errorf(model.ErrInvalidRequest, "request body is larger than %d bytes", api.MaxRequestBytes)
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
