package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/updatable-lrps/bbs/events"
	"github.com/updatable-lrps/bbs/model"
)

// ResumableFeed is an events.Feed that can replay what a subscriber missed: the events after
// the one it had last (events.Hub, over the store's log).
type ResumableFeed interface {
	events.Feed
	SubscribeAfter(ctx context.Context, after int64) (<-chan model.Event, func())
}

// subscribe subscribes a stream: after the event its Last-Event-ID names, when it names one
// and the source can replay (a client whose stream broke, as the SSE standard has it resume,
// so that it misses nothing), else from now on.
func (s *Server) subscribe(r *http.Request) (<-chan model.Event, func()) {
	if rs, ok := s.events.(ResumableFeed); ok {
		if last, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && last > 0 {
			return rs.SubscribeAfter(r.Context(), last)
		}
	}
	return s.events.Subscribe()
}
