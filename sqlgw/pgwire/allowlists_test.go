package pgwire

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floe-lake/floe"
)

// netAuth wraps testAuth: every identity gets cidrs as its allowlist, and
// the lookups are counted.
type netAuth struct {
	*testAuth
	lookups atomic.Int64

	mu     sync.Mutex
	cidrs  []string
	tokErr error
}

func (a *netAuth) set(cidrs []string, tokErr error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cidrs, a.tokErr = cidrs, tokErr
}

func (a *netAuth) get() ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cidrs, a.tokErr
}

func (a *netAuth) SCRAMVerifier(ctx context.Context, user string) (*ScramVerifier, Identity, bool, error) {
	a.lookups.Add(1)
	v, id, ok, err := a.testAuth.SCRAMVerifier(ctx, user)
	id.AllowedCIDRs, _ = a.get()
	return v, id, ok, err
}

func (a *netAuth) Token(ctx context.Context, user, token string) (Identity, error) {
	a.lookups.Add(1)
	cidrs, tokErr := a.get()
	if tokErr != nil {
		return Identity{}, tokErr
	}
	id, err := a.testAuth.Token(ctx, user, token)
	id.AllowedCIDRs = cidrs
	return id, err
}

// TestCheckClient: Options.CheckClient refuses a client with 28000 and its
// message before any credential is looked up, and sees the peer's address.
func TestCheckClient(t *testing.T) {
	auth := &netAuth{testAuth: newTestAuth(t)}
	var seen atomic.Value
	ts := startServer(t, func(o *Options) {
		o.Authenticator = auth
		o.CheckClient = func(_ context.Context, a netip.Addr) error {
			seen.Store(a)
			return floe.E(floe.Forbidden, "network", "client address %s is not in the sql listener's allowlist", a)
		}
	})
	pe := ts.connectErr(t, "bob", "bob-secret")
	if pe == nil || pe.Code != CodeInvalidAuthorization || pe.Message != "client address 127.0.0.1 is not in the sql listener's allowlist" {
		t.Fatalf("err %v, want 28000 with the listener's message", pe)
	}
	if a, _ := seen.Load().(netip.Addr); a != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("CheckClient saw %v", a)
	}
	if n := auth.lookups.Load(); n != 0 {
		t.Fatalf("%d credential lookups before the refusal, want 0", n)
	}
}

// TestIdentityAllowedCIDRs: an identity's allowlist refuses a login from
// outside it with 28000 once the password checked out (a wrong password
// is still 28P01, telling nothing about the list), by SCRAM and by token.
func TestIdentityAllowedCIDRs(t *testing.T) {
	auth := &netAuth{testAuth: newTestAuth(t)}
	auth.set([]string{"10.0.0.0/8"}, nil)
	ts := startServer(t, func(o *Options) { o.Authenticator = auth })
	for _, tt := range []struct{ user, password, code, msg string }{
		{"bob", "bob-secret", CodeInvalidAuthorization, "client address 127.0.0.1 is not in principal bob's allowlist"},
		{"alice", "alice-token", CodeInvalidAuthorization, "client address 127.0.0.1 is not in principal alice's allowlist"},
		{"bob", "wrong", CodeInvalidPassword, `password authentication failed for user "bob"`},
	} {
		pe := ts.connectErr(t, tt.user, tt.password)
		if pe == nil || pe.Code != tt.code || pe.Message != tt.msg {
			t.Errorf("%s/%s: %v, want %s %q", tt.user, tt.password, pe, tt.code, tt.msg)
		}
	}
	auth.set([]string{"10.0.0.0/8", "127.0.0.0/8", "::1"}, nil)
	ts.connect(t, "bob", "bob-secret", nil)
	ts.connect(t, "alice", "alice-token", nil)

	// An Authenticator's own network refusal (auth.Verify's) is 28000 too.
	auth.set(nil, floe.E(floe.Forbidden, "network", "client address 127.0.0.1 is not in principal alice's allowlist"))
	if pe := ts.connectErr(t, "alice", "alice-token"); pe == nil || pe.Code != CodeInvalidAuthorization ||
		pe.Message != "client address 127.0.0.1 is not in principal alice's allowlist" {
		t.Fatalf("token refused by the Authenticator: %v", pe)
	}
}
