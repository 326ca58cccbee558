package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
)

// testEngine is a test double for the wire layer, not a SQL engine: it
// recognises a handful of statement shapes, just enough to drive pgwire
// through real clients.
//
//	select <expr>[, <expr>...]     expr: $N[::type] or a literal ('s', 12, 1.5,
//	                               true, null)[::type], optionally "as name"
//	select * from items [limit N]  a fixed table with a column of every type
//	select * from generate_series(1, N)   N int8 rows, produced lazily
//	select pg_sleep(S)             waits S seconds or until cancelled
//	select 1/0                     fails with SQLSTATE 22012
//	select boom()                  fails with an internal error
//	select * from missing          fails with a floe NotFound error
//	set <name> = <value> / show <name>
//	begin / commit / rollback      transaction status only
//	delete from t / insert into t  "DELETE 3" / "INSERT 0 1", no rows
//	do notice                      queues a NOTICE
type testEngine struct {
	maxSleep time.Duration // caps pg_sleep when set (fuzzing)
	open     atomic.Int64  // prepared and not yet closed statements
	started  atomic.Int64
	ended    atomic.Int64
	mu       sync.Mutex
	lastID   Identity
	seen     []string // statements given to Prepare
}

func (e *testEngine) StartSession(_ context.Context, s *Session) error {
	e.started.Add(1)
	e.mu.Lock()
	e.lastID = s.Identity
	e.mu.Unlock()
	if s.User == "refused" {
		return &Error{Code: CodeInsufficientPrivilege, Message: "no SQL access"}
	}
	return nil
}

func (e *testEngine) EndSession(*Session) { e.ended.Add(1) }

func (e *testEngine) statements() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.seen...)
}

func (e *testEngine) lastIdentity() Identity {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastID
}

type testStmt struct {
	e      *testEngine
	s      *Session
	params []uint32
	cols   []Column
	run    func(ctx context.Context, args []any) (Result, error)
	closed atomic.Bool
}

func (st *testStmt) Params() []uint32  { return st.params }
func (st *testStmt) Columns() []Column { return st.cols }
func (st *testStmt) Execute(ctx context.Context, args []any) (Result, error) {
	if st.s.TxStatus() == TxFailed {
		return nil, &Error{Code: CodeInFailedTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}
	}
	return st.run(ctx, args)
}
func (st *testStmt) Close() error {
	if st.closed.Swap(true) {
		return errors.New("statement closed twice")
	}
	st.e.open.Add(-1)
	return nil
}

var typeNames = map[string]uint32{
	"bool": BoolOID, "boolean": BoolOID, "int2": Int2OID, "smallint": Int2OID, "int4": Int4OID,
	"int": Int4OID, "integer": Int4OID, "int8": Int8OID, "bigint": Int8OID, "float4": Float4OID,
	"real": Float4OID, "float8": Float8OID, "numeric": NumericOID, "text": TextOID, "varchar": VarcharOID,
	"bytea": ByteaOID, "date": DateOID, "timestamp": TimestampOID, "timestamptz": TimestamptzOID,
	"json": JSONOID, "jsonb": JSONBOID, "uuid": UUIDOID, "oid": OIDOID, "int4[]": 1007, "_int4": 1007,
	"widget": 99999, // a type pgtype does not know
}

// itemCols and itemRows are the fixed table "items".
var itemCols = []Column{
	{Name: "id", TypeOID: Int8OID}, {Name: "name", TypeOID: TextOID}, {Name: "price", TypeOID: NumericOID},
	{Name: "ok", TypeOID: BoolOID}, {Name: "small", TypeOID: Int2OID}, {Name: "qty", TypeOID: Int4OID},
	{Name: "ratio", TypeOID: Float4OID}, {Name: "score", TypeOID: Float8OID}, {Name: "born", TypeOID: DateOID},
	{Name: "seen", TypeOID: TimestampOID}, {Name: "at", TypeOID: TimestamptzOID}, {Name: "doc", TypeOID: JSONOID},
	{Name: "uid", TypeOID: UUIDOID}, {Name: "raw", TypeOID: ByteaOID}, {Name: "note", TypeOID: VarcharOID, TypeMod: 36},
}

var itemRows = [][]any{
	{int64(1), "apple", "1.50", true, int16(-2), int32(10), float32(0.5), 1e300,
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC),
		time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), `{"a": [1, 2]}`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		[]byte{0xde, 0xad, 0xbe, 0xef}, nil},
	{int64(2), "", "-0.001", false, int16(7), int32(-1), float32(-1.25), 1234567.0,
		time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 6, 1, 12, 0, 0, 0, time.FixedZone("", 2*3600)), `[]`, [16]byte{1, 2, 3},
		[]byte{}, "ünïcødé"},
}

var (
	reParam   = regexp.MustCompile(`^\$(\d+)$`)
	reLimit   = regexp.MustCompile(`^select \* from items(?: limit (\d+))?$`)
	reSeries  = regexp.MustCompile(`^select \* from generate_series\(1, ?(\d+)\)$`)
	reSleep   = regexp.MustCompile(`^select pg_sleep\(([\d.]+)\)$`)
	reSet     = regexp.MustCompile(`(?i)^set (?:session )?([a-z_.]+)(?: to | ?= ?)'?([^']*)'?$`)
	reSetTZ   = regexp.MustCompile(`^set time zone '?([^']*)'?$`)
	reShow    = regexp.MustCompile(`^show ([a-z_.]+)$`)
	reAsAlias = regexp.MustCompile(`(?i)^(.*?)\s+as\s+([a-z_][a-z0-9_]*)$`)
)

func (e *testEngine) Prepare(ctx context.Context, s *Session, sql string, paramOIDs []uint32) (Statement, error) {
	e.mu.Lock()
	e.seen = append(e.seen, sql)
	e.mu.Unlock()
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	lq := strings.ToLower(q)
	st := &testStmt{e: e, s: s}
	static := func(tag string, rows ...[]any) func(context.Context, []any) (Result, error) {
		return func(context.Context, []any) (Result, error) { return &StaticResult{CommandTag: tag, Rows: rows}, nil }
	}
	switch {
	case lq == "begin" || lq == "start transaction":
		st.run = func(context.Context, []any) (Result, error) {
			s.SetTxStatus(TxInBlock)
			return &StaticResult{CommandTag: "BEGIN"}, nil
		}
	case lq == "commit" || lq == "end" || lq == "rollback":
		st.run = nil
		tag := "COMMIT"
		if lq == "rollback" || s.TxStatus() == TxFailed {
			tag = "ROLLBACK"
		}
		e.open.Add(1)
		return &endStmt{testStmt: st, tag: tag}, nil
	case strings.HasPrefix(lq, "delete from "):
		st.run = static("DELETE 3")
	case strings.HasPrefix(lq, "insert into "):
		st.run = static("INSERT 0 1")
	case lq == "do notice":
		st.run = func(context.Context, []any) (Result, error) {
			s.Notice(&Error{Code: CodeWarning, Message: "this is a notice"})
			return &StaticResult{CommandTag: "DO"}, nil
		}
	case lq == "select 1/0":
		return nil, &Error{Code: "22012", Message: "division by zero"}
	case lq == "select boom()":
		return nil, errors.New("disk /secret/path exploded")
	case lq == "select * from missing":
		return nil, floe.E(floe.NotFound, "table", "table missing does not exist")
	case reLimit.MatchString(lq):
		m := reLimit.FindStringSubmatch(lq)
		rows := itemRows
		if m[1] != "" {
			n, _ := strconv.Atoi(m[1])
			rows = rows[:min(n, len(rows))]
		}
		st.cols = itemCols
		st.run = static("SELECT", rows...)
	case reSeries.MatchString(lq):
		n, _ := strconv.ParseInt(reSeries.FindStringSubmatch(lq)[1], 10, 64)
		st.cols = []Column{{Name: "generate_series", TypeOID: Int8OID}}
		st.run = func(ctx context.Context, _ []any) (Result, error) { return &seriesResult{ctx: ctx, n: n}, nil }
	case reSleep.MatchString(lq):
		secs, _ := strconv.ParseFloat(reSleep.FindStringSubmatch(lq)[1], 64)
		d := time.Duration(secs * float64(time.Second))
		if e.maxSleep > 0 {
			d = min(d, e.maxSleep)
		}
		st.cols = []Column{{Name: "pg_sleep", TypeOID: TextOID}}
		st.run = func(ctx context.Context, _ []any) (Result, error) {
			select {
			case <-time.After(d):
				return &StaticResult{CommandTag: "SELECT", Rows: [][]any{{""}}}, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("sleep interrupted: %w", ctx.Err())
			}
		}
	case reSetTZ.MatchString(lq):
		v := reSetTZ.FindStringSubmatch(q)[1]
		st.run = func(context.Context, []any) (Result, error) {
			return &StaticResult{CommandTag: "SET"}, s.SetSetting("TimeZone", v)
		}
	case reSet.MatchString(lq):
		m := reSet.FindStringSubmatch(lq)
		v := reSet.FindStringSubmatch(q)[2] // keep the value's case
		st.run = func(context.Context, []any) (Result, error) {
			return &StaticResult{CommandTag: "SET"}, s.SetSetting(m[1], v)
		}
	case reShow.MatchString(lq):
		name := reShow.FindStringSubmatch(lq)[1]
		st.cols = []Column{{Name: name, TypeOID: TextOID}}
		st.run = func(context.Context, []any) (Result, error) {
			v, ok := s.Setting(name)
			if !ok {
				return nil, &Error{Code: CodeUndefinedObject, Message: fmt.Sprintf("unrecognized configuration parameter %q", name)}
			}
			return &StaticResult{CommandTag: "SHOW", Rows: [][]any{{v}}}, nil
		}
	case strings.HasPrefix(lq, "select "):
		if err := st.parseSelect(q[len("select "):], paramOIDs); err != nil {
			return nil, err
		}
	default:
		return nil, &Error{Code: CodeSyntaxError, Message: fmt.Sprintf("syntax error at or near %q", strings.Fields(q + " x")[0]), Position: 1}
	}
	e.open.Add(1)
	return st, nil
}

// endStmt is COMMIT/ROLLBACK, allowed in a failed transaction.
type endStmt struct {
	*testStmt
	tag string
}

func (st *endStmt) Execute(context.Context, []any) (Result, error) {
	st.s.SetTxStatus(TxIdle)
	return &StaticResult{CommandTag: st.tag}, nil
}

// parseSelect handles "select expr, ...".
func (st *testStmt) parseSelect(list string, paramOIDs []uint32) error {
	type item struct {
		param int // 1-based, 0 for a literal
		lit   string
		oid   uint32
		cast  bool
	}
	var items []item
	for _, expr := range splitTop(list) {
		expr = strings.TrimSpace(expr)
		name := "?column?"
		if m := reAsAlias.FindStringSubmatch(expr); m != nil {
			expr, name = m[1], m[2]
		}
		var it item
		if i := strings.LastIndex(expr, "::"); i >= 0 && !strings.Contains(expr[i:], "'") {
			oid, ok := typeNames[strings.ToLower(strings.TrimSpace(expr[i+2:]))]
			if !ok {
				return &Error{Code: CodeUndefinedObject, Message: fmt.Sprintf("type %q does not exist", expr[i+2:])}
			}
			it.oid, it.cast = oid, true
			expr = strings.TrimSpace(expr[:i])
		}
		expr = strings.TrimSuffix(strings.TrimPrefix(expr, "("), ")")
		if m := reParam.FindStringSubmatch(expr); m != nil {
			it.param, _ = strconv.Atoi(m[1])
		} else {
			it.lit = expr
			if !it.cast {
				switch {
				case strings.HasPrefix(expr, "'"):
					it.oid = TextOID
				case strings.EqualFold(expr, "true") || strings.EqualFold(expr, "false"):
					it.oid = BoolOID
				case strings.EqualFold(expr, "null"):
					it.oid = TextOID
				case strings.ContainsAny(expr, ".eE"):
					if _, err := strconv.ParseFloat(expr, 64); err != nil {
						return &Error{Code: CodeSyntaxError, Message: fmt.Sprintf("syntax error at or near %q", truncate(expr, 20))}
					}
					it.oid = NumericOID
				default:
					if _, err := strconv.ParseInt(expr, 10, 32); err == nil {
						it.oid = Int4OID
					} else if _, err := strconv.ParseInt(expr, 10, 64); err == nil {
						it.oid = Int8OID
					} else {
						return &Error{Code: CodeSyntaxError, Message: fmt.Sprintf("syntax error at or near %q", expr)}
					}
				}
			}
		}
		items = append(items, it)
		st.cols = append(st.cols, Column{Name: name, TypeOID: it.oid})
	}
	// Parameter types: the client's, else the cast's, else text.
	for _, it := range items {
		for it.param > len(st.params) {
			st.params = append(st.params, 0)
		}
	}
	for i := range st.params {
		if i < len(paramOIDs) && paramOIDs[i] != 0 {
			st.params[i] = paramOIDs[i]
		}
	}
	for _, it := range items {
		if it.param > 0 && st.params[it.param-1] == 0 {
			st.params[it.param-1] = it.oid
		}
	}
	for i, p := range st.params {
		if p == 0 {
			st.params[i] = TextOID
		}
	}
	for i, it := range items {
		if it.param > 0 && !items[i].cast {
			st.cols[i].TypeOID = st.params[it.param-1]
		}
	}
	cdc := newCodec()
	st.run = func(_ context.Context, args []any) (Result, error) {
		row := make([]any, len(items))
		for i, it := range items {
			var v any
			var raw string
			isText := false
			if it.param > 0 {
				v = args[it.param-1]
				raw, isText = v.(string)
			} else if !strings.EqualFold(it.lit, "null") {
				raw, isText = it.lit, true
				if strings.HasPrefix(raw, "'") {
					raw = strings.ReplaceAll(strings.Trim(raw, "'"), "''", "'")
				}
				v = raw
			}
			if v != nil && isText && st.cols[i].TypeOID != TextOID {
				var err error
				if v, err = cdc.decodeText(st.cols[i].TypeOID, []byte(raw), st.s.Location()); err != nil {
					return nil, err
				}
			}
			row[i] = v
		}
		return &StaticResult{CommandTag: "SELECT", Rows: [][]any{row}}, nil
	}
	return nil
}

// splitTop splits at commas outside quotes and parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			inQuote = !inQuote
		case inQuote:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// seriesResult produces 1..n lazily and honours cancellation.
type seriesResult struct {
	ctx  context.Context
	n, i int64
}

func (r *seriesResult) Next() ([]any, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	if r.i >= r.n {
		return nil, io.EOF
	}
	r.i++
	return []any{r.i}, nil
}
func (r *seriesResult) Tag() string  { return "SELECT" }
func (r *seriesResult) Close() error { return nil }

// testAuth is a test double Authenticator: SCRAM users with fixed
// passwords and tokens mapped to principals.
type testAuth struct {
	scram  map[string]*ScramVerifier
	tokens map[string]string // token → principal
	// revoked is Identity.Revoked of token logins, if set.
	revoked func() error
}

func newTestAuth(t testing.TB) *testAuth {
	t.Helper()
	v, err := NewScramVerifier("bob-secret")
	if err != nil {
		t.Fatal(err)
	}
	return &testAuth{
		scram:  map[string]*ScramVerifier{"bob": v},
		tokens: map[string]string{"alice-token": "alice", "refused-token": "refused", "mallory-token": "mallory"},
	}
}

func (a *testAuth) SCRAMVerifier(_ context.Context, user string) (*ScramVerifier, Identity, bool, error) {
	if user == "lookupfails" {
		return nil, Identity{}, false, errors.New("store down")
	}
	v, ok := a.scram[user]
	return v, Identity{Principal: user, Payload: "scram:" + user}, ok, nil
}

func (a *testAuth) Token(_ context.Context, user, token string) (Identity, error) {
	if token == "store-down" {
		return Identity{}, errors.New("token store down")
	}
	p, ok := a.tokens[token]
	if !ok {
		return Identity{}, ErrBadCredentials
	}
	return Identity{Principal: p, Payload: "token:" + p, Revoked: a.revoked}, nil
}

var (
	_ Engine        = (*testEngine)(nil)
	_ SessionHooks  = (*testEngine)(nil)
	_ Authenticator = (*testAuth)(nil)
)
