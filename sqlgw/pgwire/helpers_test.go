package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// testServer is a pgwire server on a random loopback port.
type testServer struct {
	srv    *Server
	addr   *net.TCPAddr
	engine *testEngine
	auth   *testAuth
	served chan error
}

// startServer starts a server with the test engine and authenticator; mod
// adjusts the options. It is shut down at cleanup.
func startServer(t testing.TB, mod ...func(*Options)) *testServer {
	t.Helper()
	ts := &testServer{engine: &testEngine{}, auth: newTestAuth(t), served: make(chan error, 1)}
	opts := Options{Engine: ts.engine, Authenticator: ts.auth, Logger: testLogger(t)}
	for _, m := range mod {
		m(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.srv, ts.addr = srv, ln.Addr().(*net.TCPAddr)
	go func() { ts.served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// dsn returns a connection string for user/password with extra settings.
func (ts *testServer) dsn(user, password string, extra ...string) string {
	parts := []string{
		"host=127.0.0.1", fmt.Sprintf("port=%d", ts.addr.Port), "user=" + user,
		"password=" + password, "dbname=floe", "connect_timeout=10",
	}
	hasSSL := false
	for _, e := range extra {
		hasSSL = hasSSL || strings.HasPrefix(e, "sslmode=")
	}
	if !hasSSL {
		parts = append(parts, "sslmode=disable")
	}
	return strings.Join(append(parts, extra...), " ")
}

// connect opens a pgx connection, failing the test on error.
func (ts *testServer) connect(t testing.TB, user, password string, mod func(*pgx.ConnConfig), extra ...string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.dsn(user, password, extra...))
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// connectErr tries to connect and returns the server's error.
func (ts *testServer) connectErr(t testing.TB, user, password string, extra ...string) *pgconn.PgError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ts.dsn(user, password, extra...))
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("connect as %s succeeded, want an error", user)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("connect as %s: %v, want a server error", user, err)
	}
	return pe
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// rawClient speaks the protocol message by message.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
}

// dialRaw connects without logging in.
func (ts *testServer) dialRaw(t testing.TB) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ts.addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// login connects and logs in as alice with her token, reading up to the
// first ReadyForQuery.
func (ts *testServer) login(t testing.TB) *rawClient {
	t.Helper()
	r := ts.dialRaw(t)
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "alice", "database": "floe"}})
	if got := r.next(); got != "AuthenticationCleartextPassword" {
		t.Fatalf("got %s, want AuthenticationCleartextPassword", got)
	}
	r.send(&pgproto3.PasswordMessage{Password: "alice-token"})
	r.untilReady()
	return r
}

func (r *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	r.t.Helper()
	for _, m := range msgs {
		r.fe.Send(m)
	}
	if err := r.fe.Flush(); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// next receives one message and describes it.
func (r *rawClient) next() string {
	r.t.Helper()
	m, err := r.fe.Receive()
	if err != nil {
		r.t.Fatalf("receive: %v", err)
	}
	return describeMsg(m)
}

// untilReady receives messages up to and including ReadyForQuery.
func (r *rawClient) untilReady() []string {
	r.t.Helper()
	var out []string
	for {
		s := r.next()
		out = append(out, s)
		if strings.HasPrefix(s, "ReadyForQuery") {
			return out
		}
		if strings.HasPrefix(s, "Error FATAL") {
			return out
		}
	}
}

// closed reports whether the server closed the connection.
func (r *rawClient) closed() bool {
	_, err := r.fe.Receive()
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		(err != nil && strings.Contains(err.Error(), "connection reset"))
}

// writeRaw writes bytes as they are.
func (r *rawClient) writeRaw(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func describeMsg(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.DataRow:
		vals := make([]string, len(m.Values))
		for i, v := range m.Values {
			if v == nil {
				vals[i] = "NULL"
			} else {
				vals[i] = fmt.Sprintf("%q", v)
			}
		}
		return "DataRow " + strings.Join(vals, ",")
	case *pgproto3.RowDescription:
		f := make([]string, len(m.Fields))
		for i, fd := range m.Fields {
			f[i] = fmt.Sprintf("%s:%d:%d", fd.Name, fd.DataTypeOID, fd.Format)
		}
		return "RowDescription " + strings.Join(f, ",")
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ErrorResponse:
		return fmt.Sprintf("Error %s %s %s", m.Severity, m.Code, m.Message)
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("Notice %s %s %s", m.Severity, m.Code, m.Message)
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.ParameterDescription:
		s := make([]string, len(m.ParameterOIDs))
		for i, o := range m.ParameterOIDs {
			s[i] = fmt.Sprint(o)
		}
		return "ParameterDescription " + strings.Join(s, ",")
	case *pgproto3.ParameterStatus:
		return "ParameterStatus " + m.Name + "=" + m.Value
	case *pgproto3.BackendKeyData:
		return fmt.Sprintf("BackendKeyData %d bytes", len(m.SecretKey))
	case *pgproto3.NegotiateProtocolVersion:
		return fmt.Sprintf("NegotiateProtocolVersion %d %v", m.NewestMinorProtocol, m.UnrecognizedOptions)
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}

// startupPacket builds a startup packet with a raw protocol code.
func startupPacket(code uint32, params ...string) []byte {
	body := binary.BigEndian.AppendUint32(nil, code)
	for _, p := range params {
		body = append(body, p...)
		body = append(body, 0)
	}
	body = append(body, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body)+4)), body...)
}

// testCert makes a self-signed ECDSA certificate for 127.0.0.1 and writes
// its PEM to dir/ca.pem.
func testCert(t testing.TB) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "floe-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}
