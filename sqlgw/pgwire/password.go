package pgwire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/floe-lake/floe/netallow"
)

// ThrottledError is what CheckPassword returns while a user at an address
// has used up its failed-login budget (LoginFailuresPerMinute).
type ThrottledError struct {
	// RetryAfter is how long until the next attempt is let through.
	RetryAfter time.Duration
}

// Error implements error.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed login attempts; try again in %d s", e.RetrySeconds())
}

// RetrySeconds is RetryAfter in whole seconds, at least 1.
func (e *ThrottledError) RetrySeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// dummyVerifier is checked against for users without a SQL password, so
// that they cost as much time as users with one.
var dummyVerifier = func() *ScramVerifier {
	v, err := deriveScramVerifier("", make([]byte, 16), DefaultScramIterations)
	if err != nil {
		panic(err) // PBKDF2 with SHA-256 and a fixed key length does not fail
	}
	return v
}()

// CheckPassword verifies user's SQL password as a SCRAM login to this
// server would, for another front end (the web console) that receives the
// password itself. It shares the server's login limiter, keyed by user and
// client address as for wire logins: while the key is blocked it returns a
// *ThrottledError without checking anything, and every wrong password
// counts against it. An unknown user, one without a SQL password (wire
// logins would ask it for an access token instead) and a wrong password all
// give ErrBadCredentials, in about the same time. A right password from an
// address outside the principal's allowlist gives netallow's Forbidden
// error.
func (s *Server) CheckPassword(ctx context.Context, user, password string, addr net.Addr) (Identity, error) {
	key := loginKey(user, addr)
	if retry, first, blocked := s.limiter.Blocked(key); blocked {
		if first {
			s.log.InfoContext(ctx, "pgwire: password checks throttled after failed attempts", "user", user)
		}
		return Identity{}, &ThrottledError{RetryAfter: retry}
	}
	if user == "" || password == "" {
		s.limiter.Fail(key)
		return Identity{}, ErrBadCredentials
	}
	v, id, ok, err := s.opts.Authenticator.SCRAMVerifier(ctx, user)
	if err != nil {
		return Identity{}, fmt.Errorf("pgwire: SCRAM verifier lookup: %w", err)
	}
	if !ok {
		dummyVerifier.Check(password)
		s.limiter.Fail(key)
		return Identity{}, ErrBadCredentials
	}
	if !v.Check(password) {
		s.limiter.Fail(key)
		return Identity{}, ErrBadCredentials
	}
	if client := netallow.AddrOf(addr); !netallow.ContainsAny(id.AllowedCIDRs, client) {
		return Identity{}, netallow.DeniedPrincipal(client, id.Principal)
	}
	if id.Principal == "" {
		return Identity{}, errors.New("pgwire: the authenticator named no principal")
	}
	id.Method = AuthSCRAM
	return id, nil
}
