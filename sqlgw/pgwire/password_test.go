package pgwire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestCheckPassword: the right password gives the SCRAM identity; a wrong
// one, an unknown user, a user without a password (token-only) and an
// empty password give ErrBadCredentials; a failing lookup is an internal
// error, not a bad password.
func TestCheckPassword(t *testing.T) {
	ts := startServer(t)
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}
	for _, c := range []struct {
		name, user, password string
		want                 error
		internal             bool
	}{
		{name: "right", user: "bob", password: "bob-secret"},
		{name: "wrong", user: "bob", password: "bob-secreT", want: ErrBadCredentials},
		{name: "unknown user", user: "nobody", password: "bob-secret", want: ErrBadCredentials},
		{name: "token-only user", user: "alice", password: "alice-token", want: ErrBadCredentials},
		{name: "empty password", user: "bob", password: "", want: ErrBadCredentials},
		{name: "lookup fails", user: "lookupfails", password: "x", internal: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := ts.srv.CheckPassword(context.Background(), c.user, c.password, addr)
			switch {
			case c.internal:
				if err == nil || errors.Is(err, ErrBadCredentials) {
					t.Fatalf("got %v, want an internal error", err)
				}
			case c.want != nil:
				if !errors.Is(err, c.want) {
					t.Fatalf("got %v, want %v", err, c.want)
				}
			case err != nil || id.Principal != c.user || id.Method != AuthSCRAM:
				t.Fatalf("got %+v, %v", id, err)
			}
		})
	}
}

// TestCheckPasswordSharesTheLoginLimiter: wrong passwords checked by
// CheckPassword use up the same budget (per user and address) as wire
// logins: once spent, CheckPassword answers ThrottledError even for the
// right password and a wire login of that user is refused as throttled,
// while another user or another address is not affected.
func TestCheckPasswordSharesTheLoginLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := startServer(t, func(o *Options) {
		o.LoginFailuresPerMinute = 3
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	for range 3 {
		if _, err := ts.srv.CheckPassword(ctx, "bob", "wrong", local); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	_, err := ts.srv.CheckPassword(ctx, "bob", "bob-secret", local)
	var te *ThrottledError
	if !errors.As(err, &te) || te.RetrySeconds() < 1 {
		t.Fatalf("right password after 3 failures: %v, want ThrottledError", err)
	}
	if pe := ts.connectErr(t, "bob", "bob-secret"); pe.Code != CodeLoginThrottled {
		t.Fatalf("wire login after 3 console failures: %s %s, want %s", pe.Code, pe.Message, CodeLoginThrottled)
	}
	other := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 1}
	if _, err := ts.srv.CheckPassword(ctx, "bob", "bob-secret", other); err != nil {
		t.Fatalf("bob from another address: %v", err)
	}
	now = now.Add(time.Minute)
	if _, err := ts.srv.CheckPassword(ctx, "bob", "bob-secret", local); err != nil {
		t.Fatalf("after the budget refilled: %v", err)
	}
}
