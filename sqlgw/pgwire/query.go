package pgwire

import (
	"context"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/floe-lake/floe"
)

// flushThreshold is how many bytes of rows are buffered before a flush.
const flushThreshold = 64 << 10

// prepared is a prepared statement; refs counts its map entry and portals.
type prepared struct {
	name   string
	st     Statement // nil for an empty query
	params []uint32
	cols   []Column
	refs   int
	// text is the statement's SQL (its first keyword names its spans).
	text string
}

// portal is a bound statement; res is set by its first Execute.
type portal struct {
	stmt    *prepared
	args    []any
	formats []int16
	ctx     context.Context
	cancel  context.CancelCauseFunc
	res     Result
	done    bool
	tag     string
}

// loop reads and answers messages until the connection ends.
func (c *conn) loop() {
	skipping := false // after an error in the extended protocol, until Sync
	for {
		nc := c.nc()
		if idle := c.srv.opts.IdleTimeout; idle > 0 {
			nc.SetReadDeadline(time.Now().Add(idle))
		}
		if c.srv.closing.Load() {
			c.sendFatal(fatal(CodeAdminShutdown, "terminating connection due to administrator command"))
			return
		}
		msg, err := c.be.Receive()
		if err != nil {
			var ne net.Error
			switch {
			case c.srv.closing.Load():
				c.sendFatal(fatal(CodeAdminShutdown, "terminating connection due to administrator command"))
			case errors.As(err, &ne) && ne.Timeout():
				c.sendFatal(fatal(CodeIdleSessionTimeout, "terminating connection due to idle-session timeout"))
			default:
				if err := receiveErr(err); !errors.Is(err, errClientGone) {
					c.sendFatal(err)
				}
			}
			return
		}
		if skipping {
			switch msg.(type) {
			case *pgproto3.Sync, *pgproto3.Terminate:
			default:
				continue
			}
		}
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Execute:
			if err := c.revoked(); err != nil {
				c.sendFatal(err)
				return
			}
		}
		var fatalErr error
		switch m := msg.(type) {
		case *pgproto3.Query:
			fatalErr = c.simpleQuery(m.String)
		case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
			if err := c.extended(m); err != nil {
				skipping = true
				fatalErr = c.sendError(err, nil)
			}
		case *pgproto3.Sync:
			skipping = false
			if t := c.sess.TxStatus(); t == TxIdle {
				c.closePortals()
			}
			fatalErr = c.ready()
		case *pgproto3.Flush:
			fatalErr = c.flush()
		case *pgproto3.Terminate:
			return
		case *pgproto3.FunctionCall:
			if fatalErr = c.sendError(&Error{Code: CodeFeatureNotSupported, Message: "the function call protocol is not supported"}, nil); fatalErr == nil {
				fatalErr = c.ready()
			}
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Ignored outside COPY, as PostgreSQL does: a client may still
			// be sending data for a COPY that failed.
		default:
			c.sendFatal(fatal(CodeProtocolViolation, fmt.Sprintf("unexpected message %T", msg)))
			return
		}
		if fatalErr != nil {
			if !errors.Is(fatalErr, errClientGone) {
				c.sendFatal(fatalErr)
			}
			return
		}
	}
}

// revoked returns the FATAL error that ends a session whose identity was
// revoked since it logged in, or nil.
func (c *conn) revoked() error {
	check := c.sess.Identity.Revoked
	if check == nil {
		return nil
	}
	err := check()
	if err == nil {
		return nil
	}
	c.log.Info("pgwire: ending the session of a revoked identity", "principal", c.sess.Identity.Principal, "reason", err)
	e := fatal(CodeInvalidAuthorization, "terminating connection: "+floe.PublicMessage(err))
	e.Hint = "Log in again with a valid access token."
	return e
}

// flush writes buffered messages.
func (c *conn) flush() error {
	c.buffered = 0
	if err := c.be.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// ready sends ReadyForQuery and flushes.
func (c *conn) ready() error {
	c.sendEvents()
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: byte(c.sess.TxStatus())})
	return c.flush()
}

// sendEvents sends queued notices and changed reported settings.
func (c *conn) sendEvents() {
	for _, n := range c.sess.takeNotices() {
		c.be.Send((*pgproto3.NoticeResponse)(n.response("NOTICE")))
	}
	for _, p := range c.sess.changedReported() {
		c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
}

// statementContext returns the context of a statement: cancelled with a
// cause by a cancel request or shutdown, and with errStatementTimeout when
// the session's statement_timeout, bounded by Options.MaxStatementTimeout,
// runs out.
func (c *conn) statementContext() (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	d, limit := c.sess.StatementTimeout(), c.srv.opts.MaxStatementTimeout
	if limit > 0 && (d == 0 || d > limit) {
		d = limit
	}
	if d <= 0 {
		return ctx, cancel
	}
	tctx, stop := context.WithTimeoutCause(ctx, d, errStatementTimeout)
	return tctx, func(cause error) {
		cancel(cause)
		stop()
	}
}

// wireError turns a statement's error into what the client sees; qctx is
// the statement's context, whose cause tells cancellation apart.
func (c *conn) wireError(err error, qctx context.Context) *Error {
	if qctx != nil {
		switch context.Cause(qctx) {
		case errQueryCanceled:
			return &Error{Code: CodeQueryCanceled, Message: "canceling statement due to user request"}
		case errStatementTimeout:
			return &Error{Code: CodeQueryCanceled, Message: "canceling statement due to statement timeout"}
		case errShutdown:
			return fatal(CodeAdminShutdown, "terminating connection due to administrator command")
		}
	}
	pe, internal := publicError(err)
	if internal {
		c.log.Error("pgwire: statement failed", "err", err)
	}
	return pe
}

// sendError reports a statement error. It returns a non-nil error when the
// connection must end (a FATAL error, or the client is gone).
func (c *conn) sendError(err error, qctx context.Context) error {
	if errors.Is(err, errClientGone) {
		return err
	}
	pe := c.wireError(err, qctx)
	if pe.Severity == "FATAL" {
		return pe
	}
	if c.sess.TxStatus() == TxInBlock {
		c.sess.SetTxStatus(TxFailed)
	}
	c.sendEvents()
	c.be.Send(pe.response("ERROR"))
	return nil
}

// simpleQuery runs a Query message: each statement in turn, stopping at
// the first error, then ReadyForQuery.
func (c *conn) simpleQuery(sql string) error {
	c.dropPortal("")
	stmts := SplitStatements(sql)
	if len(stmts) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
	}
	for _, q := range stmts {
		qctx, err := c.runSimple(q)
		if err != nil {
			if err := c.sendError(err, qctx); err != nil {
				return err
			}
			break
		}
	}
	if c.sess.TxStatus() == TxIdle {
		c.closePortals()
	}
	return c.ready()
}

// runSimple prepares and runs one statement of a simple query with text
// results; it returns the statement's context for error reporting.
func (c *conn) runSimple(sql string) (_ context.Context, err error) {
	qctx, cancel := c.statementContext()
	defer cancel(nil)
	qctx, span := c.startSpan(qctx, "sql.query", sql)
	defer func() { endSpan(span, err) }()
	c.setRunning(cancel)
	defer c.setRunning(nil)
	st, err := c.srv.opts.Engine.Prepare(qctx, c.sess, sql, nil)
	if err != nil {
		return qctx, err
	}
	defer c.closeStatement(st)
	if n := len(st.Params()); n > 0 {
		return qctx, &Error{Code: CodeUndefinedParameter, Message: "there is no parameter $1"}
	}
	res, err := st.Execute(qctx, nil)
	if err != nil {
		return qctx, err
	}
	defer c.closeResult(res)
	cols := st.Columns()
	if cols != nil {
		c.be.Send(rowDescription(cols, nil))
	}
	n, _, err := c.sendRows(qctx, res, cols, nil, 0)
	if err != nil {
		return qctx, err
	}
	c.sendEvents()
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(completeTag(res.Tag(), n))})
	return qctx, nil
}

func (c *conn) closeStatement(st Statement) {
	if err := st.Close(); err != nil {
		c.log.Warn("pgwire: closing statement", "err", err)
	}
}

func (c *conn) closeResult(r Result) {
	if err := r.Close(); err != nil {
		c.log.Warn("pgwire: closing result", "err", err)
	}
}

// completeTag fills in the row count of a bare "SELECT" tag.
func completeTag(tag string, rows int) string {
	if tag == "SELECT" {
		return "SELECT " + strconv.Itoa(rows)
	}
	return tag
}

// rowDescription describes cols with formats (nil: all text).
func rowDescription(cols []Column, formats []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		mod := col.TypeMod
		if mod == 0 {
			mod = -1
		}
		f := TextFormat
		if formats != nil {
			f = formats[i]
		}
		fields[i] = pgproto3.FieldDescription{
			Name:                 []byte(col.Name),
			TableOID:             col.TableOID,
			TableAttributeNumber: col.AttrNum,
			DataTypeOID:          col.TypeOID,
			DataTypeSize:         typeSize(col.TypeOID),
			TypeModifier:         mod,
			Format:               f,
		}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

// sendRows sends up to maxRows rows of res (0: all). suspended reports
// that the limit was reached before the end.
func (c *conn) sendRows(qctx context.Context, res Result, cols []Column, formats []int16, maxRows int) (n int, suspended bool, err error) {
	loc := c.sess.Location()
	for maxRows == 0 || n < maxRows {
		row, err := res.Next()
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
		if qctx.Err() != nil {
			return n, false, context.Cause(qctx)
		}
		if len(row) != len(cols) {
			return n, false, fmt.Errorf("pgwire: engine returned %d values for %d columns", len(row), len(cols))
		}
		c.rowBuf, c.rowOffs = c.rowBuf[:0], c.rowOffs[:0]
		for i, v := range row {
			if v == nil {
				c.rowOffs = append(c.rowOffs, -1)
				continue
			}
			f := TextFormat
			if formats != nil {
				f = formats[i]
			}
			c.rowOffs = append(c.rowOffs, len(c.rowBuf))
			if c.rowBuf, err = c.codec.appendValue(c.rowBuf, cols[i].TypeOID, f, v, loc); err != nil {
				return n, false, fmt.Errorf("column %q: %w", cols[i].Name, err)
			}
		}
		values := make([][]byte, len(row))
		for i, off := range c.rowOffs {
			if off < 0 {
				continue
			}
			end := len(c.rowBuf)
			for _, next := range c.rowOffs[i+1:] {
				if next >= 0 {
					end = next
					break
				}
			}
			values[i] = c.rowBuf[off:end:end]
			if values[i] == nil {
				values[i] = []byte{} // empty, not NULL
			}
		}
		c.be.Send(&pgproto3.DataRow{Values: values})
		n++
		c.buffered += len(c.rowBuf) + 4*len(row) + 7
		if c.buffered >= flushThreshold {
			if err := c.flush(); err != nil {
				return n, false, err
			}
		}
	}
	return n, true, nil
}

// extended handles Parse, Bind, Describe, Execute and Close.
func (c *conn) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		return c.parse(m)
	case *pgproto3.Bind:
		return c.bind(m)
	case *pgproto3.Describe:
		return c.describe(m)
	case *pgproto3.Execute:
		return c.execute(m)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			c.dropStatement(m.Name)
		} else {
			c.dropPortal(m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	}
	return nil
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" && c.stmts[m.Name] != nil {
		return &Error{Code: CodeDuplicatePreparedStatement, Message: fmt.Sprintf("prepared statement %q already exists", m.Name)}
	}
	stmts := SplitStatements(m.Query)
	if len(stmts) > 1 {
		return &Error{Code: CodeSyntaxError, Message: "cannot insert multiple commands into a prepared statement"}
	}
	p := &prepared{name: m.Name, refs: 1}
	if len(stmts) == 1 {
		p.text = stmts[0]
		qctx, cancel := c.statementContext()
		c.setRunning(cancel)
		sctx, span := c.startSpan(qctx, "sql.prepare", stmts[0])
		st, err := c.srv.opts.Engine.Prepare(sctx, c.sess, stmts[0], m.ParameterOIDs)
		endSpan(span, err)
		c.setRunning(nil)
		if err != nil {
			err = c.wireError(err, qctx)
			cancel(nil)
			return err
		}
		cancel(nil)
		p.st, p.params, p.cols = st, st.Params(), st.Columns()
	}
	if m.Name == "" {
		c.dropStatement("")
	}
	c.stmts[m.Name] = p
	c.be.Send(&pgproto3.ParseComplete{})
	return nil
}

// formatCodes expands a Bind format-code list to n entries.
func formatCodes(codes []int16, n int, what string) ([]int16, error) {
	out := make([]int16, n)
	switch len(codes) {
	case 0:
	case 1:
		for i := range out {
			out[i] = codes[0]
		}
	case n:
		copy(out, codes)
	default:
		return nil, &Error{Code: CodeProtocolViolation, Message: fmt.Sprintf("bind message has %d %s formats but %d %ss", len(codes), what, n, what)}
	}
	for _, f := range out {
		if f != TextFormat && f != BinaryFormat {
			return nil, &Error{Code: CodeProtocolViolation, Message: fmt.Sprintf("unsupported format code: %d", f)}
		}
	}
	return out, nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	p := c.stmts[m.PreparedStatement]
	if p == nil {
		return &Error{Code: CodeInvalidStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
	}
	if m.DestinationPortal != "" && c.portals[m.DestinationPortal] != nil {
		return &Error{Code: "42P03", Message: fmt.Sprintf("portal %q already exists", m.DestinationPortal)}
	}
	if len(m.Parameters) != len(p.params) {
		return &Error{Code: CodeProtocolViolation, Message: fmt.Sprintf(
			"bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), p.name, len(p.params))}
	}
	pf, err := formatCodes(m.ParameterFormatCodes, len(m.Parameters), "parameter")
	if err != nil {
		return err
	}
	args := make([]any, len(m.Parameters))
	for i, raw := range m.Parameters {
		if raw == nil {
			continue
		}
		if args[i], err = c.codec.decodeParam(p.params[i], pf[i], raw, c.sess.Location()); err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				e := *pe
				e.Detail = fmt.Sprintf("parameter $%d", i+1)
				return &e
			}
			return err
		}
	}
	rf, err := formatCodes(m.ResultFormatCodes, len(p.cols), "result")
	if err != nil {
		return err
	}
	for i, f := range rf {
		if f == BinaryFormat && !c.codec.binaryOK(p.cols[i].TypeOID) {
			return &Error{Code: CodeFeatureNotSupported, Message: fmt.Sprintf(
				"binary output is not supported for column %q of type %s", p.cols[i].Name, typeName(p.cols[i].TypeOID))}
		}
	}
	c.dropPortal(m.DestinationPortal)
	p.refs++
	c.portals[m.DestinationPortal] = &portal{stmt: p, args: args, formats: rf}
	c.be.Send(&pgproto3.BindComplete{})
	return nil
}

func (c *conn) describe(m *pgproto3.Describe) error {
	if m.ObjectType == 'S' {
		p := c.stmts[m.Name]
		if p == nil {
			return &Error{Code: CodeInvalidStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
		}
		params := p.params
		if params == nil {
			params = []uint32{}
		}
		c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: params})
		if p.cols == nil {
			c.be.Send(&pgproto3.NoData{})
		} else {
			c.be.Send(rowDescription(p.cols, nil))
		}
		return nil
	}
	pt := c.portals[m.Name]
	if pt == nil {
		return &Error{Code: CodeInvalidCursorName, Message: fmt.Sprintf("portal %q does not exist", m.Name)}
	}
	if pt.stmt.cols == nil {
		c.be.Send(&pgproto3.NoData{})
	} else {
		c.be.Send(rowDescription(pt.stmt.cols, pt.formats))
	}
	return nil
}

func (c *conn) execute(m *pgproto3.Execute) error {
	pt := c.portals[m.Portal]
	if pt == nil {
		return &Error{Code: CodeInvalidCursorName, Message: fmt.Sprintf("portal %q does not exist", m.Portal)}
	}
	if pt.stmt.st == nil {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if pt.done {
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
		return nil
	}
	if pt.res == nil {
		pt.ctx, pt.cancel = c.statementContext()
	}
	c.setRunning(pt.cancel)
	defer c.setRunning(nil)
	if pt.res == nil {
		sctx, span := c.startSpan(pt.ctx, "sql.execute", pt.stmt.text)
		res, err := pt.stmt.st.Execute(sctx, pt.args)
		endSpan(span, err)
		if err != nil {
			err = c.wireError(err, pt.ctx)
			c.dropPortal(m.Portal)
			return err
		}
		pt.res = res
	}
	n, suspended, err := c.sendRows(pt.ctx, pt.res, pt.stmt.cols, pt.formats, int(m.MaxRows))
	if err != nil {
		if errors.Is(err, errClientGone) {
			return err
		}
		err = c.wireError(err, pt.ctx)
		c.dropPortal(m.Portal)
		return err
	}
	if suspended {
		c.be.Send(&pgproto3.PortalSuspended{})
		return nil
	}
	pt.done = true
	pt.tag = completeTag(pt.res.Tag(), n)
	c.closeResult(pt.res)
	pt.res = nil
	c.sendEvents()
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
	return nil
}

// dropPortal closes a portal if it exists.
func (c *conn) dropPortal(name string) {
	pt := c.portals[name]
	if pt == nil {
		return
	}
	delete(c.portals, name)
	if pt.res != nil {
		c.closeResult(pt.res)
	}
	if pt.cancel != nil {
		pt.cancel(nil)
	}
	c.release(pt.stmt)
}

// closePortals closes every portal (the end of a transaction).
func (c *conn) closePortals() {
	for name := range c.portals {
		c.dropPortal(name)
	}
}

// dropStatement closes a prepared statement if it exists; its Statement
// is closed once no portal uses it.
func (c *conn) dropStatement(name string) {
	p := c.stmts[name]
	if p == nil {
		return
	}
	delete(c.stmts, name)
	c.release(p)
}

func (c *conn) release(p *prepared) {
	p.refs--
	if p.refs == 0 && p.st != nil {
		c.closeStatement(p.st)
	}
}

// closeAll closes every portal and statement at the end of the connection.
func (c *conn) closeAll() {
	c.closePortals()
	for name := range c.stmts {
		c.dropStatement(name)
	}
}

// startSpan starts the root span of one statement (sql.query) or of one
// phase of an extended-protocol statement (sql.prepare, sql.execute) when
// tracing is on; span is nil when it is off. The span names the
// statement's first keyword, never its text (literals may be data; the
// audit log has the text).
func (c *conn) startSpan(ctx context.Context, name, sql string) (context.Context, trace.Span) {
	if c.srv.opts.Tracer == nil {
		return ctx, nil
	}
	ctx, span := c.srv.opts.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		op := strings.TrimSpace(sql)
		if i := strings.IndexFunc(op, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
			op = op[:i]
		}
		if len(op) > 16 {
			op = op[:16]
		}
		span.SetAttributes(attribute.String("db.system.name", "postgresql"),
			attribute.String("db.operation.name", strings.ToUpper(op)), attribute.String("floe.sql.user", c.sess.User))
	}
	return ctx, span
}

// endSpan ends a span from startSpan (nil: none), marking it failed on err.
func endSpan(span trace.Span, err error) {
	if span != nil {
		spans.End(span, err)
	}
}
