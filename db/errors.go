package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// mapError turns driver errors into model errors: no rows into not-found, a unique violation
// into exists, a lost connection into unavailable. The model error keeps the driver error as
// its cause (model.WrapError), so that a client sees the same type and message while the
// API's log says what went wrong. Model errors pass through unchanged.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return model.Errorf(model.ErrResourceNotFound, "not found")
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch pqErr.Code {
		case "23505": // unique_violation
			return model.WrapError(model.ErrResourceExists, "already exists", err)
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return model.WrapError(model.ErrResourceConflict, "concurrent change, retry", err)
		case "57P01", "57P02", "57P03", "53300": // shutting down, cannot connect now, too many connections
			return model.WrapError(model.ErrUnavailable, "database unavailable", err)
		}
		if pqErr.Code.Class() == "22" { // data_exception: a value PostgreSQL cannot store, e.g. a NUL character
			return model.WrapError(model.ErrInvalidRequest, "a value cannot be stored: "+pqErr.Message, err)
		}
		return err
	}
	// A connection the server dropped (PostgreSQL restarted) comes back as driver.ErrBadConn
	// once database/sql has tried the pool's other dead connections, or as an unexpected EOF
	// mid-statement: the database is unavailable for now, and a client should try again.
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) {
		return model.WrapError(model.ErrUnavailable, "database unavailable", err)
	}
	return err
}

// notFound is the ResourceNotFound error for a thing named by what and id.
func notFound(what, id string) error {
	return model.Errorf(model.ErrResourceNotFound, "%s %q not found", what, id)
}

// uuidOrInvalid checks an id that must be a UUID, so that a malformed one is a clear
// InvalidRequest rather than a database error.
func uuidOrInvalid(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return u, model.Errorf(model.ErrInvalidRequest, "%q is not a rollout id", id)
	}
	return u, nil
}
