package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-lake/floe/loginlimit"
)

// Defaults for Options.
const (
	DefaultMaxMessageSize = 16 << 20
	DefaultMaxConnections = 256
	DefaultStartupTimeout = 10 * time.Second
	DefaultServerVersion  = "16.0 (Floe)"
	// DefaultMaxUnauthenticated bounds, per listener, the connections that
	// have not authenticated yet.
	DefaultMaxUnauthenticated = 512
	// DefaultMaxUnauthenticatedPerIP bounds, per listener, the connections
	// from one client address (an IPv6 /64) that have not authenticated.
	DefaultMaxUnauthenticatedPerIP = 128
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// Options configures a Server.
type Options struct {
	// Engine prepares and runs statements (required).
	Engine Engine
	// Authenticator checks logins (required).
	Authenticator Authenticator
	// TLSConfig enables TLS (SSLRequest is answered 'S'); nil answers 'N'.
	TLSConfig *tls.Config
	// RequireTLS refuses a StartupMessage that did not come over TLS.
	RequireTLS bool
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Tracer starts one span per statement (or per prepare and execute of
	// the extended protocol); nil: no tracing.
	Tracer trace.Tracer
	// MaxMessageSize bounds one frontend message after login (default
	// DefaultMaxMessageSize); larger messages end the connection. pgwire
	// allocates a message's buffer from its length prefix, so this bounds
	// memory per connection. Before login the bound is 16 KiB.
	MaxMessageSize int
	// MaxConnections bounds concurrent authenticated sessions (default
	// DefaultMaxConnections); further logins get SQLSTATE 53300 once they
	// authenticated. Cancel requests are always served.
	MaxConnections int
	// MaxUnauthenticated bounds, per listener, the connections that have
	// not authenticated yet (default DefaultMaxUnauthenticated). A new
	// connection beyond it evicts the oldest waiting one, so that clients
	// stalling at the password prompt cannot keep out one that answers at
	// once.
	MaxUnauthenticated int
	// MaxUnauthenticatedPerIP is MaxUnauthenticated for the connections
	// from one client address, an IPv6 /64 (default
	// DefaultMaxUnauthenticatedPerIP); it too evicts the oldest.
	MaxUnauthenticatedPerIP int
	// LoginFailuresPerMinute is how many failed logins (wrong password or
	// token, SQLSTATE 28P01) one user may have from one client address per
	// minute, and in a burst, before further logins of that user from that
	// address are refused without checking a password (SQLSTATE
	// CodeLoginThrottled) until the budget refills. 0 or negative: no limit.
	LoginFailuresPerMinute int
	// Now is the clock of the login limiter (default time.Now).
	Now func() time.Time
	// MaxStatementTimeout bounds every statement's run (SQLSTATE 57014
	// when it expires): a session's statement_timeout above it, or 0 (none),
	// is taken as this. 0 means no server bound.
	MaxStatementTimeout time.Duration
	// IdleTimeout ends a session that sends nothing for this long
	// (SQLSTATE 57P05); 0 means never.
	IdleTimeout time.Duration
	// StartupTimeout bounds TLS negotiation, startup and authentication
	// (default DefaultStartupTimeout).
	StartupTimeout time.Duration
	// ServerVersion is reported as server_version (default
	// DefaultServerVersion); clients parse its leading number.
	ServerVersion string
	// CheckClient, when set, decides whether the client at addr (the TCP
	// peer) may log in, before any password is asked for: an error refuses
	// the connection with SQLSTATE 28000 and the error's public message
	// (a listener's allowlist; see package netallow).
	CheckClient func(ctx context.Context, addr netip.Addr) error
}

// Server serves the PostgreSQL protocol on listeners. It is safe for
// concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	nextID   atomic.Uint64
	closing  atomic.Bool
	limiter  *loginlimit.Limiter // nil: logins are not limited
	mu       sync.Mutex
	lns      map[net.Listener]*gate
	conns    map[*conn]struct{}
	byPID    map[uint32]*conn
	sessions int
	wg       sync.WaitGroup
}

// New returns a server with opts, filling in defaults.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil {
		return nil, errors.New("pgwire: Options.Engine is required")
	}
	if opts.Authenticator == nil {
		return nil, errors.New("pgwire: Options.Authenticator is required")
	}
	if opts.RequireTLS && opts.TLSConfig == nil {
		return nil, errors.New("pgwire: RequireTLS needs a TLSConfig")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.MaxUnauthenticated <= 0 {
		opts.MaxUnauthenticated = DefaultMaxUnauthenticated
	}
	if opts.MaxUnauthenticatedPerIP <= 0 {
		opts.MaxUnauthenticatedPerIP = DefaultMaxUnauthenticatedPerIP
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxStatementTimeout < 0 {
		opts.MaxStatementTimeout = 0
	}
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = DefaultStartupTimeout
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	return &Server{
		opts:    opts,
		log:     opts.Logger,
		limiter: loginlimit.New(loginlimit.Options{PerMinute: opts.LoginFailuresPerMinute, Now: opts.Now}),
		lns:     map[net.Listener]*gate{},
		conns:   map[*conn]struct{}{},
		byPID:   map[uint32]*conn{},
	}, nil
}

// Serve accepts connections on l until Shutdown or Close, serving each in
// its own goroutine. It closes l and returns ErrServerClosed after
// Shutdown or Close, or the listener's error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	g := newGate(s.opts.MaxUnauthenticated, s.opts.MaxUnauthenticatedPerIP)
	s.lns[l] = g
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, l)
		s.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("pgwire: accept: %w", err)
			}
			// Other errors (EMFILE, ECONNABORTED ...) are usually transient.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("pgwire: accept", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := s.newConn(nc, g)
		if c == nil {
			nc.Close()
			return ErrServerClosed
		}
		go c.serve()
	}
}

// newConn registers a connection as waiting to authenticate at g,
// evicting the oldest waiting one of g or of its address when a cap is
// reached; nil when the server is closing.
func (s *Server) newConn(nc net.Conn, g *gate) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	for _, old := range g.add(c, addrKey(nc.RemoteAddr())) {
		old.log.Debug("pgwire: evicted a connection waiting to authenticate")
		old.evict()
	}
	return c
}

// Unauthenticated returns the number of connections that have not
// authenticated yet, over all listeners.
func (s *Server) Unauthenticated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.lns {
		n += g.all.Len()
	}
	return n
}

func (s *Server) dropConn(c *conn) {
	s.mu.Lock()
	c.gate.remove(c)
	delete(s.conns, c)
	if c.pid != 0 && s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
	if c.admitted {
		s.sessions--
	}
	s.mu.Unlock()
	s.wg.Done()
}

// admit counts a new, authenticated session against MaxConnections (it no
// longer waits to authenticate) and gives it a unique process id and
// secret key of keyLen bytes.
func (s *Server) admit(c *conn, keyLen int) (bool, error) {
	secret := make([]byte, keyLen)
	if _, err := rand.Read(secret); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.gate.remove(c)
	if s.sessions >= s.opts.MaxConnections {
		return false, nil
	}
	var b [4]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return false, err
		}
		pid := binary.BigEndian.Uint32(b[:]) & 0x7fffffff // positive as an int32 for JDBC
		if pid == 0 || s.byPID[pid] != nil {
			continue
		}
		c.pid, c.secret = pid, secret
		s.byPID[pid] = c
		break
	}
	s.sessions++
	c.admitted = true
	return true, nil
}

// cancel serves a CancelRequest: the query running on the session with
// this process id is cancelled when the secret key matches.
func (s *Server) cancel(pid uint32, key []byte) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret, key) != 1 {
		s.log.Debug("pgwire: ignored cancel request", "pid", pid)
		return
	}
	c.cancelRunning(errQueryCanceled)
}

// Shutdown stops accepting connections, cancels running queries, ends
// every session with SQLSTATE 57P01 and waits for the connections to
// close or ctx to end, when it closes the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	for l := range s.lns {
		l.Close()
	}
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// Close closes all listeners and connections at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	for l := range s.lns {
		l.Close()
	}
	for c := range s.conns {
		c.cancelRunning(errShutdown)
		c.nc().Close()
	}
	s.mu.Unlock()
	return nil
}
