package protocol

import (
	"context"
	"net/http"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// BBS's task event streams (BBS-PROTOCOL.md §1.2): POST /v1/events/tasks.r1 (cfdot
// task-events) and the deprecated POST /v1/events/tasks, framed as the LRP streams are
// (events.go), carrying task_created, task_changed and task_removed — the log's own names —
// with BBS's TaskCreatedEvent, TaskChangedEvent and TaskRemovedEvent. Each task is the one
// the log recorded in the change's transaction (model.TaskEvent, its definition's protobuf
// with it), built as get_by_task_guid builds it: V3 on r1, V2 on r0.
//
// BBS's task streams read no request: no cell filter, and no 500 for a body that does not
// parse.

// taskEvents serves a task stream; v2 downgrades its tasks (the r0 stream).
func (s *Server) taskEvents(v2 bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stream(w, r, "", func(_ context.Context, e model.Event) ([]bbsEvent, error) {
			return translateTaskEvent(e, v2)
		})
	}
}

// translateTaskEvent is e as BBS's task event; the log's other events are not the task
// streams'.
func translateTaskEvent(e model.Event, v2 bool) ([]bbsEvent, error) {
	switch e.Name {
	case model.EventTaskCreated:
		t, err := eventTask(e, v2)
		if err != nil {
			return nil, err
		}
		return []bbsEvent{{name: e.Name, msg: &pb.TaskCreatedEvent{Task: t}}}, nil
	case model.EventTaskRemoved:
		t, err := eventTask(e, v2)
		if err != nil {
			return nil, err
		}
		return []bbsEvent{{name: e.Name, msg: &pb.TaskRemovedEvent{Task: t}}}, nil
	case model.EventTaskChanged:
		c, err := decodeEvent[model.Change[model.TaskEvent]](e)
		if err != nil {
			return nil, err
		}
		before, err := servedTask(c.Before.Model(), v2)
		if err != nil {
			return nil, err
		}
		after, err := servedTask(c.After.Model(), v2)
		if err != nil {
			return nil, err
		}
		return []bbsEvent{{name: e.Name, msg: &pb.TaskChangedEvent{Before: before, After: after}}}, nil
	}
	return nil, nil
}

// eventTask is the task a task_created or task_removed event recorded.
func eventTask(e model.Event, v2 bool) (*pb.Task, error) {
	t, err := decodeEvent[model.TaskEvent](e)
	if err != nil {
		return nil, err
	}
	return servedTask(t.Model(), v2)
}
