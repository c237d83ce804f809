package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// TestMapErrorKeepsTheCause: the model error a client sees is unchanged, and the driver
// error behind it stays reachable for the logs.
func TestMapErrorKeepsTheCause(t *testing.T) {
	for _, c := range []struct {
		name       string
		in         error
		typ        model.ErrorType
		msg        string
		wrapsCause bool
	}{
		{"no rows", sql.ErrNoRows, model.ErrResourceNotFound, "not found", false},
		{"unique violation", &pq.Error{Code: "23505"}, model.ErrResourceExists, "already exists", true},
		{"deadlock", &pq.Error{Code: "40P01"}, model.ErrResourceConflict, "concurrent change, retry", true},
		{"server shutting down", &pq.Error{Code: "57P01", Message: "terminating connection due to administrator command"}, model.ErrUnavailable, "database unavailable", true},
		{"too many connections", &pq.Error{Code: "53300"}, model.ErrUnavailable, "database unavailable", true},
		{"NUL in a value", &pq.Error{Code: "22021", Message: "invalid byte sequence"}, model.ErrInvalidRequest, "a value cannot be stored: invalid byte sequence", true},
		{"network", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, model.ErrUnavailable, "database unavailable", true},
		{"connection done", sql.ErrConnDone, model.ErrUnavailable, "database unavailable", true},
		{"deadline", context.DeadlineExceeded, model.ErrUnavailable, "database unavailable", true},
		{"bad connection (the server restarted)", driver.ErrBadConn, model.ErrUnavailable, "database unavailable", true},
		{"connection cut mid-statement", io.ErrUnexpectedEOF, model.ErrUnavailable, "database unavailable", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mapError(c.in)
			var me *model.Error
			if !errors.As(err, &me) || me.Type != c.typ || me.Message != c.msg {
				t.Fatalf("mapError = %#v, want %s %q", err, c.typ, c.msg)
			}
			if c.wrapsCause && (!errors.Is(err, c.in) || me.Unwrap() != c.in) {
				t.Fatalf("%v does not keep its cause %v", err, c.in)
			}
		})
	}
}
