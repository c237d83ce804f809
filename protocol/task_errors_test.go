package protocol_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/protocol"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// taskSnapshot is everything the task routes can change: the tasks and the event log.
func (s *server) taskSnapshot() []byte {
	s.t.Helper()
	b := encoded(s.t, &pb.TasksResponse{Tasks: s.listTasks("r3", nil)})
	var events int
	if err := s.store.DB().QueryRowContext(s.t.Context(), `SELECT count(*) FROM events`).Scan(&events); err != nil {
		s.t.Fatal(err)
	}
	return append(b, strings.Repeat("e", events)...)
}

// Every refused task request answers 200 with BBS's error type and its exact message where
// BBS's handlers or validation word it (ours where BBS has none), and changes nothing.
func TestRefusedTaskRequestsChangeNothing(t *testing.T) {
	s := newServer(t)
	s.desireTask(ccStagingTask(stagingGUID))
	s.desireTask(minimalTask("running", "cf-tasks"))
	s.desireTask(minimalTask("done", "cf-tasks"))
	s.desireTask(minimalTask("resolving", "cf-tasks"))
	for _, guid := range []string{"running", "done", "resolving"} {
		var resp pb.StartTaskResponse
		s.post("/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: guid, CellId: "cell-1"}, &resp)
		if !resp.GetShouldStart() {
			t.Fatalf("start %s: %v", guid, &resp)
		}
	}
	for _, guid := range []string{"done", "resolving"} {
		if err := s.taskCall("/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: guid, CellId: "cell-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.taskCall("/v1/tasks/resolving", &pb.TaskGuidRequest{TaskGuid: "resolving"}); err != nil {
		t.Fatal(err)
	}

	task := func(edit func(d *pb.TaskDefinition)) *pb.DesireTaskRequest {
		req := minimalTask("new", "cf-tasks")
		edit(req.TaskDefinition)
		return req
	}
	invalid := pb.Error_InvalidRequest
	for _, c := range []struct {
		name string
		path string
		req  proto.Message // nil: body is sent as it is
		body []byte
		typ  pb.Error_Type
		msg  string // the exact message; prefixed "~" when only its start is ours to fix
	}{
		{"desire a task twice", "/v1/tasks/desire.r2", minimalTask(stagingGUID, "cf-tasks"), nil,
			pb.Error_ResourceExists, "the requested resource already exists"},
		{"desire nothing", "/v1/tasks/desire.r2", &pb.DesireTaskRequest{}, nil, invalid,
			"Invalid field: task_guid, Invalid field: domain, Invalid field: task_definition"},
		{"desire an empty definition", "/v1/tasks/desire.r2", &pb.DesireTaskRequest{TaskGuid: "new", Domain: "d", TaskDefinition: &pb.TaskDefinition{}},
			nil, invalid, "Invalid field: rootfs, invalid action type"},
		{"a body that is no protobuf", "/v1/tasks/desire.r2", nil, []byte{0x0f, 0xff, 0xff}, invalid, "the request received is invalid"},
		{"a desired LRP sent as a task", "/v1/tasks/desire.r2", &pb.DesireLRPRequest{DesiredLrp: minimalDesiredLRP("new")}, nil,
			invalid, "the request received is invalid"},
		{"a task guid with a dot", "/v1/tasks/desire.r2", &pb.DesireTaskRequest{TaskGuid: "a.b", Domain: "d",
			TaskDefinition: minimalTask("", "").TaskDefinition}, nil, invalid, "Invalid field: task_guid"},
		{"a rootfs without a scheme and a run action without a user", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) {
			d.RootFs, d.Action = "cflinuxfs4", &pb.Action{RunAction: &pb.RunAction{Path: "/bin/true"}}
		}), nil, invalid, "Invalid field: rootfs, Invalid field: action, Invalid field: user"},
		{"negative memory, a log rate limit under -1", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) {
			d.MemoryMb, d.LogRateLimit = -1, &pb.LogRateLimit{BytesPerSecond: -2}
		}), nil, invalid, "Invalid field: memory_mb, Invalid field: log_rate_limit"},
		{"an egress rule without ports", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) {
			d.EgressRules = []*pb.SecurityGroupRule{{Protocol: "tcp", Destinations: []string{"10.0.0.1"}}}
		}), nil, invalid, "Invalid field: egress_rules"},
		{"an image user alone, a bad cached dependency", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) {
			d.ImageUsername, d.CachedDependencies = "u", []*pb.CachedDependency{{From: "https://x"}}
		}), nil, invalid, "Invalid field: image_password, Invalid field: cached_dependency, Invalid field: to"},
		{"an exclusive image layer without a download user", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) {
			d.ImageLayers = []*pb.ImageLayer{{Url: "u", DestinationPath: "/", LayerType: pb.ImageLayer_EXCLUSIVE, MediaType: pb.ImageLayer_TGZ,
				DigestAlgorithm: pb.ImageLayer_SHA256, DigestValue: "d"}}
		}), nil, invalid, "Invalid field: legacy_download_user"},
		// Ours, where BBS accepts and our model does not.
		{"a completion callback that is no URL", "/v1/tasks/desire.r2", task(func(d *pb.TaskDefinition) { d.CompletionCallbackUrl = "cc:9023" }),
			nil, invalid, "~completion_callback_url"},

		{"get a missing task", "/v1/tasks/get_by_task_guid.r3", &pb.TaskByGuidRequest{TaskGuid: "missing"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"get a missing task (r2)", "/v1/tasks/get_by_task_guid.r2", &pb.TaskByGuidRequest{TaskGuid: "missing"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"get without a guid", "/v1/tasks/get_by_task_guid.r3", &pb.TaskByGuidRequest{}, nil, invalid, "Invalid field: task_guid"},

		{"start without a cell", "/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: stagingGUID}, nil, invalid, "Invalid field: cell_id"},
		{"start a missing task", "/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: "missing", CellId: "cell-1"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"start a task running elsewhere", "/v1/tasks/start", &pb.StartTaskRequest{TaskGuid: "running", CellId: "cell-2"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Running to Running"},
		{"complete twice", "/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: "done", CellId: "cell-1"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Completed to Completed"},
		{"complete a PENDING task", "/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: stagingGUID, CellId: "cell-1"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Pending to Completed"},
		{"complete on another cell", "/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: "running", CellId: "cell-2"}, nil,
			pb.Error_RunningOnDifferentCell, "~task"},
		{"complete without a cell", "/v1/tasks/complete", &pb.CompleteTaskRequest{TaskGuid: "running"}, nil, invalid, "Invalid field: cell_id"},
		{"reject without a reason", "/v1/tasks/reject", &pb.RejectTaskRequest{TaskGuid: "running"}, nil, invalid, "Invalid field: failure_reason"},
		{"reject a missing task", "/v1/tasks/reject", &pb.RejectTaskRequest{TaskGuid: "missing", RejectionReason: "r"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"fail without a reason", "/v1/tasks/fail", &pb.FailTaskRequest{TaskGuid: "running"}, nil, invalid, "Invalid field: failure_reason"},
		{"fail a completed task", "/v1/tasks/fail", &pb.FailTaskRequest{TaskGuid: "done", FailureReason: "r"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Completed to Completed"},
		{"cancel a resolving task", "/v1/tasks/cancel", &pb.TaskGuidRequest{TaskGuid: "resolving"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Resolving to Completed"},
		{"cancel a missing task", "/v1/tasks/cancel", &pb.TaskGuidRequest{TaskGuid: "missing"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
		{"cancel without a guid", "/v1/tasks/cancel", &pb.TaskGuidRequest{}, nil, invalid, "Invalid field: task_guid"},
		{"resolve a running task", "/v1/tasks/resolving", &pb.TaskGuidRequest{TaskGuid: "running"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Running to Resolving"},
		{"delete a completed task", "/v1/tasks/delete", &pb.TaskGuidRequest{TaskGuid: "done"}, nil,
			pb.Error_InvalidStateTransition, "Cannot transition from Completed to Resolving"},
		{"delete a missing task", "/v1/tasks/delete", &pb.TaskGuidRequest{TaskGuid: "missing"}, nil,
			pb.Error_ResourceNotFound, "the requested resource could not be found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.t = t
			before := s.taskSnapshot()
			body := c.body
			if c.req != nil {
				body = encoded(t, c.req)
			}
			r, b := s.postRaw(c.path, body)
			resp := &pb.TaskLifecycleResponse{} // field 1 of every answer here
			if r.StatusCode != http.StatusOK || proto.Unmarshal(b, resp) != nil {
				t.Fatalf("answered %d %q", r.StatusCode, b)
			}
			e := resp.GetError()
			ok := e.GetType() == c.typ && e.GetMessage() == c.msg
			if strings.HasPrefix(c.msg, "~") {
				ok = e.GetType() == c.typ && strings.HasPrefix(e.GetMessage(), c.msg[1:])
			}
			if !ok {
				t.Errorf("error = %v, want %s %q", e, c.typ, c.msg)
			}
			if !bytes.Equal(s.taskSnapshot(), before) {
				t.Errorf("the refused request changed the store")
			}
		})
	}
}

// Without a task service the task routes answer a bare 503, as BBS answers what it cannot
// serve.
func TestTaskRoutesWithoutTheService(t *testing.T) {
	srv := protocol.NewServer(protocol.Deps{Log: zaptest.NewLogger(t)})
	srv.MarkReady()
	for _, path := range []string{"/v1/tasks/desire.r2", "/v1/tasks/list.r3", "/v1/tasks/cancel"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, nil))
		if w.Code != http.StatusServiceUnavailable || w.Body.Len() != 0 {
			t.Errorf("%s: %d %q, want a bare 503", path, w.Code, w.Body.String())
		}
	}
}
