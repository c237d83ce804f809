package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// statusOf is the one place where error types become HTTP statuses (API.md).
func statusOf(t model.ErrorType) int {
	switch t {
	case model.ErrInvalidRequest, model.ErrInvalidJSON:
		return http.StatusBadRequest
	case model.ErrResourceNotFound:
		return http.StatusNotFound
	case model.ErrResourceExists, model.ErrResourceConflict, model.ErrUpdateInProgress,
		model.ErrNoUpdateInProgress, model.ErrNoRolloutInProgress, model.ErrInvalidPhase, model.ErrFrozen, model.ErrInvalidStateTransition, model.ErrCannotBeClaimed,
		model.ErrCannotBeStarted, model.ErrCannotBeCrashed, model.ErrCannotBeFailed,
		model.ErrCannotBeRemoved, model.ErrRunningOnDifferentCell:
		return http.StatusConflict
	case model.ErrRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case model.ErrUnavailable:
		return http.StatusServiceUnavailable
	case model.ErrNotImplemented:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

type errorResponse struct {
	Error *model.Error `json:"error"`
}

// itemError is writeError for one item of a batch answer; nil for nil.
func itemError(ctx context.Context, log *zap.Logger, err error) *model.Error {
	if err == nil {
		return nil
	}
	return publicError(ctx, log, "batch item failed", err)
}

// writeError answers with err's type and message. An error that is not a model error is a
// bug: the client learns only the request id, and the cause goes to the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	me := publicError(r.Context(), s.log, "request failed", err, zap.String("path", r.URL.Path))
	writeJSON(w, statusOf(me.Type), errorResponse{Error: me})
}

// publicError is what a client is told of err, and it logs, under the request id, what the
// client is not told. An error that is not a model error, or maps to 500, is logged whole
// and becomes "internal error, request id X". A 503 keeps its type and message (a client
// retries on them) and is logged when it carries more than the client sees: the database
// error behind "database unavailable", say, without which an outage leaves nothing to
// diagnose. Other model errors are the client's to act on and are not logged.
func publicError(ctx context.Context, log *zap.Logger, msg string, err error, fields ...zap.Field) *model.Error {
	reqID := middleware.GetReqID(ctx)
	var me *model.Error
	if !errors.As(err, &me) || statusOf(me.Type) == http.StatusInternalServerError {
		log.Error(msg, append(fields, zap.String("request_id", reqID), zap.Error(err))...)
		return model.Errorf(model.ErrUnknown, "internal error, request id %s", reqID)
	}
	shown := &model.Error{Type: me.Type, Message: me.Message}
	if statusOf(me.Type) == http.StatusServiceUnavailable && err.Error() != shown.Error() {
		log.Warn(msg, append(fields, zap.String("request_id", reqID), zap.String("type", string(me.Type)), zap.Error(err))...)
	}
	return me
}
