package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/sqlgw/engine"
	"github.com/floe-lake/floe/sqlgw/httpquery"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// runQuery runs one statement of the HTTP query API (POST /api/v1/query)
// on the SQL endpoint's engine, in a session of its own, as the caller,
// in the request's collaboration when it names one.
func (a *App) runQuery(ctx context.Context, claims *auth.Claims, remote string, q httpquery.Request) (httpquery.Rows, error) {
	sql, args := q.SQL, q.Args
	if a.sql == nil {
		return nil, floe.E(floe.Unsupported, "query", "the SQL engine is off on this server (sql_listen is off)")
	}
	id := pgwire.Identity{Principal: "anonymous", Method: "http",
		Payload: engine.Caller{Subject: authz.Subject{Principal: "anonymous", Admin: true}, Unrestricted: true}}
	if claims != nil {
		id = sqlIdentity(*claims)
		id.Method = "http"
	}
	var addr net.Addr
	if ap, err := net.ResolveTCPAddr("tcp", remote); err == nil {
		addr = ap
	}
	eng := a.sql.engine
	sess := pgwire.NewSession(id, a.cfg.Warehouse, addr)
	if err := eng.StartSession(ctx, sess); err != nil {
		return nil, err
	}
	// The server's statement bound applies here as on the wire protocol.
	ctx, stop := context.WithTimeoutCause(ctx, a.cfg.SQLMaxStatementTimeout, errQueryTimeout)
	ctx = engine.WithRequestID(ctx, mgmtapi.RequestID(ctx))
	if q.Collaboration != "" {
		if err := eng.EnterCollaboration(ctx, sess, q.Collaboration); err != nil {
			eng.EndSession(sess)
			stop()
			return nil, err
		}
	}
	st, err := eng.Prepare(ctx, sess, sql, nil)
	if err != nil {
		eng.EndSession(sess)
		stop()
		return nil, timeoutError(ctx, err)
	}
	vals, err := queryArgs(st.Params(), args)
	if err == nil {
		var res pgwire.Result
		if res, err = st.Execute(ctx, vals); err == nil {
			return &queryRows{Result: res, ctx: ctx, cols: st.Columns(), close: func() {
				_ = st.Close()
				eng.EndSession(sess)
				stop()
			}}, nil
		}
	}
	_ = st.Close()
	eng.EndSession(sess)
	stop()
	return nil, timeoutError(ctx, err)
}

// errQueryTimeout cancels a query of the HTTP API that ran past
// sql_max_statement_timeout.
var errQueryTimeout = errors.New("statement timeout")

// timeoutError reports a statement cancelled by the server's bound as
// PostgreSQL does (57014); other errors pass unchanged.
func timeoutError(ctx context.Context, err error) error {
	if err != nil && context.Cause(ctx) == errQueryTimeout {
		return &pgwire.Error{Code: pgwire.CodeQueryCanceled, Message: "canceling statement due to statement timeout"}
	}
	return err
}

// queryRows is a running query of the HTTP API; Close ends its session.
type queryRows struct {
	pgwire.Result
	ctx   context.Context
	cols  []pgwire.Column
	close func()
}

func (q *queryRows) Columns() []pgwire.Column { return q.cols }

// Next returns the next row; a statement cancelled by the server's bound
// reports 57014.
func (q *queryRows) Next() ([]any, error) {
	row, err := q.Result.Next()
	if err != nil && err != io.EOF {
		return nil, timeoutError(q.ctx, err)
	}
	return row, err
}

func (q *queryRows) Close() error {
	err := q.Result.Close()
	q.close()
	return err
}

// queryArgs converts the JSON parameters of a query (nil, bool, string,
// json.Number) to the Go values the engine takes for each parameter type
// (see pgwire's Encoding).
func queryArgs(oids []uint32, args []any) ([]any, error) {
	if len(args) != len(oids) {
		return nil, &pgwire.Error{Code: pgwire.CodeProtocolViolation,
			Message: fmt.Sprintf("the statement has %d parameters, the request gives %d", len(oids), len(args))}
	}
	out := make([]any, len(args))
	for i, v := range args {
		c, err := queryArg(oids[i], v)
		if err != nil {
			return nil, &pgwire.Error{Code: pgwire.CodeInvalidTextRepresentation, Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		out[i] = c
	}
	return out, nil
}

func queryArg(oid uint32, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	text := ""
	switch x := v.(type) {
	case bool:
		if oid == pgwire.BoolOID {
			return x, nil
		}
		text = strconv.FormatBool(x)
	case json.Number:
		text = x.String()
	case string:
		text = x
	default:
		return nil, fmt.Errorf("unsupported value %T", v)
	}
	switch oid {
	case pgwire.BoolOID:
		return strconv.ParseBool(text)
	case pgwire.Int2OID:
		n, err := strconv.ParseInt(text, 10, 16)
		return int16(n), err
	case pgwire.Int4OID:
		n, err := strconv.ParseInt(text, 10, 32)
		return int32(n), err
	case pgwire.Int8OID:
		return strconv.ParseInt(text, 10, 64)
	case pgwire.Float4OID:
		f, err := strconv.ParseFloat(text, 32)
		return float32(f), err
	case pgwire.Float8OID:
		return strconv.ParseFloat(text, 64)
	case pgwire.ByteaOID:
		return []byte(text), nil
	case pgwire.DateOID, pgwire.TimestampOID, pgwire.TimestamptzOID:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
			if t, err := time.Parse(layout, text); err == nil {
				return t.UTC(), nil
			}
		}
		return nil, fmt.Errorf("%q is not a date or timestamp (use RFC 3339)", text)
	}
	return text, nil // text, numeric, json, dates and others: the text form
}

// queryFunc is the management API's Query option (nil without the engine).
func (a *App) queryFunc() mgmtapi.Querier {
	if !a.cfg.sqlEnabled() {
		return nil
	}
	return a.runQuery
}
