package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// streamEvents serves GET /v1/events/lrp_instances: the events of LRPs, their instances and
// rollouts.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "lrp instance events", func(name string) bool { return !isTaskEvent(name) })
}

// streamTaskEvents serves GET /v1/events/tasks: task_created, task_changed, task_removed.
func (s *Server) streamTaskEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "task events", isTaskEvent)
}

func isTaskEvent(name string) bool {
	return name == model.EventTaskCreated || name == model.EventTaskChanged || name == model.EventTaskRemoved
}

// stream serves the events keep selects as Server-Sent Events: one message per change,
// named as in API.md, with the event's id, and a comment every 15 s to keep idle
// connections open through proxies.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, banner string, keep func(name string) bool) {
	if s.events == nil {
		s.writeError(w, r, model.Errorf(model.ErrUnavailable, "this server does not stream events"))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, r, model.Errorf(model.ErrUnavailable, "streaming is not supported on this connection"))
		return
	}
	events, cancel := s.subscribe(r)
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, ": %s\n\n", banner)
	flusher.Flush()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case e, ok := <-events:
			if !ok {
				return // fell behind: the client reconnects and re-reads state
			}
			if !keep(e.Name) {
				continue
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Name, e.Data)
		}
		flusher.Flush()
	}
}
