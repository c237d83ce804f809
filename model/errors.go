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
	ErrInvalidRequest         ErrorType = "InvalidRequest"
	ErrInvalidJSON            ErrorType = "InvalidJSON"
	ErrResourceNotFound       ErrorType = "ResourceNotFound"
	ErrResourceExists         ErrorType = "ResourceExists"
	ErrResourceConflict       ErrorType = "ResourceConflict"
	ErrUpdateInProgress       ErrorType = "UpdateInProgress"
	ErrNoUpdateInProgress     ErrorType = "NoUpdateInProgress"
	ErrInvalidStateTransition ErrorType = "InvalidStateTransition"
	ErrCannotBeClaimed        ErrorType = "ActualLRPCannotBeClaimed"
	ErrCannotBeStarted        ErrorType = "ActualLRPCannotBeStarted"
	ErrCannotBeCrashed        ErrorType = "ActualLRPCannotBeCrashed"
	ErrCannotBeFailed         ErrorType = "ActualLRPCannotBeFailed"
	ErrCannotBeRemoved        ErrorType = "ActualLRPCannotBeRemoved"
	ErrRequestTooLarge        ErrorType = "RequestTooLarge"
	ErrUnavailable            ErrorType = "Unavailable"
	ErrNotImplemented         ErrorType = "NotImplemented"
	ErrUnknown                ErrorType = "UnknownError"
)

// Error is a failure with a type a client can act on and a message for a human.
type Error struct {
	Type    ErrorType `json:"type"`
	Message string    `json:"message"`
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// Errorf builds an *Error of the given type.
func Errorf(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
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
