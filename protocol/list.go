package protocol

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// listRoute serves POST path as a streamed list. Every BBS list answer is a message with the
// error at field 1 and the items repeated at field 2, and a repeated message field is, on
// the wire, nothing but its entries one after another (tag, length, bytes). So fn walks the
// items straight from the store, and each is encoded and written as one entry of field 2 as
// it comes: the answer is the bytes proto.Marshal would give the whole Resp, without the
// whole Resp (or the list of the fleet) ever being built. An error before the answer began
// is an ordinary Resp with its error; one after it (the database went away mid-list, the
// client hung up) aborts the answer, so that no client takes a cut list for a whole one.
func listRoute[Req, Resp proto.Message](s *Server, path string, fn func(ctx context.Context, req Req, yield func(entry) error) error) {
	s.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		req = req.ProtoReflect().Type().New().Interface().(Req)
		var empty Resp
		if err := s.decode(w, r, req); err != nil {
			s.reply(w, r, empty, err)
			return
		}
		lw := newListWriter(w)
		defer lw.done()
		err := fn(r.Context(), req, lw.add)
		if err == nil {
			err = lw.finish()
		}
		if err == nil {
			return
		}
		if !lw.started {
			s.reply(w, r, empty, err)
			return
		}
		s.log.Warn("list cut short", zap.String("path", r.URL.Path), zap.Int("items", lw.n), zap.Error(err))
		panic(http.ErrAbortHandler)
	})
}

const (
	// listBuffer is how much of a list answer is gathered before it is written: an answer
	// that fits goes out whole with its Content-Length, as BBS sends every answer; a longer
	// one is streamed (HTTP/1.1 chunks) in writes of about this size.
	listBuffer = 64 << 10
	// listWriteTimeout is how long a streamed list waits for its client to take the next
	// write before it gives up on it: the store's rows stay open while the client reads, and
	// one that stops reading must not hold a database connection (and an old snapshot) for
	// ever.
	listWriteTimeout = 30 * time.Second
)

// listWriter writes a list answer entry by entry.
type listWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     []byte
	started bool // the status and headers are written
	n       int  // entries so far
}

func newListWriter(w http.ResponseWriter) *listWriter {
	return &listWriter{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, listBuffer+4<<10)}
}

// entry is an item of a list answer: it appends itself as field n, the bytes proto.Marshal
// gives that field. The item is encoded at once, so a walk may reuse what it yields.
type entry interface {
	appendEntry(b []byte, n protowire.Number) ([]byte, error)
}

// protoEntry is a protobuf message as an entry.
type protoEntry struct{ proto.Message }

func (m protoEntry) appendEntry(b []byte, n protowire.Number) ([]byte, error) {
	b = appendLen(b, n, canonical.Size(m.Message))
	return canonicalAfterSize.MarshalAppend(b, m.Message)
}

// instanceEntry is an instance as an entry: its ActualLRP, encoded by hand (appendActualLRP).
type instanceEntry struct{ *model.ActualLRP }

func (i instanceEntry) appendEntry(b []byte, n protowire.Number) ([]byte, error) {
	return appendActualLRP(b, n, i.ActualLRP), nil
}

// canonical encodes what the listener sends, map entries sorted (the same message, the same
// bytes); canonicalAfterSize is the same after a Size call on the message, whose sizes it
// reuses (and only then: without one, the sizes it would reuse are wrong).
var (
	canonical          = proto.MarshalOptions{Deterministic: true}
	canonicalAfterSize = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}
)

// add appends e as an entry of field 2.
func (l *listWriter) add(e entry) error {
	var err error
	if l.buf, err = e.appendEntry(l.buf, 2); err != nil {
		return err
	}
	l.n++
	if len(l.buf) >= listBuffer {
		return l.flush()
	}
	return nil
}

// flush writes what is gathered, starting the answer if it has not started.
func (l *listWriter) flush() error {
	if !l.started {
		l.w.Header().Set("Content-Type", contentType)
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	l.rc.SetWriteDeadline(time.Now().Add(listWriteTimeout))
	_, err := l.w.Write(l.buf)
	l.buf = l.buf[:0]
	return err
}

// finish writes the rest of the answer; an answer that was gathered whole gets its length.
func (l *listWriter) finish() error {
	if !l.started {
		l.w.Header().Set("Content-Length", strconv.Itoa(len(l.buf)))
	}
	return l.flush()
}

// done lifts the write deadline the list set on the connection, which may serve further
// requests.
func (l *listWriter) done() {
	if l.started {
		l.rc.SetWriteDeadline(time.Time{})
	}
}
