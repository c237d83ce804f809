package protocol_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// syncTasks is sync for the task streams, which carry task events alone: its probes are
// task_removed events.
func (s *server) syncTasks(streams ...*stream) {
	s.t.Helper()
	s.syncWith(model.EventTaskRemoved, "task_guid", func(ev sse) string {
		r, _ := ev.msg.(*pb.TaskRemovedEvent)
		return r.GetTask().GetTaskGuid()
	}, streams...)
}

// taskSummary is a task event in a line: its name, the task and its state (before>after for
// a change, with the cell after).
func taskSummary(ev sse) string {
	switch m := ev.msg.(type) {
	case *pb.TaskCreatedEvent:
		return fmt.Sprintf("%s %s %s", ev.name, m.GetTask().GetTaskGuid(), m.GetTask().GetState())
	case *pb.TaskChangedEvent:
		return fmt.Sprintf("%s %s %s>%s@%s", ev.name, m.GetAfter().GetTaskGuid(), m.GetBefore().GetState(), m.GetAfter().GetState(), m.GetAfter().GetCellId())
	case *pb.TaskRemovedEvent:
		return fmt.Sprintf("%s %s %s", ev.name, m.GetTask().GetTaskGuid(), m.GetTask().GetState())
	}
	return ev.name
}

// tasksOf are the tasks an event carries (the created or removed one; before and after).
func tasksOf(ev sse) []*pb.Task {
	switch m := ev.msg.(type) {
	case *pb.TaskCreatedEvent:
		return []*pb.Task{m.GetTask()}
	case *pb.TaskChangedEvent:
		return []*pb.Task{m.GetBefore(), m.GetAfter()}
	case *pb.TaskRemovedEvent:
		return []*pb.Task{m.GetTask()}
	}
	return nil
}

// A staging task's life — desired, started, completed, resolved, deleted — as both task
// streams frame it (ids from 0, BBS's names, base64 protobuf data: the stream reader checks
// each): r1 with the task's V3 definition byte for byte in every event, the deprecated r0
// with it downgraded to V2, as get_by_task_guid.r2 serves it.
func TestTaskEventStreams(t *testing.T) {
	s := newStreamingServer(t)
	r1 := s.open(http.MethodPost, "/v1/events/tasks.r1", "")
	r0 := s.open(http.MethodPost, "/v1/events/tasks", "")
	s.syncTasks(r1, r0)

	in := ccStagingTask(stagingGUID)
	s.desireTask(in)
	v2 := s.getTask("r2", stagingGUID).GetTaskDefinition()
	var start pb.StartTaskResponse
	s.post("/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: stagingGUID, CellId: "cell-1"}, &start)
	for _, step := range []struct {
		path string
		req  proto.Message
	}{
		{"/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: stagingGUID, CellId: "cell-1", Result: "{}"}},
		{"/v1/tasks/resolving", &pb.TaskGuidRequest{TaskGuid: stagingGUID}},
		{"/v1/tasks/delete", &pb.TaskGuidRequest{TaskGuid: stagingGUID}},
	} {
		if err := s.taskCall(step.path, step.req); err != nil {
			t.Fatalf("%s: %v", step.path, err)
		}
	}

	want := []string{
		"task_created " + stagingGUID + " Pending",
		"task_changed " + stagingGUID + " Pending>Running@cell-1",
		"task_changed " + stagingGUID + " Running>Completed@",
		"task_changed " + stagingGUID + " Completed>Resolving@",
		"task_removed " + stagingGUID + " Resolving",
	}
	for _, c := range []struct {
		st  *stream
		def *pb.TaskDefinition
	}{{r1, in.GetTaskDefinition()}, {r0, v2}} {
		for i, w := range want {
			ev, ok := c.st.within(10 * time.Second)
			if !ok {
				t.Fatalf("%s: no event %d, want %s", c.st.name, i, w)
			}
			if got := taskSummary(ev); got != w {
				t.Fatalf("%s: event %d is %s, want %s", c.st.name, i, got, w)
			}
			for _, task := range tasksOf(ev) {
				if !bytes.Equal(encoded(t, task.GetTaskDefinition()), encoded(t, c.def)) {
					t.Errorf("%s: %s carries another definition: %s", c.st.name, w, diffProto(task.GetTaskDefinition(), c.def))
				}
				if task.GetDomain() != "cf-app-staging" || task.GetCreatedAt() == 0 {
					t.Errorf("%s: %s carries task %v", c.st.name, w, task)
				}
			}
		}
	}
}

// BBS's task streams read no request: any body, even one that is no EventsByCellId, opens
// a stream; without events the stream is a bare 503.
func TestTaskEventStreamRequests(t *testing.T) {
	s := newStreamingServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/events/tasks.r1", bytes.NewReader([]byte{0xff, 0xff}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Errorf("a task stream with a body that does not parse: %d %q, want a stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	noEvents := newServer(t)
	r, b := noEvents.postRaw("/v1/events/tasks.r1", nil)
	if r.StatusCode != http.StatusServiceUnavailable || len(b) != 0 {
		t.Errorf("a task stream without events: %d %q, want a bare 503", r.StatusCode, b)
	}
}
