package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// eachDriverRow runs query on a connection of its own and calls fn with each row's values as
// the driver decoded them, below database/sql: lib/pq gives text as a string, integers as
// int64, booleans as bool, JSON as bytes valid until the next row and NULL as nil. fn must
// not keep the slice nor those bytes.
//
// Why: at 250,000 instances, database/sql's Scan — a type switch and an assignment through
// an interface per column, under the rows' lock — was a fifth of the fleet list's reading
// in Go, the list's critical path; the values lib/pq hands it are already the ones wanted.
//
// As database/sql's own queries do, a connection the driver finds broken before the query
// was sent (driver.ErrBadConn: the server restarted since it was pooled) is discarded and
// the query tried again on another: every idle connection may be dead, so as many times as
// there are, and once more on a new one.
func (s *Store) eachDriverRow(ctx context.Context, query string, args []any, fn func([]driver.Value) error) error {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var err error
	for range s.db.Stats().Idle + 1 {
		var started bool
		err = s.eachDriverRowOnce(ctx, query, named, func(v []driver.Value) error {
			started = true
			return fn(v)
		})
		if started || !errors.Is(err, driver.ErrBadConn) {
			return err
		}
	}
	return err
}

// eachDriverRowOnce is one try of eachDriverRow, on one connection of the pool.
func (s *Store) eachDriverRowOnce(ctx context.Context, query string, args []driver.NamedValue, fn func([]driver.Value) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		rows, err := q.QueryContext(ctx, query, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(dest); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if err := fn(dest); err != nil {
				return err
			}
		}
	})
}

// driverValues reads a row of eachDriverRow as the Go types a row struct holds; the first
// value of an unexpected type is kept in err (a schema that changed under the query).
type driverValues struct {
	row []driver.Value
	err error
}

func (d *driverValues) fail(i int, want string) {
	if d.err == nil {
		d.err = fmt.Errorf("column %d: want %s, have %T", i, want, d.row[i])
	}
}

func (d *driverValues) text(i int) string {
	switch v := d.row[i].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	d.fail(i, "text")
	return ""
}

func (d *driverValues) int(i int) int64 {
	if v, ok := d.row[i].(int64); ok {
		return v
	}
	d.fail(i, "an integer")
	return 0
}

func (d *driverValues) bool(i int) bool {
	if v, ok := d.row[i].(bool); ok {
		return v
	}
	d.fail(i, "a boolean")
	return false
}

// json is a JSON column's bytes (nil for NULL), valid until the next row.
func (d *driverValues) json(i int) []byte {
	switch v := d.row[i].(type) {
	case []byte:
		return v
	case nil:
		return nil
	case string:
		return []byte(v)
	}
	d.fail(i, "JSON")
	return nil
}
