package protocol

import (
	"context"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// The task routes (BBS-PROTOCOL.md §1.1, rows 32–43): each checks its request by BBS's
// rules (task_validate.go), then asks the task service the JSON API shares, so that a task
// desired through either API is the same task through the other, and what follows a change
// (the completion callback, a stop to the cell of a cancelled task) follows it whichever API
// made it.

// needsTasks answers Unavailable (a bare 503, as BBS answers what it cannot serve) while the
// server has no task service; fn then always has one.
func needsTasks[Req, Resp any](s *Server, fn func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		if s.tasks == nil {
			var none Resp
			return none, model.Errorf(model.ErrUnavailable, "this server has no task service")
		}
		return fn(ctx, req)
	}
}

// desireTask creates a PENDING task (desire.r2): BBS's validation, then the model's (in the
// service), then one transaction.
func (s *Server) desireTask(ctx context.Context, req *pb.DesireTaskRequest) (*pb.TaskLifecycleResponse, error) {
	if err := validateDesireTask(req); err != nil {
		return nil, err
	}
	_, err := s.tasks.Desire(ctx, taskToModel(req))
	return &pb.TaskLifecycleResponse{}, err
}

// listTasks answers tasks/list (.r3, or .r2 when v2), filtered by domain and cell.
func (s *Server) listTasks(ctx context.Context, req *pb.TasksRequest, v2 bool) (*pb.TasksResponse, error) {
	ts, err := s.tasks.List(ctx, model.TaskFilter{Domain: req.GetDomain(), CellID: req.GetCellId()})
	if err != nil {
		return nil, err
	}
	resp := &pb.TasksResponse{Tasks: make([]*pb.Task, len(ts))}
	for i := range ts {
		if resp.Tasks[i], err = servedTask(&ts[i], v2); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// taskByGUID answers get_by_task_guid (.r3, or .r2 when v2).
func (s *Server) taskByGUID(ctx context.Context, req *pb.TaskByGuidRequest, v2 bool) (*pb.TaskResponse, error) {
	if err := validateTaskGUID(req.GetTaskGuid()); err != nil {
		return nil, err
	}
	t, err := s.tasks.Get(ctx, req.GetTaskGuid())
	if err != nil {
		return nil, err
	}
	pt, err := servedTask(t, v2)
	if err != nil {
		return nil, err
	}
	return &pb.TaskResponse{Task: pt}, nil
}

// startTask is a cell starting a PENDING task; should_start false (no error) tells a cell
// that already runs it not to start it twice.
func (s *Server) startTask(ctx context.Context, req *pb.StartTaskRequest) (*pb.StartTaskResponse, error) {
	if err := validateCellRequest(req.GetTaskGuid(), req.GetCellId()); err != nil {
		return nil, err
	}
	start, err := s.tasks.Start(ctx, req.GetTaskGuid(), req.GetCellId())
	return &pb.StartTaskResponse{ShouldStart: start}, err
}

// completeTask is a cell reporting how the task it ran ended.
func (s *Server) completeTask(ctx context.Context, req *pb.CompleteTaskRequest) (*pb.TaskLifecycleResponse, error) {
	if err := validateCellRequest(req.GetTaskGuid(), req.GetCellId()); err != nil {
		return nil, err
	}
	_, err := s.tasks.Complete(ctx, req.GetTaskGuid(), req.GetCellId(), req.GetFailed(), req.GetFailureReason(), req.GetResult())
	return &pb.TaskLifecycleResponse{}, err
}

// rejectTask is a cell or the auctioneer refusing a task: it waits for another cell, or
// fails once rejected too often.
func (s *Server) rejectTask(ctx context.Context, req *pb.RejectTaskRequest) (*pb.TaskLifecycleResponse, error) {
	if err := validateReason(req.GetTaskGuid(), req.GetRejectionReason()); err != nil {
		return nil, err
	}
	_, err := s.tasks.Reject(ctx, req.GetTaskGuid(), req.GetRejectionReason())
	return &pb.TaskLifecycleResponse{}, err
}

// failTask (deprecated in BBS) completes a PENDING or RUNNING task as failed.
func (s *Server) failTask(ctx context.Context, req *pb.FailTaskRequest) (*pb.TaskLifecycleResponse, error) {
	if err := validateReason(req.GetTaskGuid(), req.GetFailureReason()); err != nil {
		return nil, err
	}
	_, err := s.tasks.Fail(ctx, req.GetTaskGuid(), req.GetFailureReason())
	return &pb.TaskLifecycleResponse{}, err
}

// cancelTask, resolvingTask and deleteTask are the client's changes of a task it names:
// cancel (which stops it on its cell), claim a completed task's result, remove a resolved
// task.
func (s *Server) cancelTask(ctx context.Context, req *pb.TaskGuidRequest) (*pb.TaskLifecycleResponse, error) {
	return s.byGUID(ctx, req, s.tasks.Cancel)
}

func (s *Server) resolvingTask(ctx context.Context, req *pb.TaskGuidRequest) (*pb.TaskLifecycleResponse, error) {
	return s.byGUID(ctx, req, s.tasks.Resolving)
}

func (s *Server) deleteTask(ctx context.Context, req *pb.TaskGuidRequest) (*pb.TaskLifecycleResponse, error) {
	return s.byGUID(ctx, req, s.tasks.Delete)
}

func (s *Server) byGUID(ctx context.Context, req *pb.TaskGuidRequest, change func(context.Context, string) (*model.Task, error)) (*pb.TaskLifecycleResponse, error) {
	if err := validateTaskGUID(req.GetTaskGuid()); err != nil {
		return nil, err
	}
	_, err := change(ctx, req.GetTaskGuid())
	return &pb.TaskLifecycleResponse{}, err
}
