package protocol

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// BBS's event streams (BBS-PROTOCOL.md §1.2): POST /v1/events/lrp_instances.r1 (tps-watcher,
// route-emitter, cfdot) and the deprecated GET /v1/events.r1 of LRP groups (cfdot without -x),
// each a Server-Sent Events stream of BBS's event names whose data is the base64 of the
// event's protobuf message. Both follow the same hub as the JSON API's stream (events.Hub,
// over the store's event log): each connection subscribes to it and translates what the log
// recorded (event_translate.go).

// DesiredLRPEvents turns a desired-LRP event of the log — desired_lrp_created, _changed or
// _removed, BBS's names too — into BBS's message of that name (DesiredLRPCreatedEvent,
// DesiredLRPChangedEvent or DesiredLRPRemovedEvent, with V3 DesiredLRPs, as both r1 streams
// carry them). A nil message skips the event.
type DesiredLRPEvents func(ctx context.Context, e model.Event) (proto.Message, error)

// eventStreams is what the streams need beyond the store.
type eventStreams struct {
	source  events.Feed      // nil: the streams answer 503
	desired DesiredLRPEvents // desiredLRPEvent unless Deps replaced it
	closing chan struct{}    // closed by CloseStreams
	once    sync.Once
}

// CloseStreams ends every event stream, open or to come: an http.Server shutting down waits
// for its handlers, and a stream's handler returns only when its client goes or it is ended.
// A client reconnects to another BBS, as it does after any lost stream.
func (s *Server) CloseStreams() { s.streams.once.Do(func() { close(s.streams.closing) }) }

// instanceEvents serves POST /v1/events/lrp_instances.r1.
func (s *Server) instanceEvents(w http.ResponseWriter, r *http.Request) {
	if cell, ok := s.cellFilter(w, r); ok {
		s.stream(w, r, cell, s.translateInstanceEvent)
	}
}

// groupEvents serves GET /v1/events.r1 (deprecated), whose request, like every LRP stream's,
// is a protobuf body: on a GET.
func (s *Server) groupEvents(w http.ResponseWriter, r *http.Request) {
	if cell, ok := s.cellFilter(w, r); ok {
		s.stream(w, r, cell, s.translateGroupEvent)
	}
}

// cellFilter reads an LRP stream's request, EventsByCellId, and returns its cell ("": all).
// A request that does not parse is answered as BBS answers it, a 500 with no body, and ok is
// false.
func (s *Server) cellFilter(w http.ResponseWriter, r *http.Request) (cell string, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, model.MaxRequestBytes))
	req := &pb.EventsByCellId{}
	if err == nil {
		err = proto.Unmarshal(body, req)
	}
	if err != nil || misTyped(req.ProtoReflect()) {
		s.log.Warn("event stream request does not parse", zap.String("path", r.URL.Path), zap.Error(err))
		w.WriteHeader(http.StatusInternalServerError)
		return "", false
	}
	return req.GetCellId(), true
}

// streamWriteTimeout is how long a stream waits for its client to take one event.
const streamWriteTimeout = 30 * time.Second

// stream answers an event-stream request: from the events committed from now on, those that
// translate passes on and the filter for cell ("": all) lets through, one SSE event each,
// flushed one by one. There is no replay (BBS ignores Last-Event-ID too) and no heartbeat.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, cell string, translate func(context.Context, model.Event) ([]bbsEvent, error)) {
	if s.streams.source == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	events, unsubscribe := s.streams.source.Subscribe()
	defer unsubscribe()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	defer rc.SetWriteDeadline(time.Time{})
	id := 0
	var buf []byte
	for {
		var e model.Event
		var ok bool
		select {
		case <-r.Context().Done():
			return
		case <-s.streams.closing:
			return
		case e, ok = <-events:
			if !ok {
				// Fell behind (or the hub missed pruned events): ending the stream tells the
				// client to reconnect and re-read the state.
				return
			}
		}
		out, err := translate(r.Context(), e)
		if err != nil {
			// The client would miss this event for good: ending the stream makes it
			// reconnect and re-read the state, as when it falls behind.
			s.log.Error("translating an event; ending the stream", zap.Int64("event_id", e.ID), zap.String("event", e.Name), zap.Error(err))
			return
		}
		for _, ev := range out {
			if !ev.passes(cell) {
				continue
			}
			if buf, err = appendSSE(buf[:0], id, ev); err != nil {
				s.log.Error("encoding an event", zap.String("event", ev.name), zap.Error(err))
				continue
			}
			id++
			rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// appendSSE appends ev framed as BBS frames it (vito/go-sse): its per-connection id, its
// name, and one data line holding the base64 (standard, padded) of its protobuf message.
func appendSSE(b []byte, id int, ev bbsEvent) ([]byte, error) {
	data, err := canonical.Marshal(ev.msg)
	if err != nil {
		return b, err
	}
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.name...)
	b = append(b, "\ndata: "...)
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, "\n\n"...), nil
}
