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
		model.ErrNoUpdateInProgress, model.ErrInvalidStateTransition, model.ErrCannotBeClaimed,
		model.ErrCannotBeStarted, model.ErrCannotBeCrashed, model.ErrCannotBeFailed,
		model.ErrCannotBeRemoved:
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
func (s *Server) itemError(ctx context.Context, err error) *model.Error {
	if err == nil {
		return nil
	}
	var me *model.Error
	if !errors.As(err, &me) || statusOf(me.Type) == http.StatusInternalServerError {
		reqID := middleware.GetReqID(ctx)
		s.log.Error("batch item failed", zap.String("request_id", reqID), zap.Error(err))
		me = model.Errorf(model.ErrUnknown, "internal error, request id %s", reqID)
	}
	return me
}

// writeError answers with err's type and message. An error that is not a model error is a
// bug: the client learns only the request id, and the cause goes to the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var me *model.Error
	if !errors.As(err, &me) || statusOf(me.Type) == http.StatusInternalServerError {
		reqID := middleware.GetReqID(r.Context())
		s.log.Error("request failed", zap.String("request_id", reqID), zap.String("path", r.URL.Path), zap.Error(err))
		me = model.Errorf(model.ErrUnknown, "internal error, request id %s", reqID)
	}
	writeJSON(w, statusOf(me.Type), errorResponse{Error: me})
}
