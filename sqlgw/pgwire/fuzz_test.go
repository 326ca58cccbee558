package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fuzzConn is a net.Conn that reads a fixed input and discards writes.
type fuzzConn struct {
	r      *bytes.Reader
	closed atomic.Bool
}

func (c *fuzzConn) Read(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return c.r.Read(p)
}

func (c *fuzzConn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return len(p), nil
}

func (c *fuzzConn) Close() error        { c.closed.Store(true); return nil }
func (c *fuzzConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5433} }
func (c *fuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// panicWatch is a slog handler that records panics the server recovered.
type panicWatch struct {
	mu     sync.Mutex
	panics []string
}

func (h *panicWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h *panicWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		var detail string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "panic" || a.Key == "stack" {
				detail += a.Value.String() + "\n"
			}
			return true
		})
		h.mu.Lock()
		h.panics = append(h.panics, detail)
		h.mu.Unlock()
	}
	return nil
}
func (h *panicWatch) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panicWatch) WithGroup(string) slog.Handler      { return h }

func (h *panicWatch) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.panics
	h.panics = nil
	return p
}

func encodeAll(t testing.TB, msgs ...interface{ Encode([]byte) ([]byte, error) }) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// fuzzServer is a server for feeding inputs to serve directly.
func fuzzServer(t testing.TB) (*Server, *panicWatch) {
	cert, _ := testCert(t)
	watch := &panicWatch{}
	srv, err := New(Options{
		Engine:         &testEngine{maxSleep: 5 * time.Millisecond},
		Authenticator:  newTestAuth(t),
		TLSConfig:      &tls.Config{Certificates: []tls.Certificate{cert}},
		Logger:         slog.New(watch),
		MaxMessageSize: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, watch
}

// serveInput serves one connection reading input and fails on a panic or
// if the connection does not end.
func serveInput(t *testing.T, srv *Server, watch *panicWatch, input []byte) {
	c := srv.newConn(&fuzzConn{r: bytes.NewReader(input)}, newGate(DefaultMaxUnauthenticated, DefaultMaxUnauthenticatedPerIP))
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.serve()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("connection did not end for input %q", input)
	}
	if p := watch.take(); len(p) > 0 {
		t.Fatalf("server panicked on input %q:\n%s", input, p[0])
	}
}

func loginPrefix(t testing.TB) []byte {
	return encodeAll(t,
		&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice", "database": "floe"}},
		&pgproto3.PasswordMessage{Password: "alice-token"})
}

// FuzzServerConn feeds arbitrary bytes to a fresh connection, from the
// first byte of the startup phase.
func FuzzServerConn(f *testing.F) {
	f.Add(append(loginPrefix(f), encodeAll(f, &pgproto3.Query{String: "select * from items"}, &pgproto3.Terminate{})...))
	f.Add(encodeAll(f,
		&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32, Parameters: map[string]string{"user": "bob", "_pq_.x": "1"}},
		&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")},
		&pgproto3.SASLResponse{Data: []byte("c=biws,r=abc,p=AAAA")}))
	f.Add(encodeAll(f, &pgproto3.SSLRequest{}))
	f.Add(append(encodeAll(f, &pgproto3.GSSEncRequest{}), loginPrefix(f)...))
	f.Add(encodeAll(f, &pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}}))
	f.Add(startupPacket(3<<16, "user", "alice", "options", `-c a=b\ c --x-y=z`, "TimeZone", "Europe/Paris"))
	f.Add([]byte{0, 0, 0, 8, 0, 3, 0, 0})
	srv, watch := fuzzServer(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		serveInput(t, srv, watch, input)
	})
}

// FuzzSession feeds arbitrary messages to a logged-in session.
func FuzzSession(f *testing.F) {
	seeds := [][]byte{
		encodeAll(f, &pgproto3.Query{String: "select 1; select 'x'; do notice; begin; select 1/0; rollback"}),
		encodeAll(f,
			&pgproto3.Parse{Name: "s", Query: "select $1::int8, $2::timestamptz, $3::numeric"},
			&pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1, 0, 1},
				Parameters:        [][]byte{{0, 0, 0, 0, 0, 0, 0, 1}, []byte("2024-01-01 00:00:00+02"), {0, 1, 0, 0, 0, 0, 0, 2, 0, 5}},
				ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{Portal: "p", MaxRows: 1},
			&pgproto3.Execute{Portal: "p"},
			&pgproto3.Close{ObjectType: 'P', Name: "p"},
			&pgproto3.Sync{}),
		encodeAll(f,
			&pgproto3.Parse{Query: "select * from generate_series(1, 50)"}, &pgproto3.Bind{ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{MaxRows: 7}, &pgproto3.Flush{}, &pgproto3.Execute{}, &pgproto3.Sync{}),
		encodeAll(f, &pgproto3.Query{String: "select pg_sleep(1)"}, &pgproto3.FunctionCall{Function: 1}, &pgproto3.CopyData{Data: []byte("x")}),
		encodeAll(f, &pgproto3.Query{String: "set TimeZone = 'Asia/Tokyo'; select * from items"}),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	srv, watch := fuzzServer(f)
	prefix := loginPrefix(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		serveInput(t, srv, watch, append(append([]byte{}, prefix...), input...))
	})
}

// TestFuzzHarness checks that the harness reaches the query layer: a valid
// session's output contains the query's rows.
func TestFuzzHarness(t *testing.T) {
	srv, _ := fuzzServer(t)
	out := &recordConn{fuzzConn: fuzzConn{r: bytes.NewReader(append(loginPrefix(t),
		encodeAll(t, &pgproto3.Query{String: "select 'reached'"}, &pgproto3.Terminate{})...))}}
	c := srv.newConn(out, newGate(DefaultMaxUnauthenticated, DefaultMaxUnauthenticatedPerIP))
	c.serve()
	if !bytes.Contains(out.buf.Bytes(), []byte("reached")) {
		t.Fatalf("output does not contain the row: %q", out.buf.Bytes())
	}
	if n := srv.opts.Engine.(*testEngine).open.Load(); n != 0 {
		t.Errorf("%d statements open", n)
	}
}

type recordConn struct {
	fuzzConn
	buf bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) { return c.buf.Write(p) }

var _ io.ReadWriter = (*recordConn)(nil)
