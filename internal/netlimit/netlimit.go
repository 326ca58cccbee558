// Package netlimit bounds what an untrusted caller can hold on an HTTP
// listener: how long it may take to send headers and a body, how many
// connections the listener keeps, and how many of them one client IP may
// keep while still sending a request. Every Floe HTTP listener (the REST
// catalog with the OAuth token endpoint and the management API, and the
// embedded S3 endpoint) is served by a netlimit Server.
//
// At the connection cap a new connection does not wait and is not refused:
// it displaces the oldest idle keep-alive connection or, failing that, the
// oldest connection still sending its request. A flood from one address
// (all of loopback, or one NAT) therefore cannot keep out a prompt client
// from the same address: the prompt client's request is in long before the
// flood's newer connections displace it. Only when every connection is
// being served (its request read, the handler running) is a new one
// refused.
package netlimit

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bounds one listener. Zero values take the defaults of
// DefaultLimits.
type Limits struct {
	// MaxConns caps the connections the listener holds.
	MaxConns int
	// MaxPendingPerIP caps, per client IP (IPv6: per /64), the connections
	// still sending a request: reading its headers or its body.
	MaxPendingPerIP int
	// HeaderTimeout bounds the time to send request headers.
	HeaderTimeout time.Duration
	// BodyTimeout bounds every stall of a request body, and is the grace
	// before BodyMinRate applies: a body of n bytes must have arrived
	// within BodyTimeout + n/BodyMinRate of the handler's start.
	BodyTimeout time.Duration
	// BodyMinRate is the slowest average rate of a body, in bytes per second.
	BodyMinRate int64
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request header block.
	MaxHeaderBytes int
}

// DefaultLimits are the limits of a listener configured with none.
func DefaultLimits() Limits {
	return Limits{MaxConns: 1024, MaxPendingPerIP: 256, HeaderTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second,
		BodyMinRate: 64 << 10, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxPendingPerIP <= 0 {
		l.MaxPendingPerIP = d.MaxPendingPerIP
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = d.BodyTimeout
	}
	if l.BodyMinRate <= 0 {
		l.BodyMinRate = d.BodyMinRate
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return l
}

// Stats counts what a Server holds and has shed.
type Stats struct {
	// Open is the number of connections held; Pending of them are still
	// sending a request.
	Open, Pending int
	// Evicted counts connections closed to make room for a new one;
	// Refused counts new connections closed because every held one was
	// being served.
	Evicted, Refused int64
}

// Server is an http.Server bounded by Limits.
type Server struct {
	srv  *http.Server
	lim  Limits
	log  *slog.Logger
	name string
	now  func() time.Time

	mu       sync.Mutex
	conns    map[*conn]struct{}
	pending  map[string]int // by client key
	lastWarn time.Time

	evicted, refused atomic.Int64
}

// New returns a server for h bounded by lim; name ("catalog", "s3") labels
// its log lines. log may be nil.
func New(name string, h http.Handler, lim Limits, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim = lim.withDefaults()
	s := &Server{lim: lim, log: log, name: name, now: time.Now, conns: map[*conn]struct{}{}, pending: map[string]int{}}
	s.srv = &http.Server{
		Handler:           s.bodyDeadlines(h),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         s.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := held(c); ok {
				return context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve accepts connections on ln and serves them until Shutdown; it
// returns http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	return s.srv.Serve(&listener{Listener: ln, s: s})
}

// ServeTLS is Serve over TLS with cfg (HTTP/1.1 unless cfg.NextProtos
// offers more). The TLS layer runs over the held connection, so the caps
// apply to a connection from its accept, and its handshake is bounded by
// HeaderTimeout like the request headers that follow it: until its request
// is in, a connection is not authenticated. A client speaking plain HTTP
// is answered 400 "Client sent an HTTP request to an HTTPS server".
func (s *Server) ServeTLS(ln net.Listener, cfg *tls.Config) error {
	return s.srv.Serve(tls.NewListener(&listener{Listener: ln, s: s}, cfg))
}

// held returns the held connection under nc (a *conn, or a TLS connection
// over one).
func held(nc net.Conn) (*conn, bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*conn)
	return c, ok
}

// Shutdown stops accepting, closes idle connections and waits for active
// ones to finish or ctx to end (as http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Stats returns the current counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Open: len(s.conns), Evicted: s.evicted.Load(), Refused: s.refused.Load()}
	for _, n := range s.pending {
		st.Pending += n
	}
	return st
}

// phase is where a connection is in its request cycle.
type phase int

const (
	// reading: accepted or between requests, reading request headers.
	reading phase = iota
	// body: the handler runs and the request body is still arriving.
	body
	// serving: the request is in; the handler runs.
	serving
	// idle: a keep-alive connection waiting for its next request.
	idle
)

func (p phase) pending() bool { return p == reading || p == body }

// conn is a held connection.
type conn struct {
	net.Conn
	key   string
	phase phase
	since time.Time
	// closeIdle closes the connection once its response is written: its
	// body missed the deadline, so what follows on the wire is no request.
	closeIdle bool
	// looked is set once the server has read from the connection: a
	// pending connection it has looked at is slow, one it has not may
	// hold a whole request not yet scheduled for reading.
	looked atomic.Bool
}

// Read marks the connection looked at and reads.
func (c *conn) Read(p []byte) (int, error) {
	if !c.looked.Load() {
		c.looked.Store(true)
	}
	return c.Conn.Read(p)
}

type connKey struct{}

type listener struct {
	net.Listener
	s *Server
}

// Accept admits the next connection, displacing an older one at a cap.
func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, evicted := l.s.admit(nc)
		if evicted {
			// Under a flood, let the connections already admitted read
			// their requests before the next newcomer can displace them.
			time.Sleep(evictPause)
		}
		if c != nil {
			return c, nil
		}
	}
}

// evictPause is how long the accept loop waits after closing a connection
// to make room: a flood then turns over at most 1,000 connections a second,
// and a prompt client's request is read long before it could be displaced.
const evictPause = time.Millisecond

// clientKey groups connections by client: the IP, or the /64 of an IPv6
// address (one host's usual allocation).
func clientKey(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// admit tracks nc, closing older connections to stay within the caps; it
// returns nil (having closed nc) when every held connection is being
// served, and whether it closed one to make room.
func (s *Server) admit(nc net.Conn) (*conn, bool) {
	c := &conn{Conn: nc, key: clientKey(nc.RemoteAddr()), phase: reading, since: s.now()}
	var victims []*conn
	s.mu.Lock()
	if s.pending[c.key] >= s.lim.MaxPendingPerIP {
		if v := s.slowest(func(o *conn) bool { return o.key == c.key }); v != nil {
			victims = append(victims, v)
			s.untrack(v)
		}
	}
	if len(s.conns) >= s.lim.MaxConns {
		v := s.oldest(func(o *conn) bool { return o.phase == idle })
		if v == nil {
			v = s.slowest(func(*conn) bool { return true })
		}
		if v == nil {
			s.mu.Unlock()
			s.refused.Add(1)
			s.warn("refused a connection: every held connection is being served")
			_ = nc.Close()
			return nil, true
		}
		victims = append(victims, v)
		s.untrack(v)
	}
	s.conns[c] = struct{}{}
	s.pending[c.key]++
	s.mu.Unlock()
	for _, v := range victims {
		s.evicted.Add(1)
		_ = v.Conn.Close()
	}
	if len(victims) > 0 {
		s.warn("closed older connections to admit new ones (connection caps reached)")
	}
	return c, len(victims) > 0
}

// warn logs msg at most once a minute per server.
func (s *Server) warn(msg string) {
	s.mu.Lock()
	now := s.now()
	if now.Sub(s.lastWarn) < time.Minute {
		s.mu.Unlock()
		return
	}
	s.lastWarn = now
	s.mu.Unlock()
	st := s.Stats()
	s.log.Warn("http listener: "+msg, "listener", s.name, "open", st.Open, "pending", st.Pending,
		"evicted", st.Evicted, "refused", st.Refused, "max_conns", s.lim.MaxConns, "max_pending_per_ip", s.lim.MaxPendingPerIP)
}

// oldest returns the tracked connection longest in its phase among those
// matching; s.mu is held.
func (s *Server) oldest(match func(*conn) bool) *conn {
	var best *conn
	for c := range s.conns {
		if match(c) && (best == nil || c.since.Before(best.since)) {
			best = c
		}
	}
	return best
}

// slowest returns the pending connection to displace among those
// matching: the oldest the server has read from and that is still sending
// its request, else the oldest not read from yet; s.mu is held.
func (s *Server) slowest(match func(*conn) bool) *conn {
	if v := s.oldest(func(o *conn) bool { return match(o) && o.phase.pending() && o.looked.Load() }); v != nil {
		return v
	}
	return s.oldest(func(o *conn) bool { return match(o) && o.phase.pending() })
}

// untrack forgets c; s.mu is held.
func (s *Server) untrack(c *conn) {
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if c.phase.pending() {
		s.leave(c.key)
	}
}

// leave decrements the pending count of key; s.mu is held.
func (s *Server) leave(key string) {
	if s.pending[key] <= 1 {
		delete(s.pending, key)
	} else {
		s.pending[key]--
	}
}

// setPhase moves c to p, keeping the pending counts.
func (s *Server) setPhase(c *conn, p phase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok || c.phase == p {
		return
	}
	switch {
	case c.phase.pending() && !p.pending():
		s.leave(c.key)
	case !c.phase.pending() && p.pending():
		s.pending[c.key]++
	}
	c.phase, c.since = p, s.now()
}

func (s *Server) connState(nc net.Conn, st http.ConnState) {
	c, ok := held(nc)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		s.mu.Lock()
		shut := c.closeIdle
		s.mu.Unlock()
		if shut {
			_ = c.Conn.Close()
			return
		}
		s.setPhase(c, idle)
	case http.StateClosed, http.StateHijacked:
		s.mu.Lock()
		s.untrack(c)
		s.mu.Unlock()
	}
}

// bodyDeadlines marks each request's connection as being served and, for
// a request with a body, bounds the body's arrival (see Limits.BodyTimeout).
func (s *Server) bodyDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			s.setPhase(c, serving)
			h.ServeHTTP(w, r)
			return
		}
		s.setPhase(c, body)
		// net/http decides from r.Body's own type whether an unread body
		// (a refused upload sent with Expect: 100-continue) is drained or the
		// connection closed: the original body goes back before the response
		// is finished, so a refusal is still answered at once.
		orig := r.Body
		defer func() { r.Body = orig }()
		b := &deadlineBody{rc: r.Body, w: w, ctl: http.NewResponseController(w), s: s, c: c, start: s.now(), length: r.ContentLength}
		b.extend()
		r.Body = b
		defer func() {
			b.finish(false)
			if b.expired.Load() {
				s.mu.Lock()
				c.closeIdle = true
				s.mu.Unlock()
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// deadlineBody moves the connection's read deadline as a body arrives: no
// read may wait longer than BodyTimeout, and the body must keep an average
// of BodyMinRate after the first BodyTimeout.
type deadlineBody struct {
	rc     io.ReadCloser
	w      http.ResponseWriter
	ctl    *http.ResponseController
	s      *Server
	c      *conn
	start  time.Time
	length int64 // -1: unknown
	n      atomic.Int64
	once   sync.Once
	// expired is set when a read missed the deadline.
	expired atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	total := b.n.Add(int64(n))
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !b.expired.Swap(true) {
		b.w.Header().Set("Connection", "close")
		b.s.log.Debug("http listener: request body too slow", "listener", b.s.name, "bytes", total,
			"elapsed", b.s.now().Sub(b.start))
	}
	switch {
	case err == io.EOF || (b.length >= 0 && total >= b.length):
		b.finish(true)
	case err != nil:
		b.finish(false) // the deadline stays: the server's drain of the rest is bounded too
	case n > 0:
		b.extend()
	}
	return n, err
}

// Close closes the underlying body.
func (b *deadlineBody) Close() error { return b.rc.Close() }

func (b *deadlineBody) extend() {
	lim := b.s.lim
	stall := b.s.now().Add(lim.BodyTimeout)
	rate := b.start.Add(lim.BodyTimeout + time.Duration(float64(b.n.Load())/float64(lim.BodyMinRate)*float64(time.Second)))
	_ = b.ctl.SetReadDeadline(minTime(stall, rate))
}

// finish marks the body done once: the connection is being served. When
// the body was read to its end the deadline is lifted, so that the
// server's watch for a client hang-up does not time out during a long
// response; otherwise it stays, bounding the server's drain of the rest.
func (b *deadlineBody) finish(read bool) {
	b.once.Do(func() {
		if read {
			_ = b.ctl.SetReadDeadline(time.Time{})
		}
		b.s.setPhase(b.c, serving)
	})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
