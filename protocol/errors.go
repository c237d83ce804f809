package protocol

import (
	"errors"
	"strings"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
)

// BBS's default messages. Cloud Controller matches the first two as strings, so they must
// stay exactly as they are.
const (
	msgResourceNotFound = "the requested resource could not be found"
	msgResourceExists   = "the requested resource already exists"
	msgResourceConflict = "the requested resource is in a conflicting state"
	msgInvalidRequest   = "the request received is invalid"
	msgUnknown          = "the request failed for an unknown reason"
)

// errorTypes maps our error types to BBS's. UpdateInProgress and NoUpdateInProgress are
// conflicts to an old client (it keeps our message); RequestTooLarge is an invalid request.
var errorTypes = map[model.ErrorType]pb.Error_Type{
	model.ErrInvalidRequest:         pb.Error_InvalidRequest,
	model.ErrInvalidJSON:            pb.Error_InvalidRequest,
	model.ErrRequestTooLarge:        pb.Error_InvalidRequest,
	model.ErrResourceNotFound:       pb.Error_ResourceNotFound,
	model.ErrResourceExists:         pb.Error_ResourceExists,
	model.ErrResourceConflict:       pb.Error_ResourceConflict,
	model.ErrUpdateInProgress:       pb.Error_ResourceConflict,
	model.ErrNoUpdateInProgress:     pb.Error_ResourceConflict,
	model.ErrNoRolloutInProgress:    pb.Error_ResourceConflict,
	model.ErrInvalidPhase:           pb.Error_ResourceConflict,
	model.ErrFrozen:                 pb.Error_ResourceConflict,
	model.ErrInvalidStateTransition: pb.Error_InvalidStateTransition,
	model.ErrCannotBeClaimed:        pb.Error_ActualLRPCannotBeClaimed,
	model.ErrCannotBeStarted:        pb.Error_ActualLRPCannotBeStarted,
	model.ErrCannotBeCrashed:        pb.Error_ActualLRPCannotBeCrashed,
	model.ErrCannotBeFailed:         pb.Error_ActualLRPCannotBeFailed,
	model.ErrCannotBeRemoved:        pb.Error_ActualLRPCannotBeRemoved,
	model.ErrRunningOnDifferentCell: pb.Error_RunningOnDifferentCell,
}

// defaultMessages are the messages BBS gives these types whatever happened: clients match
// them.
var defaultMessages = map[pb.Error_Type]string{
	pb.Error_ResourceNotFound: msgResourceNotFound,
	pb.Error_ResourceExists:   msgResourceExists,
	pb.Error_UnknownError:     msgUnknown,
}

// toError is the one place our errors become BBS's: its type, and BBS's exact message where
// clients match it (ours otherwise). An error that is not a *model.Error is an unknown one,
// and its text, which may say anything about our internals, is not sent.
func toError(err error) *pb.Error {
	var me *model.Error
	if !errors.As(err, &me) {
		return &pb.Error{Type: pb.Error_UnknownError, Message: msgUnknown}
	}
	t, ok := errorTypes[me.Type]
	if !ok {
		return &pb.Error{Type: pb.Error_UnknownError, Message: msgUnknown}
	}
	msg := me.Message
	if d, ok := defaultMessages[t]; ok {
		msg = d
	}
	if t == pb.Error_ResourceConflict && (me.Type == model.ErrResourceConflict) {
		msg = msgResourceConflict
	}
	if t == pb.Error_InvalidStateTransition {
		msg = bbsTaskStates.Replace(msg)
	}
	return &pb.Error{Type: t, Message: msg}
}

// bbsTaskStates names the task states of a transition error ("Cannot transition from
// COMPLETED to RESOLVING", the model's words) as BBS does: by its enum's names.
var bbsTaskStates = strings.NewReplacer(
	" "+string(model.TaskPending), " "+pb.Task_Pending.String(),
	" "+string(model.TaskRunning), " "+pb.Task_Running.String(),
	" "+string(model.TaskCompleted), " "+pb.Task_Completed.String(),
	" "+string(model.TaskResolving), " "+pb.Task_Resolving.String(),
)
