package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// TestRotateSecret: after a rotation the new secret works; the old one is
// refused at once without a grace period, and until the grace period ends
// with one; only the secret just replaced is kept. A secret check cached
// before the rotation does not keep the old secret working.
func TestRotateSecret(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		// after is how long after the rotation the old secret is tried.
		after   time.Duration
		oldWork bool
	}{
		{"no grace", 0, 0, false},
		{"within the grace period", time.Hour, 59 * time.Minute, true},
		{"after the grace period", time.Hour, time.Hour + time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			st := openStore(t, c.Now)
			ctx := context.Background()
			s := newService(t, st, c, auth.Options{SecretCacheTTL: 24 * time.Hour})
			p, old, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
			must(t, err)
			_, err = s.Authenticate(ctx, p.ClientID, old) // cached
			must(t, err)
			tok, err := s.Issue(ctx, p, []string{"catalog"})
			must(t, err)

			rp, secret, err := s.RotateSecret(ctx, "etl", tt.grace)
			must(t, err)
			if secret == "" || secret == old || rp.ClientID != p.ClientID || rp.SecretHash == p.SecretHash {
				t.Fatalf("rotation gave secret %q (old %q), client %q, same hash %v", secret, old, rp.ClientID, rp.SecretHash == p.SecretHash)
			}
			// Tokens issued before stay valid (until RevokeTokens).
			if _, err := s.Verify(ctx, tok.AccessToken); err != nil {
				t.Errorf("token issued before the rotation: %v", err)
			}
			c.Advance(tt.after)
			if _, err := s.Authenticate(ctx, p.ClientID, secret); err != nil {
				t.Errorf("new secret: %v", err)
			}
			_, err = s.Authenticate(ctx, p.ClientID, old)
			if tt.oldWork && err != nil {
				t.Errorf("old secret within the grace period: %v", err)
			}
			if !tt.oldWork && !errors.Is(err, auth.ErrInvalidClient) {
				t.Errorf("old secret = %v, want invalid client", err)
			}
		})
	}
}

// TestRotateSecretKeepsOneOld: a second rotation within the grace period
// forgets the first secret.
func TestRotateSecretKeepsOneOld(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	s := newService(t, st, c, auth.Options{})
	p, first, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	_, second, err := s.RotateSecret(ctx, "etl", time.Hour)
	must(t, err)
	_, third, err := s.RotateSecret(ctx, "etl", time.Hour)
	must(t, err)
	for _, tt := range []struct {
		name, secret string
		ok           bool
	}{{"first", first, false}, {"second", second, true}, {"third", third, true}} {
		if _, err := s.Authenticate(ctx, p.ClientID, tt.secret); (err == nil) != tt.ok {
			t.Errorf("%s secret: err = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestRotateSecretErrors(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	s := newService(t, st, c, auth.Options{})
	_, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	for _, tt := range []struct {
		name  string
		who   string
		grace time.Duration
		want  floe.Kind
	}{
		{"unknown principal", "ghost", 0, floe.NotFound},
		{"negative grace", "etl", -time.Second, floe.Invalid},
		{"grace too long", "etl", auth.MaxSecretGrace + time.Second, floe.Invalid},
	} {
		if _, _, err := s.RotateSecret(ctx, tt.who, tt.grace); floe.KindOf(err) != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := s.RevokeTokens(ctx, "ghost"); floe.KindOf(err) != floe.NotFound {
		t.Errorf("RevokeTokens(ghost) = %v, want NotFound", err)
	}
}

// TestRevokeTokensAcrossNodes: revoking a principal's tokens on one node
// refuses every token issued before on every node, even one issued within
// the same second; a token issued afterwards, in that same second too,
// works; other principals' tokens are untouched.
func TestRevokeTokensAcrossNodes(t *testing.T) {
	c := newClock()
	c.Advance(300 * time.Millisecond) // mid-second
	st := openStore(t, c.Now)
	ctx := context.Background()
	a := newService(t, st, c, auth.Options{})
	b := newService(t, st, c, auth.Options{})
	p, secret, err := a.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	other, _, err := a.CreatePrincipal(ctx, "bi", nil, false, "", "")
	must(t, err)
	var before []auth.Token
	for range 2 {
		tok, err := a.Issue(ctx, p, []string{"catalog"})
		must(t, err)
		before = append(before, tok)
		c.Advance(400 * time.Millisecond)
	}
	otherTok, err := a.Issue(ctx, other, []string{"catalog"})
	must(t, err)
	for _, s := range []*auth.Service{a, b} { // both nodes cache the verified tokens
		for _, tok := range before {
			_, err := s.Verify(ctx, tok.AccessToken)
			must(t, err)
		}
	}
	_, err = b.RevokeTokens(ctx, "etl")
	must(t, err)
	for i, s := range []*auth.Service{a, b} {
		for j, tok := range before {
			if _, err := s.Verify(ctx, tok.AccessToken); !errors.Is(err, auth.ErrInvalidToken) {
				t.Errorf("node %d accepts token %d issued before the revocation: %v", i, j, err)
			}
			if _, err := s.Refresh(ctx, tok.AccessToken, ""); floe.KindOf(err) != floe.Unauthenticated {
				t.Errorf("node %d refreshes token %d issued before the revocation: %v", i, j, err)
			}
		}
		if _, err := s.Verify(ctx, otherTok.AccessToken); err != nil {
			t.Errorf("node %d refuses another principal's token: %v", i, err)
		}
	}
	// A new token, in the same second, from a fresh authentication.
	fresh, err := a.Authenticate(ctx, p.ClientID, secret)
	must(t, err)
	tok, err := a.Issue(ctx, fresh, []string{"catalog"})
	must(t, err)
	for i, s := range []*auth.Service{a, b} {
		if _, err := s.Verify(ctx, tok.AccessToken); err != nil {
			t.Errorf("node %d refuses the token issued after the revocation: %v", i, err)
		}
	}
	refreshed, err := b.Refresh(ctx, tok.AccessToken, "")
	must(t, err)
	if _, err := a.Verify(ctx, refreshed.AccessToken); err != nil {
		t.Errorf("token refreshed after the revocation refused: %v", err)
	}
	// A second revocation within the same second refuses the tokens issued
	// since the first.
	c.Advance(time.Millisecond)
	_, err = a.RevokeTokens(ctx, "etl")
	must(t, err)
	for i, raw := range []string{tok.AccessToken, refreshed.AccessToken} {
		if _, err := b.Verify(ctx, raw); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("token %d issued between two revocations within a second accepted: %v", i, err)
		}
	}
}

// TestIssueAfterRevocationOnABehindClock: a node whose clock is behind the
// revoking node's still issues tokens that work.
func TestIssueAfterRevocationOnABehindClock(t *testing.T) {
	c := newClock()
	behind := newClock()
	behind.Advance(-2 * time.Second)
	st := openStore(t, c.Now)
	ctx := context.Background()
	a := newService(t, st, c, auth.Options{})
	b := newService(t, st, behind, auth.Options{})
	_, secret, err := a.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	_, err = a.RevokeTokens(ctx, "etl")
	must(t, err)
	p, err := st.PrincipalByName(ctx, "etl")
	must(t, err)
	fresh, err := b.Authenticate(ctx, p.ClientID, secret)
	must(t, err)
	tok, err := b.Issue(ctx, fresh, []string{"catalog"})
	must(t, err)
	for i, s := range []*auth.Service{a, b} {
		if _, err := s.Verify(ctx, tok.AccessToken); err != nil {
			t.Errorf("node %d refuses a token issued after the revocation by a node behind: %v", i, err)
		}
	}
}
