package pgwire

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestSimpleQueryProtocol drives Query messages: several statements, empty
// queries, errors stopping the rest, notices and SET reporting.
func TestSimpleQueryProtocol(t *testing.T) {
	ts := startServer(t)
	r := ts.login(t)
	cases := []struct {
		query string
		want  []string
	}{
		{"select 1; select 'a;b' as x;", []string{
			"RowDescription ?column?:23:0", `DataRow "1"`, "CommandComplete SELECT 1",
			"RowDescription x:25:0", `DataRow "a;b"`, "CommandComplete SELECT 1", "ReadyForQuery I"}},
		{"", []string{"EmptyQueryResponse", "ReadyForQuery I"}},
		{" ; -- nothing\n ; /* at all */", []string{"EmptyQueryResponse", "ReadyForQuery I"}},
		{"select 1; select 1/0; select 3", []string{
			"RowDescription ?column?:23:0", `DataRow "1"`, "CommandComplete SELECT 1",
			"Error ERROR 22012 division by zero", "ReadyForQuery I"}},
		{"delete from t; insert into t values (1)", []string{"CommandComplete DELETE 3", "CommandComplete INSERT 0 1", "ReadyForQuery I"}},
		{"do notice", []string{"Notice NOTICE 01000 this is a notice", "CommandComplete DO", "ReadyForQuery I"}},
		{"set application_name = 'raw'", []string{"ParameterStatus application_name=raw", "CommandComplete SET", "ReadyForQuery I"}},
		{"set search_path = 'x'", []string{"CommandComplete SET", "ReadyForQuery I"}}, // not a reported setting
		{"select null::int8, ''::text", []string{"RowDescription ?column?:20:0,?column?:25:0", `DataRow NULL,""`, "CommandComplete SELECT 1", "ReadyForQuery I"}},
		{"select $1::int8", []string{"Error ERROR 42P02 there is no parameter $1", "ReadyForQuery I"}},
		{"begin; select 1/0", []string{"CommandComplete BEGIN", "Error ERROR 22012 division by zero", "ReadyForQuery E"}},
		{"select 1", []string{"Error ERROR 25P02 current transaction is aborted, commands ignored until end of transaction block", "ReadyForQuery E"}},
		{"rollback", []string{"CommandComplete ROLLBACK", "ReadyForQuery I"}},
	}
	for _, tc := range cases {
		r.send(&pgproto3.Query{String: tc.query})
		if got := r.untilReady(); !slices.Equal(got, tc.want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.query, got, tc.want)
		}
	}
}

// TestExtendedProtocol drives Parse/Bind/Describe/Execute/Close/Sync with
// named and unnamed statements and portals, row limits, formats and errors.
func TestExtendedProtocol(t *testing.T) {
	ts := startServer(t)
	r := ts.login(t)
	steps := []struct {
		name string
		msgs []pgproto3.FrontendMessage
		want []string
	}{
		{"describe statement", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Name: "s1", Query: "select $1::int8 as n, $2 as t"},
			&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
			&pgproto3.Sync{},
		}, []string{"ParseComplete", "ParameterDescription 20,25", "RowDescription n:20:0,t:25:0", "ReadyForQuery I"}},
		{"bind binary param and mixed result formats", []pgproto3.FrontendMessage{
			&pgproto3.Bind{DestinationPortal: "p1", PreparedStatement: "s1", ParameterFormatCodes: []int16{1, 0},
				Parameters: [][]byte{{0, 0, 0, 0, 0, 0, 1, 0}, []byte("hi")}, ResultFormatCodes: []int16{1, 0}},
			&pgproto3.Describe{ObjectType: 'P', Name: "p1"},
			&pgproto3.Execute{Portal: "p1"},
			&pgproto3.Sync{},
		}, []string{"BindComplete", "RowDescription n:20:1,t:25:0", `DataRow "\x00\x00\x00\x00\x00\x00\x01\x00","hi"`, "CommandComplete SELECT 1", "ReadyForQuery I"}},
		{"row limit and PortalSuspended", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "select * from generate_series(1, 5)"},
			&pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Sync{},
		}, []string{"ParseComplete", "BindComplete", `DataRow "1"`, `DataRow "2"`, "PortalSuspended",
			`DataRow "3"`, `DataRow "4"`, "PortalSuspended", `DataRow "5"`, "CommandComplete SELECT 1", "ReadyForQuery I"}},
		{"portal gone after sync", []pgproto3.FrontendMessage{
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		}, []string{`Error ERROR 34000 portal "" does not exist`, "ReadyForQuery I"}},
		{"error skips until sync", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "frobnicate"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Parse{Name: "never", Query: "select 1"},
			&pgproto3.Sync{},
			&pgproto3.Describe{ObjectType: 'S', Name: "never"},
			&pgproto3.Sync{},
		}, []string{`Error ERROR 42601 syntax error at or near "frobnicate"`, "ReadyForQuery I",
			`Error ERROR 26000 prepared statement "never" does not exist`, "ReadyForQuery I"}},
		{"duplicate statement and multiple commands", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Name: "s1", Query: "select 2"},
			&pgproto3.Sync{},
			&pgproto3.Parse{Query: "select 1; select 2"},
			&pgproto3.Sync{},
		}, []string{`Error ERROR 42P05 prepared statement "s1" already exists`, "ReadyForQuery I",
			"Error ERROR 42601 cannot insert multiple commands into a prepared statement", "ReadyForQuery I"}},
		{"wrong parameter count and bad values", []pgproto3.FrontendMessage{
			&pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("1")}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("x"), nil}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{1, 2}, nil}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{nil, nil}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{7}, Parameters: [][]byte{nil, nil}},
			&pgproto3.Sync{},
		}, []string{
			`Error ERROR 08P01 bind message supplies 1 parameters, but prepared statement "s1" requires 2`, "ReadyForQuery I",
			`Error ERROR 22P02 invalid input syntax for type bigint: "x"`, "ReadyForQuery I",
			"Error ERROR 22P03 incorrect binary data format for type bigint", "ReadyForQuery I",
			"Error ERROR 08P01 bind message has 3 parameter formats but 2 parameters", "ReadyForQuery I",
			"Error ERROR 08P01 unsupported format code: 7", "ReadyForQuery I",
		}},
		{"nulls, named portal kept across executes, close", []pgproto3.FrontendMessage{
			&pgproto3.Bind{DestinationPortal: "p2", PreparedStatement: "s1", Parameters: [][]byte{nil, nil}},
			&pgproto3.Execute{Portal: "p2"},
			&pgproto3.Close{ObjectType: 'P', Name: "p2"},
			&pgproto3.Close{ObjectType: 'S', Name: "s1"},
			&pgproto3.Close{ObjectType: 'S', Name: "no-such"},
			&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
			&pgproto3.Sync{},
		}, []string{"BindComplete", "DataRow NULL,NULL", "CommandComplete SELECT 1", "CloseComplete", "CloseComplete", "CloseComplete",
			`Error ERROR 26000 prepared statement "s1" does not exist`, "ReadyForQuery I"}},
		{"statement without rows and empty statement", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "delete from t"},
			&pgproto3.Describe{ObjectType: 'S'},
			&pgproto3.Bind{},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Parse{Query: "  "},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		}, []string{"ParseComplete", "ParameterDescription ", "NoData", "BindComplete", "NoData", "CommandComplete DELETE 3",
			"ParseComplete", "BindComplete", "EmptyQueryResponse", "ReadyForQuery I"}},
		{"result format count and a type without binary support", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "select 1::int4"},
			&pgproto3.Bind{ResultFormatCodes: []int16{1, 1}},
			&pgproto3.Sync{},
			&pgproto3.Parse{Query: "select 'w'::widget"},
			&pgproto3.Bind{ResultFormatCodes: []int16{1}},
			&pgproto3.Sync{},
			&pgproto3.Parse{Query: "select 'w'::widget"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		}, []string{"ParseComplete", "Error ERROR 08P01 bind message has 2 result formats but 1 results", "ReadyForQuery I",
			"ParseComplete", `Error ERROR 0A000 binary output is not supported for column "?column?" of type oid 99999`, "ReadyForQuery I",
			"ParseComplete", "BindComplete", `DataRow "w"`, "CommandComplete SELECT 1", "ReadyForQuery I"}},
		{"execute error drops the portal", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "begin"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
			&pgproto3.Parse{Name: "in-tx", Query: "select 1"},
			&pgproto3.Parse{Query: "select 1/0"},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "in-tx"},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
			&pgproto3.Query{String: "rollback"},
		}, []string{"ParseComplete", "BindComplete", "CommandComplete BEGIN", "ReadyForQuery T",
			"ParseComplete", "Error ERROR 22012 division by zero", "ReadyForQuery E",
			"BindComplete", "Error ERROR 25P02 current transaction is aborted, commands ignored until end of transaction block", "ReadyForQuery E",
			"CommandComplete ROLLBACK", "ReadyForQuery I"}},
		{"flush sends without ReadyForQuery; function call refused; copy data ignored", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Name: "f", Query: "select 1"},
			&pgproto3.Flush{},
		}, []string{"ParseComplete"}},
		{"function call", []pgproto3.FrontendMessage{
			&pgproto3.CopyData{Data: []byte("stray")},
			&pgproto3.FunctionCall{Function: 1},
		}, []string{"Error ERROR 0A000 the function call protocol is not supported", "ReadyForQuery I"}},
	}
	for _, s := range steps {
		r.send(s.msgs...)
		var got []string
		for len(got) < len(s.want) {
			got = append(got, r.next())
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("%s:\n got %q\nwant %q", s.name, got, s.want)
		}
	}
	r.send(&pgproto3.Terminate{})
	if !r.closed() {
		t.Error("connection open after Terminate")
	}
}

// TestStartupNegotiation covers SSL/GSS refusal, protocol versions,
// unknown _pq_ options, bad parameters and startup packets.
func TestStartupNegotiation(t *testing.T) {
	ts := startServer(t)
	t.Run("ssl and gss refused, then login", func(t *testing.T) {
		r := ts.dialRaw(t)
		r.writeRaw([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30}) // GSSENCRequest
		r.writeRaw([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}) // SSLRequest
		b := make([]byte, 2)
		if _, err := r.nc.Read(b[:1]); err != nil || b[0] != 'N' {
			t.Fatalf("GSS answer %q %v", b[:1], err)
		}
		if _, err := r.nc.Read(b[1:]); err != nil || b[1] != 'N' {
			t.Fatalf("SSL answer %q %v", b[1:], err)
		}
		r.writeRaw(startupPacket(3<<16|5, "user", "alice", "_pq_.fancy", "1", "options", `-c search_path=a\ b --statement-timeout=5000`))
		if got := r.next(); got != "NegotiateProtocolVersion 2 [_pq_.fancy]" {
			t.Fatalf("got %s", got)
		}
		if got := r.next(); got != "AuthenticationCleartextPassword" {
			t.Fatalf("got %s", got)
		}
		r.send(&pgproto3.PasswordMessage{Password: "alice-token"})
		msgs := r.untilReady()
		if !slices.Contains(msgs, "BackendKeyData 32 bytes") || msgs[0] != "AuthenticationOk" {
			t.Fatalf("startup: %q", msgs)
		}
		r.send(&pgproto3.Query{String: "show search_path; show statement_timeout"})
		got := r.untilReady()
		want := []string{"RowDescription search_path:25:0", `DataRow "a b"`, "CommandComplete SHOW",
			"RowDescription statement_timeout:25:0", `DataRow "5s"`, "CommandComplete SHOW", "ReadyForQuery I"}
		if !slices.Equal(got, want) {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	for _, tc := range []struct {
		name   string
		packet []byte
		want   string
	}{
		{"protocol 2", startupPacket(2<<16, "user", "alice"), "Error FATAL 0A000 unsupported frontend protocol 2.0: server supports 3.0 to 3.2"},
		{"no user", startupPacket(3<<16, "database", "x"), "Error FATAL 28000 no PostgreSQL user name specified in startup packet"},
		{"bad encoding", startupPacket(3<<16, "user", "alice", "client_encoding", "LATIN1"), `Error FATAL 22023 invalid value for parameter "client_encoding": "LATIN1"`},
		{"bad zone", startupPacket(3<<16, "user", "alice", "TimeZone", "Nowhere/Land"), `Error FATAL 22023 invalid value for parameter "TimeZone": "Nowhere/Land"`},
		{"bad options", startupPacket(3<<16, "user", "alice", "options", "-x"), "Error FATAL 22023 invalid command-line argument for server process: -x"},
		{"replication", startupPacket(3<<16, "user", "alice", "replication", "database"), "Error FATAL 0A000 replication connections are not supported"},
		{"bad length", []byte{0, 0, 0, 3}, "Error FATAL 08P01 invalid length of startup packet"},
		{"unterminated", []byte{0, 0, 0, 12, 0, 3, 0, 0, 'u', 's', 'e', 'r'}, "Error FATAL 08P01 invalid startup packet layout: expected terminator as last byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.dialRaw(t)
			r.writeRaw(tc.packet)
			if got := r.next(); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
			if !r.closed() {
				t.Error("connection still open")
			}
		})
	}
	t.Run("accepted client settings", func(t *testing.T) {
		r := ts.dialRaw(t)
		r.writeRaw(startupPacket(3<<16, "user", "alice", "client_encoding", "SQL_ASCII", "DateStyle", "ISO", "TimeZone", "Europe/Paris",
			"extra_float_digits", "3"))
		r.next()
		r.send(&pgproto3.PasswordMessage{Password: "alice-token"})
		msgs := r.untilReady()
		for _, want := range []string{"ParameterStatus client_encoding=UTF8", "ParameterStatus DateStyle=ISO, MDY",
			"ParameterStatus TimeZone=Europe/Paris", "BackendKeyData 4 bytes"} {
			if !slices.Contains(msgs, want) {
				t.Errorf("missing %s in %q", want, msgs)
			}
		}
	})
}

// TestTokenNeedsTLS checks that token login is refused on a plaintext
// connection from a non-loopback address, while SCRAM still works there.
func TestTokenNeedsTLS(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		user string
		want string
	}{
		{"alice", "Error FATAL 28000 token login requires TLS"},
		{"bob", "AuthenticationSASL"},
	} {
		client, server := net.Pipe()
		c := ts.srv.newConn(remoteAddrConn{server, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 5000}}, newGate(DefaultMaxUnauthenticated, DefaultMaxUnauthenticatedPerIP))
		go c.serve()
		r := &rawClient{t: t, nc: client, fe: pgproto3.NewFrontend(client, client)}
		client.SetDeadline(time.Now().Add(10 * time.Second))
		r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": tc.user}})
		if got := r.next(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.user, got, tc.want)
		}
		client.Close()
	}
}

// remoteAddrConn reports a chosen remote address.
type remoteAddrConn struct {
	net.Conn
	remote net.Addr
}

func (c remoteAddrConn) RemoteAddr() net.Addr { return c.remote }

// TestLimits covers MaxConnections, MaxMessageSize and IdleTimeout.
func TestLimits(t *testing.T) {
	ts := startServer(t, func(o *Options) {
		o.MaxConnections = 1
		o.MaxMessageSize = 1024
		o.IdleTimeout = time.Second
	})
	first := ts.login(t)
	r := ts.dialRaw(t)
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
	// A session slot is taken only once the client authenticated.
	if got := r.next(); got != "AuthenticationCleartextPassword" {
		t.Fatalf("second connection: %s", got)
	}
	r.send(&pgproto3.PasswordMessage{Password: "alice-token"})
	if got := r.next(); got != "Error FATAL 53300 sorry, too many clients already" {
		t.Errorf("second connection: %s", got)
	}
	first.send(&pgproto3.Query{String: "select '" + strings.Repeat("x", 2000) + "'"})
	if got := first.next(); !strings.HasPrefix(got, "Error FATAL 08P01 message of 2010 bytes exceeds the limit of 1024") {
		t.Errorf("large message: %s", got)
	}
	if !first.closed() {
		t.Error("connection open after a too large message")
	}

	// The slot is free again; an idle session times out.
	deadline := time.Now().Add(5 * time.Second)
	var idle *rawClient
	for idle == nil && time.Now().Before(deadline) {
		r := ts.dialRaw(t)
		r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
		if r.next() == "AuthenticationCleartextPassword" {
			r.send(&pgproto3.PasswordMessage{Password: "alice-token"})
			r.untilReady()
			idle = r
		}
	}
	if idle == nil {
		t.Fatal("no free connection slot")
	}
	start := time.Now()
	if got := idle.next(); got != "Error FATAL 57P05 terminating connection due to idle-session timeout" {
		t.Errorf("idle: %s", got)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("idle timeout after %v", d)
	}
}

// TestShutdown checks that idle and busy sessions end with 57P01, that
// new connections are refused and Serve returns.
func TestShutdown(t *testing.T) {
	ts := startServer(t)
	idle := ts.login(t)
	busy := ts.login(t)
	busy.send(&pgproto3.Query{String: "select pg_sleep(30)"})
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(ctx) }()
	for name, r := range map[string]*rawClient{"idle": idle, "busy": busy} {
		if got := r.next(); got != "Error FATAL 57P01 terminating connection due to administrator command" {
			t.Errorf("%s: %s", name, got)
		}
		if !r.closed() {
			t.Errorf("%s: still open", name)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := net.DialTimeout("tcp", ts.addr.String(), time.Second); err == nil {
		t.Error("listener still accepting")
	}
}
