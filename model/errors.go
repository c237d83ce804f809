// Package model holds the BBS domain: LRP definitions, desired and actual LRPs, domains,
// rollouts and cells, their validation, and the one error type every layer speaks. It imports
// nothing but the standard library.
package model

import (
	"errors"
	"fmt"
)

// ErrorType names a class of failure. The names follow BBS (plus a few of our own) and are
// mapped to HTTP statuses in exactly one place, the api package.
type ErrorType string

// The error types of the HTTP contract (API.md).
const (
	ErrInvalidRequest     ErrorType = "InvalidRequest"
	ErrInvalidJSON        ErrorType = "InvalidJSON"
	ErrResourceNotFound   ErrorType = "ResourceNotFound"
	ErrResourceExists     ErrorType = "ResourceExists"
	ErrResourceConflict   ErrorType = "ResourceConflict"
	ErrUpdateInProgress   ErrorType = "UpdateInProgress"
	ErrNoUpdateInProgress ErrorType = "NoUpdateInProgress"
	// ErrNoRolloutInProgress and ErrInvalidPhase refuse a rollout control (ROLLOUTS-NEXT.md
	// section 3): there is none under way, or it is in a phase the call does not apply to.
	ErrNoRolloutInProgress    ErrorType = "NoRolloutInProgress"
	ErrInvalidPhase           ErrorType = "InvalidPhase"
	ErrInvalidStateTransition ErrorType = "InvalidStateTransition"
	// ErrFrozen refuses to start a rollout while the fleet is frozen (POST
	// /v1/rollouts/freeze); an update with strategy.break_glass passes.
	ErrFrozen                 ErrorType = "Frozen"
	ErrCannotBeClaimed        ErrorType = "ActualLRPCannotBeClaimed"
	ErrCannotBeStarted        ErrorType = "ActualLRPCannotBeStarted"
	ErrCannotBeCrashed        ErrorType = "ActualLRPCannotBeCrashed"
	ErrCannotBeFailed         ErrorType = "ActualLRPCannotBeFailed"
	ErrCannotBeRemoved        ErrorType = "ActualLRPCannotBeRemoved"
	ErrRunningOnDifferentCell ErrorType = "RunningOnDifferentCell"
	ErrRequestTooLarge        ErrorType = "RequestTooLarge"
	ErrUnavailable            ErrorType = "Unavailable"
	ErrNotImplemented         ErrorType = "NotImplemented"
	ErrUnknown                ErrorType = "UnknownError"
)

// Error is a failure with a type a client can act on and a message for a human.
type Error struct {
	Type    ErrorType `json:"type"`
	Message string    `json:"message"`
	// cause is what went wrong underneath (a driver error behind "database unavailable"):
	// kept for the logs and errors.Is/As, never sent to a client.
	cause error
}

// Error is the type and message, then the cause when there is one, so that a log of the
// error says why.
func (e *Error) Error() string {
	if e.cause != nil {
		return string(e.Type) + ": " + e.Message + ": " + e.cause.Error()
	}
	return string(e.Type) + ": " + e.Message
}

// Unwrap returns the cause, nil when there is none.
func (e *Error) Unwrap() error { return e.cause }

// Errorf builds an *Error of the given type.
func Errorf(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// WrapError builds an *Error of type t with message msg, caused by cause: the client sees
// t and msg only, exactly as without a cause, while logs and errors.Is/As see the cause.
func WrapError(t ErrorType, msg string, cause error) *Error {
	return &Error{Type: t, Message: msg, cause: cause}
}

// TypeOf returns the ErrorType of err, or ErrUnknown when err is not (and does not wrap) an *Error.
func TypeOf(err error) ErrorType {
	var e *Error
	if errors.As(err, &e) {
		return e.Type
	}
	return ErrUnknown
}

// IsType reports whether err is an *Error of type t.
func IsType(err error, t ErrorType) bool {
	return err != nil && TypeOf(err) == t
}
