package db

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/lib/pq"
)

// statementCacheSize is how many prepared statements each connection keeps. The store's
// queries are fixed texts (about a hundred and fifty in all), so a connection settles on the
// ones its callers use; the bound only guards against a caller that builds texts.
const statementCacheSize = 256

// planPerCall, at the start of a query, keeps it unprepared: PostgreSQL then plans it for each
// call's parameters, always. For the queries whose best plan depends on them — an optional
// filter (cell_id = $1 unless $1 is empty): a cell's poll wants the cell's index, the whole
// fleet's list a walk of the primary key. Prepared, such a query may settle on a generic
// plan after five calls that happened to be fleet lists, and every later poll on that
// connection would scan the fleet for one cell's instances.
const planPerCall = "/* planned per call */ "

// preparingConnector opens connections that prepare each query with parameters once, as a
// named statement of the connection, and execute the prepared statement from then on.
//
// Why: lib/pq sends a query with parameters as an unnamed statement (Parse, Bind, Execute in
// one round trip), so PostgreSQL parses, analyses and plans it on every call. A rollout's
// index costs some fifty statements; measured with pg_stat_statements, planning alone took as
// long as executing them, and PostgreSQL's CPU per index was the largest share of the
// machine's. A prepared statement is parsed once per connection; PostgreSQL then plans it for
// each call's parameters five times and keeps a generic plan only when it costs no more than
// those (plan_cache_mode auto), so a query whose best plan depends on its parameters keeps
// being planned for them.
//
// A pooler that shares server connections between clients in transaction mode does not keep
// a client's named statements (PgBouncer before 1.21, or without max_prepared_statements):
// BBS_DB_STATEMENT_CACHE=off (WithStatementCache(false)) leaves them unnamed.
type preparingConnector struct {
	driver.Connector
	size int // statements kept per connection; 0: statementCacheSize
}

func (c preparingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	full, ok := conn.(fullConn)
	if !ok {
		return conn, nil // a driver without what the cache needs: statements stay unnamed
	}
	size := c.size
	if size <= 0 {
		size = statementCacheSize
	}
	return &preparingConn{fullConn: full, size: size, byQuery: map[string]*list.Element{}, order: list.New()}, nil
}

// fullConn is what lib/pq's connection offers database/sql; the preparing connection offers
// all of it, so that wrapping it changes nothing else of how database/sql uses it.
type fullConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// preparedStmt is a statement that runs with a context (lib/pq's does: a cancelled context
// cancels the query on the server).
type preparedStmt interface {
	driver.Stmt
	driver.StmtQueryContext
	driver.StmtExecContext
}

// preparingConn is a connection with its prepared statements, least recently used last.
// database/sql uses a connection from one goroutine at a time, so it needs no lock.
type preparingConn struct {
	fullConn
	size    int
	byQuery map[string]*list.Element // of *cachedStmt
	order   *list.List
}

type cachedStmt struct {
	query string
	stmt  preparedStmt
}

// unprepared says whether a query goes as it is: without parameters lib/pq sends a simple
// query, which may hold several statements (migrations) and cannot be prepared; and a query
// marked planPerCall.
func unprepared(query string, args []driver.NamedValue) bool {
	return len(args) == 0 || strings.HasPrefix(query, planPerCall)
}

func (c *preparingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if unprepared(query, args) {
		return c.fullConn.QueryContext(ctx, query, args)
	}
	st, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args)
	c.check(query, err)
	return rows, err
}

func (c *preparingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if unprepared(query, args) {
		return c.fullConn.ExecContext(ctx, query, args)
	}
	st, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, args)
	c.check(query, err)
	return res, err
}

// prepared returns the connection's statement for query, preparing it the first time.
func (c *preparingConn) prepared(ctx context.Context, query string) (preparedStmt, error) {
	if e, ok := c.byQuery[query]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cachedStmt).stmt, nil
	}
	s, err := c.fullConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := s.(preparedStmt)
	if !ok {
		s.Close()
		return nil, errors.New("db: the driver's prepared statements take no context")
	}
	if c.order.Len() >= c.size {
		c.evict()
	}
	c.byQuery[query] = c.order.PushFront(&cachedStmt{query: query, stmt: st})
	return st, nil
}

// check forgets query's statement when PostgreSQL no longer runs it as prepared: a migration
// changed the columns it returns ("cached plan must not change result type", 0A000), or the
// statement is gone from the session (26000, after a DISCARD ALL). That call fails (inside a
// transaction the transaction is aborted anyway); the next prepares the query afresh.
func (c *preparingConn) check(query string, err error) {
	var pqErr *pq.Error
	if err == nil || !errors.As(err, &pqErr) {
		return
	}
	if e, ok := c.byQuery[query]; ok && (pqErr.Code == "0A000" || pqErr.Code == "26000") {
		// Not closed: the transaction may be aborted, and the session keeps the statement
		// (or has lost it) until the connection closes.
		c.forget(e)
	}
}

// evict closes the least recently used statement on the server and forgets it. One that
// cannot be closed (the connection broke) is forgotten all the same: its session is gone.
func (c *preparingConn) evict() {
	c.forget(c.order.Back()).Close()
}

func (c *preparingConn) forget(e *list.Element) preparedStmt {
	cs := c.order.Remove(e).(*cachedStmt)
	delete(c.byQuery, cs.query)
	return cs.stmt
}
