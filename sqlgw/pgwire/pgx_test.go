package pgwire

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
)

var execModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
	pgx.QueryExecModeSimpleProtocol,
}

func withMode(m pgx.QueryExecMode) func(*pgx.ConnConfig) {
	return func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = m }
}

// TestPgxParamRoundTrip sends every supported type as a parameter and reads
// it back, in each of pgx's query modes (binary and text parameters and
// results, named and unnamed statements, the simple protocol).
func TestPgxParamRoundTrip(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	ts0 := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	u := uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
	cases := []struct {
		name string
		sql  string
		arg  any
		dst  func() any
		want func(t *testing.T, got any)
	}{
		{"bool", "select $1::bool", true, func() any { return new(bool) }, eq(true)},
		{"int2", "select $1::int2", int16(-32768), func() any { return new(int16) }, eq(int16(-32768))},
		{"int4", "select $1::int4", int32(math.MaxInt32), func() any { return new(int32) }, eq(int32(math.MaxInt32))},
		{"int8", "select $1::int8", int64(math.MinInt64), func() any { return new(int64) }, eq(int64(math.MinInt64))},
		{"float4", "select $1::float4", float32(1.25), func() any { return new(float32) }, eq(float32(1.25))},
		{"float8", "select $1::float8", 1e-300, func() any { return new(float64) }, eq(1e-300)},
		{"text", "select $1::text", "it's ünïcødé; -- not a comment", func() any { return new(string) }, eq("it's ünïcødé; -- not a comment")},
		{"empty text", "select $1::text", "", func() any { return new(string) }, eq("")},
		{"varchar", "select $1::varchar", "v", func() any { return new(string) }, eq("v")},
		{"bytea", "select $1::bytea", []byte{0, 1, 0xfe, 0xff}, func() any { return new([]byte) }, eq([]byte{0, 1, 0xfe, 0xff})},
		{"date", "select $1::date", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), func() any { return new(time.Time) },
			eqTime(time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC))},
		{"timestamp", "select $1::timestamp", ts0, func() any { return new(time.Time) }, eqTime(ts0)},
		{"timestamptz", "select $1::timestamptz", ts0.In(time.FixedZone("x", -5*3600)), func() any { return new(time.Time) }, eqTime(ts0)},
		{"uuid", "select $1::uuid", u, func() any { return new(uuid.UUID) }, eq(u)},
		// A string, as pgx cannot send a map for a parameter of unknown type (exec, simple protocol).
		{"json", "select $1::json", `{"a": 1}`, func() any { return new(map[string]any) }, eq(map[string]any{"a": 1.0})},
		{"jsonb", "select $1::jsonb", `{"b": ["x"]}`, func() any { return new(map[string]any) }, eq(map[string]any{"b": []any{"x"}})},
		{"numeric", "select $1::numeric", pgtype.Numeric{Int: big.NewInt(12345), Exp: -2, Valid: true}, func() any { return new(pgtype.Numeric) },
			func(t *testing.T, got any) {
				f, _ := got.(*pgtype.Numeric).Float64Value()
				if f.Float64 != 123.45 {
					t.Errorf("numeric = %v, want 123.45", f.Float64)
				}
			}},
		{"null", "select $1::int8", nil, func() any { return new(*int64) }, eq((*int64)(nil))},
	}
	for _, mode := range execModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connect(t, "alice", "alice-token", withMode(mode))
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					dst := tc.dst()
					if err := conn.QueryRow(ctx, tc.sql, tc.arg).Scan(dst); err != nil {
						t.Fatalf("%s: %v", tc.sql, err)
					}
					tc.want(t, dst)
				})
			}
		})
	}
}

// derefAny returns what the pointer p points to.
func derefAny(p any) any { return reflect.ValueOf(p).Elem().Interface() }

func eq(want any) func(*testing.T, any) {
	return func(t *testing.T, got any) {
		t.Helper()
		g := derefAny(got)
		if reflect.DeepEqual(g, want) {
			return
		}
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("got %#v, want %#v", g, want)
		}
	}
}

func eqTime(want time.Time) func(*testing.T, any) {
	return func(t *testing.T, got any) {
		t.Helper()
		g := *(got.(*time.Time))
		if !g.Equal(want) {
			t.Errorf("got %v, want %v", g, want)
		}
	}
}

// TestPgxResults reads the items table, with every column type, in each
// mode and checks the values.
func TestPgxResults(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for _, mode := range execModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connect(t, "alice", "alice-token", withMode(mode))
			rows, err := conn.Query(ctx, "select * from items")
			if err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			for rows.Next() {
				var (
					id, small, qty int64
					name           string
					price          pgtype.Numeric
					ok             bool
					ratio          float32
					score          float64
					born, seen, at time.Time
					doc            any
					uid            uuid.UUID
					raw            []byte
					note           *string
				)
				if err := rows.Scan(&id, &name, &price, &ok, &small, &qty, &ratio, &score, &born, &seen, &at, &doc, &uid, &raw, &note); err != nil {
					t.Fatal(err)
				}
				p, _ := price.Float64Value()
				got = append(got, map[string]any{"id": id, "name": name, "price": p.Float64, "ok": ok, "small": small,
					"qty": qty, "ratio": ratio, "score": score, "born": born.Format(time.DateOnly),
					"seen": seen.Format("2006-01-02 15:04:05.999999"), "at": at.UTC().Format(time.RFC3339), "doc": doc,
					"uid": uid.String(), "raw": raw, "note": note})
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 2" {
				t.Errorf("tag = %q, want SELECT 2", tag)
			}
			note := "ünïcødé"
			want := []map[string]any{
				{"id": int64(1), "name": "apple", "price": 1.5, "ok": true, "small": int64(-2), "qty": int64(10),
					"ratio": float32(0.5), "score": 1e300, "born": "2024-02-29", "seen": "2024-01-02 03:04:05.123456",
					"at": "2024-01-02T03:04:05Z", "doc": map[string]any{"a": []any{1.0, 2.0}},
					"uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "raw": []byte{0xde, 0xad, 0xbe, 0xef}, "note": (*string)(nil)},
				{"id": int64(2), "name": "", "price": -0.001, "ok": false, "small": int64(7), "qty": int64(-1),
					"ratio": float32(-1.25), "score": 1234567.0, "born": "1999-12-31", "seen": "1970-01-01 00:00:00",
					"at": "2000-06-01T10:00:00Z", "doc": []any{},
					"uid": "01020300-0000-0000-0000-000000000000", "raw": []byte{}, "note": &note},
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("rows:\n got %s\nwant %s", gj, wj)
			}
		})
	}
}

// TestPgxErrors checks SQLSTATEs of engine errors, hidden internal errors,
// and that the connection stays usable after each.
func TestPgxErrors(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for _, mode := range execModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connect(t, "alice", "alice-token", withMode(mode))
			for _, tc := range []struct{ sql, code, msg string }{
				{"select 1/0", "22012", "division by zero"},
				{"select boom()", "XX000", "internal error"},
				{"select * from missing", "42P01", "table missing does not exist"},
				{"frobnicate", "42601", `syntax error at or near "frobnicate"`},
			} {
				_, err := conn.Exec(ctx, tc.sql)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) {
					t.Fatalf("%s: %v, want a server error", tc.sql, err)
				}
				if pe.Code != tc.code || pe.Message != tc.msg {
					t.Errorf("%s: got %s %q, want %s %q", tc.sql, pe.Code, pe.Message, tc.code, tc.msg)
				}
				if strings.Contains(pe.Error(), "secret") {
					t.Errorf("internal detail leaked: %v", pe)
				}
				var n int
				if err := conn.QueryRow(ctx, "select 7").Scan(&n); err != nil || n != 7 {
					t.Fatalf("after error: %v %d", err, n)
				}
			}
		})
	}
}

// TestPgxPreparedAndBatch uses named prepared statements, a batch
// (pipelined Parse/Bind/Execute) and a large streamed result.
func TestPgxPreparedAndBatch(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	conn := ts.connect(t, "alice", "alice-token", nil)
	sd, err := conn.Prepare(ctx, "twice", "select $1::int8 as a, $2::text as b")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != Int8OID || sd.ParamOIDs[1] != TextOID {
		t.Errorf("param oids = %v", sd.ParamOIDs)
	}
	if len(sd.Fields) != 2 || sd.Fields[0].Name != "a" || sd.Fields[1].DataTypeOID != TextOID {
		t.Errorf("fields = %+v", sd.Fields)
	}
	for i := range 3 {
		var a int64
		var b string
		if err := conn.QueryRow(ctx, "twice", int64(i), "x").Scan(&a, &b); err != nil || a != int64(i) || b != "x" {
			t.Fatalf("run %d: %v %d %q", i, err, a, b)
		}
	}
	if err := conn.Deallocate(ctx, "twice"); err != nil {
		t.Fatal(err)
	}

	b := &pgx.Batch{}
	b.Queue("select $1::int4", int32(1))
	b.Queue("delete from t")
	b.Queue("select $1::text", "three")
	br := conn.SendBatch(ctx, b)
	var one int32
	if err := br.QueryRow().Scan(&one); err != nil || one != 1 {
		t.Fatalf("batch 1: %v %d", err, one)
	}
	tag, err := br.Exec()
	if err != nil || tag.String() != "DELETE 3" || tag.RowsAffected() != 3 {
		t.Fatalf("batch 2: %v %q", err, tag)
	}
	var three string
	if err := br.QueryRow().Scan(&three); err != nil || three != "three" {
		t.Fatalf("batch 3: %v %q", err, three)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}

	rows, err := conn.Query(ctx, "select * from generate_series(1, 100000)")
	if err != nil {
		t.Fatal(err)
	}
	var sum, count int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		sum += v
		count++
	}
	if err := rows.Err(); err != nil || count != 100000 || sum != 100000*100001/2 {
		t.Fatalf("series: %v count=%d sum=%d", err, count, sum)
	}
}

// TestPgxCancel cancels a long query through pgx's context handling (a
// CancelRequest on a second connection) and through PgConn.CancelRequest,
// with protocol 3.0 (4-byte key) and 3.2 (32-byte key).
func TestPgxCancel(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []string{"3.0", "3.2"} {
		t.Run(proto, func(t *testing.T) {
			conn := ts.connect(t, "alice", "alice-token", func(c *pgx.ConnConfig) {
				c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
					return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 10 * time.Second}
				}
			}, "max_protocol_version="+proto, "min_protocol_version="+proto)
			wantKey := map[string]int{"3.0": 4, "3.2": 32}[proto]
			if n := len(conn.PgConn().SecretKey()); n != wantKey {
				t.Errorf("secret key is %d bytes, want %d", n, wantKey)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := conn.Exec(ctx, "select pg_sleep(30)")
			if code := pgCode(err); code != CodeQueryCanceled {
				t.Fatalf("err = %v (code %q), want 57014", err, code)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancel took %v", d)
			}
			var n int
			if err := conn.QueryRow(context.Background(), "select 5").Scan(&n); err != nil || n != 5 {
				t.Fatalf("after cancel: %v %d", err, n)
			}

			// Explicit cancel request from another goroutine.
			go func() {
				time.Sleep(200 * time.Millisecond)
				conn.PgConn().CancelRequest(context.Background())
			}()
			_, err = conn.Exec(context.Background(), "select pg_sleep(30)")
			if code := pgCode(err); code != CodeQueryCanceled {
				t.Fatalf("explicit cancel: err = %v, want 57014", err)
			}
		})
	}
}

// TestCancelWrongKey sends a cancel request with a wrong secret: the query
// must run to completion.
func TestCancelWrongKey(t *testing.T) {
	ts := startServer(t)
	conn := ts.connect(t, "alice", "alice-token", nil)
	go func() {
		time.Sleep(100 * time.Millisecond)
		r := ts.dialRaw(t)
		key := append([]byte{}, conn.PgConn().SecretKey()...)
		key[0] ^= 0xff
		r.writeRaw(cancelPacket(conn.PgConn().PID(), key))
		r.closed()
		r2 := ts.dialRaw(t)
		r2.writeRaw(cancelPacket(conn.PgConn().PID()^1, conn.PgConn().SecretKey()))
		r2.closed()
	}()
	var s string
	if err := conn.QueryRow(context.Background(), "select pg_sleep(0.6)").Scan(&s); err != nil {
		t.Fatalf("query with a wrong cancel key: %v", err)
	}
}

func cancelPacket(pid uint32, key []byte) []byte {
	b := []byte{0, 0, 0, 0, 0x04, 0xd2, 0x16, 0x2e}
	b = append(b, byte(pid>>24), byte(pid>>16), byte(pid>>8), byte(pid))
	b = append(b, key...)
	n := len(b)
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

// TestPgxLogin covers SCRAM and token logins and their failures.
func TestPgxLogin(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()

	conn := ts.connect(t, "bob", "bob-secret", nil)
	var s string
	if err := conn.QueryRow(ctx, "show session_authorization").Scan(&s); err != nil || s != "bob" {
		t.Fatalf("session_authorization: %v %q", err, s)
	}
	if id := ts.engine.lastIdentity(); !reflect.DeepEqual(id, Identity{Principal: "bob", Method: AuthSCRAM, Payload: "scram:bob"}) {
		t.Errorf("engine saw identity %+v", id)
	}
	ts.connect(t, "alice", "alice-token", nil)
	if id := ts.engine.lastIdentity(); !reflect.DeepEqual(id, Identity{Principal: "alice", Method: AuthToken, Payload: "token:alice"}) {
		t.Errorf("engine saw identity %+v", id)
	}

	for _, tc := range []struct{ user, password, code string }{
		{"bob", "wrong", CodeInvalidPassword},
		{"bob", "alice-token", CodeInvalidPassword}, // SCRAM users log in with their password
		{"alice", "wrong-token", CodeInvalidPassword},
		{"alice", "mallory-token", CodeInvalidPassword}, // token of another principal
		{"alice", "store-down", CodeInternalError},
		{"lookupfails", "x", CodeInternalError},
		{"refused", "refused-token", CodeInsufficientPrivilege}, // engine refuses the session
	} {
		pe := ts.connectErr(t, tc.user, tc.password)
		if pe.Code != tc.code || pe.Severity != "FATAL" {
			t.Errorf("%s/%s: got %s %s %q, want FATAL %s", tc.user, tc.password, pe.Severity, pe.Code, pe.Message, tc.code)
		}
		if strings.Contains(pe.Message, tc.password) {
			t.Errorf("error message contains the password: %q", pe.Message)
		}
	}
	if err := ts.connectErr(t, "alice", "wrong-token"); !strings.Contains(err.Message, `password authentication failed for user "alice"`) {
		t.Errorf("message = %q", err.Message)
	}
}

// TestPgxTLS runs token and SCRAM logins over TLS (SCRAM with channel
// binding required), a server without TLS, and RequireTLS.
func TestPgxTLS(t *testing.T) {
	cert, caPath := testCert(t)
	ts := startServer(t, func(o *Options) {
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		o.RequireTLS = true
	})
	ctx := context.Background()
	verify := []string{"sslmode=verify-full", "sslrootcert=" + caPath}

	for _, tc := range []struct {
		name, user, password string
		extra                []string
	}{
		{"token", "alice", "alice-token", nil},
		{"scram-plus", "bob", "bob-secret", []string{"channel_binding=require"}},
		{"scram-no-binding", "bob", "bob-secret", []string{"channel_binding=disable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := ts.connect(t, tc.user, tc.password, nil, append(verify, tc.extra...)...)
			if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
				t.Fatalf("connection is not TLS: %T", conn.PgConn().Conn())
			}
			var n int
			if err := conn.QueryRow(ctx, "select 3").Scan(&n); err != nil || n != 3 {
				t.Fatalf("query: %v %d", err, n)
			}
		})
	}
	if pe := ts.connectErr(t, "bob", "wrong", verify...); pe.Code != CodeInvalidPassword {
		t.Errorf("wrong SCRAM password over TLS: %s", pe.Code)
	}
	if pe := ts.connectErr(t, "alice", "alice-token", "sslmode=disable"); pe.Code != CodeInvalidAuthorization {
		t.Errorf("plaintext with RequireTLS: %s %q", pe.Code, pe.Message)
	}

	// A server without TLS answers 'N': sslmode=prefer falls back,
	// sslmode=require fails.
	plain := startServer(t)
	conn := plain.connect(t, "alice", "alice-token", nil, "sslmode=prefer")
	if _, ok := conn.PgConn().Conn().(*tls.Conn); ok {
		t.Error("got TLS from a server without TLS")
	}
	if _, err := pgx.Connect(ctx, plain.dsn("alice", "alice-token", "sslmode=require")); err == nil ||
		!strings.Contains(err.Error(), "refused TLS") {
		t.Errorf("sslmode=require against a plaintext server: %v", err)
	}
}

// TestParameterStatus checks the parameters reported at startup and after
// SET, and that timestamptz text follows the session TimeZone.
func TestParameterStatus(t *testing.T) {
	ts := startServer(t, func(o *Options) { o.ServerVersion = "16.4 (Floe test)" })
	ctx := context.Background()
	conn := ts.connect(t, "alice", "alice-token", withMode(pgx.QueryExecModeSimpleProtocol), "application_name=tester")
	pc := conn.PgConn()
	for name, want := range map[string]string{
		"server_version": "16.4 (Floe test)", "server_encoding": "UTF8", "client_encoding": "UTF8",
		"DateStyle": "ISO, MDY", "TimeZone": "UTC", "integer_datetimes": "on",
		"standard_conforming_strings": "on", "application_name": "tester", "is_superuser": "off",
		"session_authorization": "alice", "IntervalStyle": "postgres",
	} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := conn.Exec(ctx, "set TimeZone = 'Asia/Kolkata'"); err != nil {
		t.Fatal(err)
	}
	if got := pc.ParameterStatus("TimeZone"); got != "Asia/Kolkata" {
		t.Errorf("TimeZone after SET = %q", got)
	}
	if _, err := conn.Exec(ctx, "set application_name = 'other'"); err != nil {
		t.Fatal(err)
	}
	if got := pc.ParameterStatus("application_name"); got != "other" {
		t.Errorf("application_name after SET = %q", got)
	}
	// Text results of timestamptz are in the session zone.
	rr := pc.Exec(ctx, "select * from items limit 1")
	res, err := rr.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res[0].Rows[0][10]); got != "2024-01-02 08:34:05+05:30" {
		t.Errorf("timestamptz text = %q", got)
	}
	for _, bad := range []string{"set TimeZone = 'Mars/Olympus'", "set client_encoding = 'LATIN1'", "set DateStyle = 'German'",
		"set server_version = '9'", "set standard_conforming_strings = off"} {
		if _, err := conn.Exec(ctx, bad); pgCode(err) == "" {
			t.Errorf("%s: err = %v, want a server error", bad, err)
		}
	}
	if got := pc.ParameterStatus("TimeZone"); got != "Asia/Kolkata" {
		t.Errorf("TimeZone after failed SET = %q", got)
	}
}

// TestTransactionStatus follows the ReadyForQuery status through a block,
// an error in it, and rollback.
func TestTransactionStatus(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	conn := ts.connect(t, "alice", "alice-token", nil)
	pc := conn.PgConn()
	steps := []struct {
		sql  string
		fail bool
		want byte
	}{
		{"begin", false, 'T'},
		{"select 1", false, 'T'},
		{"select 1/0", true, 'E'},
		{"select 1", true, 'E'},
		{"rollback", false, 'I'},
		{"select 1", false, 'I'},
	}
	for _, s := range steps {
		_, err := conn.Exec(ctx, s.sql)
		if (err != nil) != s.fail {
			t.Fatalf("%s: err = %v", s.sql, err)
		}
		if got := pc.TxStatus(); got != s.want {
			t.Errorf("after %s: status %c, want %c", s.sql, got, s.want)
		}
	}
	if _, err := conn.Exec(ctx, "begin"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "select 1")
	if err != nil {
		t.Fatal(err)
	}
}

// TestStatementsReleased checks that every prepared statement is closed
// and the session ended once connections go away.
func TestStatementsReleased(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for _, mode := range execModes {
		conn := ts.connect(t, "alice", "alice-token", withMode(mode))
		for i := range 5 {
			var n int64
			if err := conn.QueryRow(ctx, "select $1::int8", int64(i)).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		rows, _ := conn.Query(ctx, "select * from generate_series(1, 1000)")
		rows.Next()
		rows.Close()
		conn.Close(ctx)
	}
	deadline := time.Now().Add(5 * time.Second)
	for (ts.engine.open.Load() != 0 || ts.engine.ended.Load() != ts.engine.started.Load()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := ts.engine.open.Load(); n != 0 {
		t.Errorf("%d statements left open", n)
	}
	if s, e := ts.engine.started.Load(), ts.engine.ended.Load(); s != e || s != int64(len(execModes)) {
		t.Errorf("sessions started %d, ended %d", s, e)
	}
}
