package pgwire

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// dialFrom returns a pgx dial function whose connections come from the
// loopback address local (127.0.0.x), so one test can be several clients.
func dialFrom(local string) pgconn.DialFunc {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return d.DialContext
}

// loginFrom tries to log in as user with password from the address local
// and returns the error (nil when the login succeeded).
func (ts *testServer) loginFrom(t *testing.T, local, user, password string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.dsn(user, password))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = dialFrom(local)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// stall opens a connection from local that sends a StartupMessage for user
// and then never answers the authentication request.
func (ts *testServer) stall(t testing.TB, local, user string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", ts.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": user, "database": "floe"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	return nc
}

// closedByServer reports whether the server ended nc within wait (it may
// send a message first).
func closedByServer(nc net.Conn, wait time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 512)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// TestStalledLoginsDoNotLockOut is the attack of 300 clients that send a
// StartupMessage and never answer the password request: with the default
// options, a client that completes its handshake still logs in at once.
func TestStalledLoginsDoNotLockOut(t *testing.T) {
	ts := startServer(t)
	for i := range 300 {
		user := "alice" // asked for a token
		if i%2 == 1 {
			user = "bob" // asked for a SCRAM exchange
		}
		ts.stall(t, "127.0.0.1", user)
	}
	for _, c := range []struct{ user, password string }{{"alice", "alice-token"}, {"bob", "bob-secret"}} {
		start := time.Now()
		if err := ts.loginFrom(t, "127.0.0.1", c.user, c.password); err != nil {
			t.Fatalf("%s while 300 logins stall: %v", c.user, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s logged in after %v", c.user, d)
		}
	}
	if n := ts.srv.Unauthenticated(); n > DefaultMaxUnauthenticatedPerIP {
		t.Errorf("%d connections wait to authenticate, want at most %d", n, DefaultMaxUnauthenticatedPerIP)
	}
}

// TestUnauthenticatedCaps checks that the per-address and per-listener
// caps evict the oldest waiting connection, that the startup deadline
// ends a stalled one and that authenticated sessions are not counted.
func TestUnauthenticatedCaps(t *testing.T) {
	ts := startServer(t, func(o *Options) {
		o.MaxUnauthenticated = 4
		o.MaxUnauthenticatedPerIP = 2
		o.StartupTimeout = 3 * time.Second
	})
	// Authenticated sessions do not count: ten sessions from one address
	// stay logged in, and nothing waits.
	for range 10 {
		ts.connect(t, "alice", "alice-token", func(c *pgx.ConnConfig) { c.DialFunc = dialFrom("127.0.0.4") })
	}
	if n := ts.srv.Unauthenticated(); n != 0 {
		t.Errorf("Unauthenticated() = %d after logins, want 0", n)
	}
	// Per address: the third waiting connection from .1 evicts the first.
	a1 := ts.stall(t, "127.0.0.1", "alice")
	time.Sleep(50 * time.Millisecond)
	a2 := ts.stall(t, "127.0.0.1", "bob")
	time.Sleep(50 * time.Millisecond)
	a3 := ts.stall(t, "127.0.0.1", "alice")
	if !closedByServer(a1, 2*time.Second) {
		t.Error("the oldest waiting connection of 127.0.0.1 is still open")
	}
	// Per listener: four waiting in all; a fifth (from .3) evicts the
	// oldest of the listener, a2.
	b1 := ts.stall(t, "127.0.0.2", "alice")
	time.Sleep(50 * time.Millisecond)
	b2 := ts.stall(t, "127.0.0.2", "alice")
	time.Sleep(50 * time.Millisecond)
	c1 := ts.stall(t, "127.0.0.3", "alice")
	if !closedByServer(a2, 2*time.Second) {
		t.Error("the oldest waiting connection of the listener is still open")
	}
	for name, nc := range map[string]net.Conn{"a3": a3, "b1": b1, "b2": b2, "c1": c1} {
		if closedByServer(nc, 100*time.Millisecond) {
			t.Errorf("%s was closed", name)
		}
	}
	if n := ts.srv.Unauthenticated(); n != 4 {
		t.Errorf("Unauthenticated() = %d, want 4", n)
	}
	// The startup deadline ends the rest.
	if !closedByServer(c1, 5*time.Second) {
		t.Error("a stalled login outlived the startup deadline")
	}
	deadline := time.Now().Add(2 * time.Second)
	for ts.srv.Unauthenticated() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := ts.srv.Unauthenticated(); n != 0 {
		t.Errorf("Unauthenticated() = %d after the deadline, want 0", n)
	}
}

// fakeClock is a settable clock for the login limiter.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestLoginLimiter is the password-guessing attack: after three failed
// logins of a user from one address, further attempts from there are
// refused before any password is checked, while the right password from
// another address, and other users from the same address, still log in.
func TestLoginLimiter(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	ts := startServer(t, func(o *Options) {
		o.LoginFailuresPerMinute = 3
		o.Now = clock.Now
	})
	for _, c := range []struct{ user, wrong, right string }{
		{"bob", "guess", "bob-secret"},          // SCRAM
		{"alice", "guess-token", "alice-token"}, // token as password
	} {
		for i := range 3 {
			if err := ts.loginFrom(t, "127.0.0.1", c.user, c.wrong+string(rune('a'+i))); pgCode(err) != CodeInvalidPassword {
				t.Fatalf("%s: wrong password %d: %v, want %s", c.user, i+1, err, CodeInvalidPassword)
			}
		}
		// Throttled: refused even with the right password, with a clear error.
		for _, pw := range []string{c.wrong, c.right} {
			err := ts.loginFrom(t, "127.0.0.1", c.user, pw)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != CodeLoginThrottled || !strings.Contains(pe.Message, "too many failed login attempts") {
				t.Fatalf("%s: attempt after three failures: %v, want %s too many failed login attempts", c.user, err, CodeLoginThrottled)
			}
		}
		// The right password from another address logs in.
		if err := ts.loginFrom(t, "127.0.0.2", c.user, c.right); err != nil {
			t.Errorf("%s from another address: %v", c.user, err)
		}
	}
	// Another user from the attacked address is not locked out (carol has
	// no account: she fails with 28P01, not with the throttle).
	if err := ts.loginFrom(t, "127.0.0.1", "carol", "x"); pgCode(err) != CodeInvalidPassword {
		t.Errorf("carol from the throttled address: %v, want %s", err, CodeInvalidPassword)
	}
	// A token refills every 20 s.
	clock.Advance(21 * time.Second)
	if err := ts.loginFrom(t, "127.0.0.1", "bob", "bob-secret"); err != nil {
		t.Errorf("bob after the refill: %v", err)
	}
}

// TestStatementTimeout is the runaway-statement attack: statement_timeout
// is enforced (57014), and a server maximum applies to statements without
// one and caps those with a larger one.
func TestStatementTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     time.Duration
		set     string // the session's statement_timeout; "" for none
		wantMin time.Duration
		wantMax time.Duration
	}{
		{name: "session", set: "100ms", wantMin: 80 * time.Millisecond, wantMax: 2 * time.Second},
		{name: "session below max", max: 10 * time.Second, set: "100", wantMin: 80 * time.Millisecond, wantMax: 2 * time.Second},
		{name: "max only", max: 300 * time.Millisecond, wantMin: 250 * time.Millisecond, wantMax: 2 * time.Second},
		{name: "session zero gets max", max: 300 * time.Millisecond, set: "0", wantMin: 250 * time.Millisecond, wantMax: 2 * time.Second},
		{name: "session clamped", max: 300 * time.Millisecond, set: "1h", wantMin: 250 * time.Millisecond, wantMax: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, func(o *Options) { o.MaxStatementTimeout = tc.max })
			conn := ts.connect(t, "alice", "alice-token", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if tc.set != "" {
				if _, err := conn.Exec(ctx, "set statement_timeout = '"+tc.set+"'"); err != nil {
					t.Fatal(err)
				}
			}
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				start := time.Now()
				_, err := conn.Exec(ctx, "select pg_sleep(15)", mode)
				d := time.Since(start)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != CodeQueryCanceled || pe.Message != "canceling statement due to statement timeout" {
					t.Fatalf("mode %v: %v after %v, want 57014 canceling statement due to statement timeout", mode, err, d)
				}
				if d < tc.wantMin || d > tc.wantMax {
					t.Errorf("mode %v: canceled after %v, want %v to %v", mode, d, tc.wantMin, tc.wantMax)
				}
				// The session goes on.
				var one string
				if err := conn.QueryRow(ctx, "select 1").Scan(&one); err != nil {
					t.Fatalf("after the timeout: %v", err)
				}
			}
		})
	}
}

// TestStatementTimeoutSetting covers the values SET statement_timeout
// takes, as PostgreSQL reads and shows them.
func TestStatementTimeoutSetting(t *testing.T) {
	for _, tc := range []struct{ in, show, err string }{
		{in: "100", show: "100ms"},
		{in: "100ms", show: "100ms"},
		{in: "1000ms", show: "1s"},
		{in: "90s", show: "90s"},
		{in: "120s", show: "2min"},
		{in: "5min", show: "5min"},
		{in: "2h", show: "2h"},
		{in: "1d", show: "1d"},
		{in: "0", show: "0"},
		{in: " 250 ms ", show: "250ms"},
		{in: "-1", err: CodeInvalidParameterValue},
		{in: "soon", err: CodeInvalidParameterValue},
		{in: "10 parsecs", err: CodeInvalidParameterValue},
		{in: "99999999999", err: CodeInvalidParameterValue},
	} {
		s := newSession()
		err := s.SetSetting("statement_timeout", tc.in)
		if tc.err != "" {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != tc.err {
				t.Errorf("%q: %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got, _ := s.Setting("statement_timeout"); got != tc.show {
			t.Errorf("%q shows as %q, want %q", tc.in, got, tc.show)
		}
	}
}

// TestLoginKey: the limiter's keys are bounded in length and tell users
// and addresses (an IPv6 /64 as one) apart.
func TestLoginKey(t *testing.T) {
	v4 := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}
	v6a := &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1"), Port: 1}
	v6b := &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9"), Port: 2}
	v6c := &net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 1}
	long := strings.Repeat("u", 10000)
	if k := loginKey(long, v4); len(k) > 200 {
		t.Errorf("key of a 10,000-byte user name has %d bytes", len(k))
	}
	if loginKey("bob", v4) == loginKey("alice", v4) || loginKey("bob", v4) == loginKey("bob", v6a) {
		t.Error("different users or addresses share a key")
	}
	if loginKey("bob", v6a) != loginKey("bob", v6b) || loginKey("bob", v6a) == loginKey("bob", v6c) {
		t.Error("IPv6 addresses are not keyed by their /64")
	}
}

// TestLoginBurst: a pool opening 64 connections at once from one address
// (below the default per-address cap) loses none of them to eviction.
func TestLoginBurst(t *testing.T) {
	ts := startServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user, pw := "alice", "alice-token"
			if i%2 == 1 {
				user, pw = "bob", "bob-secret"
			}
			errs <- ts.loginFrom(t, "127.0.0.1", user, pw)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("login in a burst: %v", err)
		}
	}
}
