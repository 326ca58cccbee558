package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/store/sqlstore"
)

const issuer = "https://floe.test"

// clock is a settable clock, safe for concurrent use.
type clock = fakeclock.Clock

func newClock() *clock { return fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// openStore opens a fresh SQLite store.
func openStore(t testing.TB, now func() time.Time) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "floe.db"), sqlstore.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newService(t testing.TB, st auth.Store, c *clock, opts auth.Options) *auth.Service {
	t.Helper()
	opts.Issuer, opts.Now = issuer, c.Now
	s := auth.New(st, opts)
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestNarrowScopes(t *testing.T) {
	full := auth.Principal{Name: "etl", Scopes: []string{"catalog"}}
	read := auth.Principal{Name: "bi", Scopes: []string{"catalog:read"}}
	other := auth.Principal{Name: "x", Scopes: []string{"sharing"}}
	tests := []struct {
		name      string
		p         auth.Principal
		requested string
		want      string
		forbidden bool
	}{
		{"empty is all", full, "", "catalog", false},
		{"same", full, "catalog", "catalog", false},
		{"narrow to read", full, "catalog:read", "catalog:read", false},
		{"both", full, "catalog:read catalog", "catalog catalog:read", false},
		{"polaris default", full, "PRINCIPAL_ROLE:ALL", "catalog", false},
		{"read stays read", read, "catalog", "catalog:read", false},
		{"read asks read", read, "catalog:read", "catalog:read", false},
		{"unknown scope", full, "admin", "", true},
		{"no widening by alias", other, "catalog", "", true},
		{"held other scope", other, "sharing", "sharing", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := auth.NarrowScopes(tt.p, tt.requested)
			if tt.forbidden {
				if floe.KindOf(err) != floe.Forbidden {
					t.Fatalf("err = %v, want Forbidden", err)
				}
				return
			}
			must(t, err)
			if strings.Join(got, " ") != tt.want {
				t.Errorf("NarrowScopes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPermit(t *testing.T) {
	tests := []struct {
		scopes      []string
		write, want bool
	}{
		{[]string{"catalog"}, true, true},
		{[]string{"catalog"}, false, true},
		{[]string{"catalog:read"}, false, true},
		{[]string{"catalog:read"}, true, false},
		{[]string{"sharing"}, false, false},
		{nil, false, false},
	}
	for _, tt := range tests {
		err := auth.Claims{Scopes: tt.scopes}.Permit(tt.write, "POST /v1/{prefix}/namespaces")
		if (err == nil) != tt.want {
			t.Errorf("Permit(%v, write=%v) = %v, want allowed=%v", tt.scopes, tt.write, err, tt.want)
		}
		if err != nil && (floe.KindOf(err) != floe.Forbidden ||
			!strings.Contains(err.Error(), "does not allow POST /v1/{prefix}/namespaces")) {
			t.Errorf("Permit error %v", err)
		}
	}
	err := auth.Claims{Scopes: []string{"catalog:read"}}.Permit(true, "DELETE /v1/{prefix}/namespaces/{namespace}")
	if err.Error() != "token scope catalog:read does not allow DELETE /v1/{prefix}/namespaces/{namespace}" {
		t.Errorf("message %q", err)
	}
}

func pemOf(t testing.TB, typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkixPEM(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	must(t, err)
	return pemOf(t, "PUBLIC KEY", der)
}

func TestParsePublicKey(t *testing.T) {
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	privDER, _ := x509.MarshalPKCS8PrivateKey(rsa2048)

	// RFC 7638 §3.1: the example RSA key and its SHA-256 thumbprint.
	n, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	rfcKey := &rsa.PublicKey{N: new(bigInt).SetBytes(n), E: 65537}

	tests := []struct {
		name    string
		pem     []byte
		alg     string
		kid     string
		wantErr string
	}{
		{"rsa 2048", pkixPEM(t, &rsa2048.PublicKey), "RS256", "", ""},
		{"rsa pkcs1", pemOf(t, "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsa2048.PublicKey)), "RS256", "", ""},
		{"rfc 7638 vector", pkixPEM(t, rfcKey), "RS256", "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", ""},
		{"p-256", pkixPEM(t, &p256.PublicKey), "ES256", "", ""},
		{"rsa 1024", pkixPEM(t, &rsa1024.PublicKey), "", "", "RSA key has 1024 bits"},
		{"p-384", pkixPEM(t, &p384.PublicKey), "", "", "only P-256"},
		{"private key", pemOf(t, "PRIVATE KEY", privDER), "", "", "this is a private key"},
		{"not pem", []byte("hello"), "", "", "not a PEM file"},
		{"bad der", pemOf(t, "PUBLIC KEY", []byte{1, 2, 3}), "", "", "cannot parse"},
		{"certificate", pemOf(t, "CERTIFICATE", []byte{1}), "", "", "not a public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, alg, kid, pkix, err := auth.ParsePublicKey(tt.pem)
			if tt.wantErr != "" {
				if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want Invalid containing %q", err, tt.wantErr)
				}
				return
			}
			must(t, err)
			if alg != tt.alg || (tt.kid != "" && kid != tt.kid) || len(kid) != 43 || !strings.HasPrefix(string(pkix), "-----BEGIN PUBLIC KEY-----") {
				t.Errorf("alg %q kid %q pkix %q", alg, kid, pkix)
			}
		})
	}
}

func TestIssueVerify(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	s := newService(t, st, c, auth.Options{})
	ctx := context.Background()
	p, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	tok, err := s.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	if tok.ExpiresIn != 900 || !tok.ExpiresAt.Equal(c.Now().Add(15*time.Minute)) {
		t.Errorf("token lifetime %d s, expires %v", tok.ExpiresIn, tok.ExpiresAt)
	}
	cl, err := s.Verify(ctx, tok.AccessToken)
	must(t, err)
	if cl.Principal != "etl" || cl.TokenID != tok.TokenID || !cl.CanWriteCatalog() {
		t.Errorf("claims %+v", cl)
	}
	c.Advance(15*time.Minute + auth.Leeway)
	if _, err := s.Verify(ctx, tok.AccessToken); floe.KindOf(err) != floe.Unauthenticated {
		t.Errorf("expired token verified: %v", err)
	}
	if _, _, err := s.CreatePrincipal(ctx, "bad", []string{"a b"}, false, "", ""); floe.KindOf(err) != floe.Invalid {
		t.Errorf("scope with a space accepted: %v", err)
	}
}

func TestRotateKey(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	s := newService(t, st, c, auth.Options{})
	other := newService(t, st, c, auth.Options{}) // a second node on the same store
	p, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	old, err := s.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	set, err := s.JWKS(ctx)
	must(t, err)
	if len(set.Keys) != 1 {
		t.Fatalf("JWKS has %d keys, want 1", len(set.Keys))
	}
	oldKID := set.Keys[0].KeyID

	c.Advance(time.Minute)
	newKID, err := s.RotateKey(ctx)
	must(t, err)
	fresh, err := s.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	if kid := headerKID(t, fresh.AccessToken); kid != newKID {
		t.Errorf("new token signed with %s, want %s", kid, newKID)
	}
	set, err = s.JWKS(ctx)
	must(t, err)
	if len(set.Keys) != 2 || set.Keys[0].KeyID != newKID || set.Keys[1].KeyID != oldKID {
		t.Fatalf("JWKS after rotation: %+v", set.Keys)
	}
	for _, tok := range []string{old.AccessToken, fresh.AccessToken} {
		if _, err := s.Verify(ctx, tok); err != nil {
			t.Errorf("verify on the rotating node: %v", err)
		}
		// The other node learns the new key on the unknown kid.
		if _, err := other.Verify(ctx, tok); err != nil {
			t.Errorf("verify on another node: %v", err)
		}
	}
	// The other node signs with the new key once its keys are refreshed.
	c.Advance(2 * time.Minute)
	tok2, err := other.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	if kid := headerKID(t, tok2.AccessToken); kid != newKID {
		t.Errorf("other node signs with %s after the refresh, want %s", kid, newKID)
	}

	// Past the retention the old key is pruned from the store and the JWKS.
	c.Advance(20 * time.Minute)
	_, err = s.RotateKey(ctx)
	must(t, err)
	set, err = s.JWKS(ctx)
	must(t, err)
	for _, k := range set.Keys {
		if k.KeyID == oldKID {
			t.Errorf("retired key %s still published", oldKID)
		}
	}
	if len(set.Keys) != 2 {
		t.Errorf("JWKS has %d keys, want 2 (current and previous)", len(set.Keys))
	}
	stored, err := st.SigningKeys(ctx)
	must(t, err)
	if len(stored) != 2 {
		t.Errorf("store keeps %d keys, want 2", len(stored))
	}
}

func headerKID(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	must(t, err)
	kid, _ := tok.Header["kid"].(string)
	return kid
}

func TestRevokeAcrossNodes(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	a := newService(t, st, c, auth.Options{})
	b := newService(t, st, c, auth.Options{})
	p, _, err := a.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	tok, err := a.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	for _, s := range []*auth.Service{a, b} { // both nodes cache the verified token
		if _, err := s.Verify(ctx, tok.AccessToken); err != nil {
			t.Fatal(err)
		}
	}
	info, err := b.Inspect(ctx, tok.AccessToken)
	must(t, err)
	revoked, err := b.Revoke(ctx, info)
	must(t, err)
	if !revoked {
		t.Fatal("Revoke of a live token reported nothing to do")
	}
	for i, s := range []*auth.Service{a, b} {
		if _, err := s.Verify(ctx, tok.AccessToken); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("node %d still accepts the revoked token: %v", i, err)
		}
		if _, err := s.Refresh(ctx, tok.AccessToken, ""); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("node %d refreshes the revoked token: %v", i, err)
		}
	}
	// Disabling is immediate too.
	tok2, err := a.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	_, err = a.Verify(ctx, tok2.AccessToken)
	must(t, err)
	must(t, st.SetPrincipalDisabled(ctx, "etl", true))
	if _, err := a.Verify(ctx, tok2.AccessToken); floe.KindOf(err) != floe.Unauthenticated {
		t.Errorf("token of a disabled client verified: %v", err)
	}
	// An expired token needs no entry.
	c.Advance(time.Hour)
	if revoked, err := a.Revoke(ctx, info); err != nil || revoked {
		t.Errorf("Revoke of an expired token = %v, %v", revoked, err)
	}
}

func TestAuthenticateSecretCache(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	s := newService(t, st, c, auth.Options{SecretCacheTTL: time.Minute})
	p, secret, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	for i := range 3 {
		if _, err := s.Authenticate(ctx, p.ClientID, secret); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	for _, tt := range []struct{ id, secret, reason string }{
		{p.ClientID, secret + "x", "wrong client secret"},
		{"ghost", secret, "unknown client id"},
	} {
		_, err := s.Authenticate(ctx, tt.id, tt.secret)
		if !errors.Is(err, auth.ErrInvalidClient) || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("Authenticate(%s) = %v, want invalid client (%s)", tt.id, err, tt.reason)
		}
	}
	// Disabling applies although the secret check is cached.
	must(t, st.SetPrincipalDisabled(ctx, "etl", true))
	if _, err := s.Authenticate(ctx, p.ClientID, secret); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("disabled client authenticated: %v", err)
	}
	must(t, st.SetPrincipalDisabled(ctx, "etl", false))
	c.Advance(2 * time.Minute) // cache entry expired: the slow path still works
	if _, err := s.Authenticate(ctx, p.ClientID, secret); err != nil {
		t.Fatal(err)
	}
}

// signer makes JWT assertions for a client.
type signer struct {
	key any // *rsa.PrivateKey or *ecdsa.PrivateKey
	alg string
	kid string
	iss string
}

func (s *signer) claims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": s.iss, "sub": s.iss, "aud": issuer + "/v1/oauth/tokens", "iat": now.Unix(),
		"exp": now.Add(2 * time.Minute).Unix(), "jti": uuid.NewString()}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (s *signer) sign(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	m := jwt.GetSigningMethod(s.alg)
	tok := jwt.NewWithClaims(m, c)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	raw, err := tok.SignedString(s.key)
	must(t, err)
	return raw
}

func newRSASigner(t testing.TB, s *auth.Service, name string) (*signer, *rsa.PrivateKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	ck, err := s.AddClientKey(context.Background(), name, pkixPEM(t, &k.PublicKey))
	must(t, err)
	return &signer{key: k, alg: "RS256", kid: ck.KID}, k
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestVerifyAssertion(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	s := newService(t, st, c, auth.Options{})
	p, _, err := s.CreatePrincipal(ctx, "etl", []string{"catalog:read"}, false, "", "")
	must(t, err)
	rs, rsaKey := newRSASigner(t, s, "etl")
	rs.iss = p.ClientID
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	eck, err := s.AddClientKey(ctx, "etl", pkixPEM(t, &ec.PublicKey))
	must(t, err)
	es := &signer{key: ec, alg: "ES256", kid: eck.KID, iss: p.ClientID}
	pubPEM := pkixPEM(t, &rsaKey.PublicKey)
	dis, _, err := s.CreatePrincipal(ctx, "gone", nil, false, "", "")
	must(t, err)
	ds, _ := newRSASigner(t, s, "gone")
	ds.iss = dis.ClientID
	must(t, st.SetPrincipalDisabled(ctx, "gone", true))

	now := c.Now()
	with := func(sg *signer, edit func(jwt.MapClaims)) func() string {
		return func() string {
			cl := sg.claims(now)
			if edit != nil {
				edit(cl)
			}
			return sg.sign(t, cl)
		}
	}
	replayed := rs.sign(t, rs.claims(now))
	_, err = s.VerifyAssertion(ctx, replayed, "")
	must(t, err)

	tests := []struct {
		name     string
		raw      func() string
		clientID string
		wantMsg  string // "" means valid
	}{
		{"rs256", with(rs, nil), "", ""},
		{"rs256 with client_id", with(rs, nil), p.ClientID, ""},
		{"es256", with(es, nil), "", ""},
		{"aud issuer", with(rs, func(c jwt.MapClaims) { c["aud"] = issuer }), "", ""},
		{"aud list", with(rs, func(c jwt.MapClaims) { c["aud"] = []string{"x", issuer} }), "", ""},
		{"no sub (delta-sharing)", with(rs, func(c jwt.MapClaims) { delete(c, "sub") }), "", ""},
		{"no kid", func() string { k := *rs; k.kid = ""; return k.sign(t, rs.claims(now)) }, "", ""},
		{"skew within leeway", with(rs, func(c jwt.MapClaims) { c["iat"] = now.Add(20 * time.Second).Unix() }), "", ""},
		{"alg none", func() string {
			return b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(rs.claims(now)) + "."
		}, "", "alg \"none\" is not allowed"},
		{"hs256 with the public key", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, rs.claims(now))
			tok.Header["kid"] = rs.kid
			raw, err := tok.SignedString(pubPEM)
			must(t, err)
			return raw
		}, "", "alg \"HS256\" is not allowed"},
		{"alg confusion rs256 header on ec key", func() string {
			k := *es
			k.alg = "ES256"
			raw := k.sign(t, es.claims(now))
			parts := strings.Split(raw, ".")
			return b64(map[string]string{"alg": "RS256", "kid": es.kid}) + "." + parts[1] + "." + parts[2]
		}, "", "not signed by a key registered"},
		{"wrong aud", with(rs, func(c jwt.MapClaims) { c["aud"] = "https://other.example/token" }), "", "aud must be"},
		{"no aud", with(rs, func(c jwt.MapClaims) { delete(c, "aud") }), "", "aud must be"},
		{"expired", with(rs, func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-3*time.Minute).Unix(), now.Add(-time.Minute).Unix()
		}), "", "has expired"},
		{"no exp", with(rs, func(c jwt.MapClaims) { delete(c, "exp") }), "", "no exp"},
		{"future iat", with(rs, func(c jwt.MapClaims) { c["iat"] = now.Add(2 * time.Minute).Unix() }), "", "issued in the future"},
		{"future nbf", with(rs, func(c jwt.MapClaims) { c["nbf"] = now.Add(2 * time.Minute).Unix() }), "", "not valid yet"},
		{"lifetime too long", with(rs, func(c jwt.MapClaims) { c["exp"] = now.Add(10 * time.Minute).Unix() }), "", "exceeds 5 minutes"},
		{"lifetime too long without iat", with(rs, func(c jwt.MapClaims) {
			delete(c, "iat")
			c["exp"] = now.Add(6 * time.Minute).Unix()
		}), "", "exceeds 5 minutes"},
		{"no jti", with(rs, func(c jwt.MapClaims) { delete(c, "jti") }), "", "no jti"},
		{"reused jti", func() string { return replayed }, "", "jti was already used"},
		{"sub differs", with(rs, func(c jwt.MapClaims) { c["sub"] = "admin" }), "", "sub must equal iss"},
		{"client_id differs", with(rs, nil), "someone-else", "does not match client_id"},
		{"unknown client", with(rs, func(c jwt.MapClaims) { c["iss"], c["sub"] = "ghost", "ghost" }), "", "not signed by a key registered"},
		{"disabled client", with(ds, nil), "", "is disabled"},
		{"tampered signature", func() string {
			raw := rs.sign(t, rs.claims(now))
			sig := []byte(raw[strings.LastIndexByte(raw, '.')+1:])
			sig[10] ^= 1
			return raw[:strings.LastIndexByte(raw, '.')+1] + string(sig)
		}, "", "not signed by a key registered"},
		{"tampered payload", func() string {
			raw := rs.sign(t, rs.claims(now))
			parts := strings.Split(raw, ".")
			cl := rs.claims(now)
			cl["sub"] = "x"
			return parts[0] + "." + b64(cl) + "." + parts[2]
		}, "", "not signed by a key registered"},
		{"other client's key", func() string { k := *ds; k.iss = p.ClientID; k.kid = ""; return k.sign(t, rs.claims(now)) }, "", "not signed by a key registered"},
		{"crit header", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, rs.claims(now))
			tok.Header["crit"] = []string{"exp"}
			raw, _ := tok.SignedString(rsaKey)
			return raw
		}, "", "critical header"},
		{"garbage", func() string { return "a.b.c" }, "", "malformed"},
		{"two segments", func() string { return "a.b" }, "", "malformed"},
		{"huge", func() string { return strings.Repeat("a", 20000) }, "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := s.VerifyAssertion(ctx, tt.raw(), tt.clientID)
			if tt.wantMsg == "" {
				must(t, err)
				if sub.Principal.Name != "etl" || sub.Kind != auth.SubjectAssertion || sub.TokenID == "" ||
					strings.Join(sub.Scopes, " ") != "catalog:read" {
					t.Errorf("subject %+v", sub)
				}
				return
			}
			if floe.KindOf(err) != floe.Unauthenticated || !strings.Contains(floe.PublicMessage(err), tt.wantMsg) {
				t.Fatalf("err = %v (public %q), want Unauthenticated with %q", err, floe.PublicMessage(err), tt.wantMsg)
			}
		})
	}
}

// idp is a test identity provider serving a JWKS.
type idp struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	kid     string
	fetches atomic.Int64
	mu      sync.Mutex
	keys    jose.JSONWebKeySet
}

func newIDP(t *testing.T) *idp {
	d := &idp{}
	d.rotate(t)
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fetches.Add(1)
		d.mu.Lock()
		defer d.mu.Unlock()
		_ = json.NewEncoder(w).Encode(d.keys)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *idp) rotate(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.key, d.kid = k, "idp-"+itoa(int64(len(d.keys.Keys)))
	d.keys.Keys = append(d.keys.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: d.kid, Algorithm: "RS256", Use: "sig"})
}

func (d *idp) token(t *testing.T, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = d.kid
	raw, err := tok.SignedString(d.key)
	must(t, err)
	return raw
}

func TestExternalIssuer(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	d := newIDP(t)
	const idpIss = "https://idp.example"
	s := newService(t, st, c, auth.Options{TrustedIssuers: []auth.TrustedIssuer{
		{Issuer: idpIss, JWKSURL: d.srv.URL, Audience: "floe", PrincipalClaim: "email"}}})
	_, _, err := s.CreatePrincipal(ctx, "ann@example.com", []string{"catalog:read"}, false, "", "")
	must(t, err)
	_, _, err = s.CreatePrincipal(ctx, "off@example.com", nil, false, "", "")
	must(t, err)
	must(t, st.SetPrincipalDisabled(ctx, "off@example.com", true))
	now := c.Now()
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		cl := jwt.MapClaims{"iss": idpIss, "sub": "00u1", "email": "ann@example.com", "aud": []string{"floe", "other"},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if edit != nil {
			edit(cl)
		}
		return cl
	}
	sub, err := s.VerifySubjectToken(ctx, d.token(t, claims(nil)))
	must(t, err)
	if sub.Principal.Name != "ann@example.com" || sub.Kind != auth.SubjectExternal || strings.Join(sub.Scopes, " ") != "catalog:read" {
		t.Fatalf("subject %+v", sub)
	}
	// IdP tokens are reusable bearer tokens: no jti replay rule.
	_, err = s.VerifySubjectToken(ctx, d.token(t, claims(nil)))
	must(t, err)

	tests := []struct {
		name string
		raw  func() string
		want string
	}{
		{"wrong aud", func() string { return d.token(t, claims(func(c jwt.MapClaims) { c["aud"] = "x" })) }, "invalid token"},
		{"expired", func() string {
			return d.token(t, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }))
		}, "invalid token"},
		{"unknown principal", func() string { return d.token(t, claims(func(c jwt.MapClaims) { c["email"] = "eve@example.com" })) }, "no Floe principal"},
		{"disabled principal", func() string { return d.token(t, claims(func(c jwt.MapClaims) { c["email"] = "off@example.com" })) }, "disabled"},
		{"no claim", func() string { return d.token(t, claims(func(c jwt.MapClaims) { delete(c, "email") })) }, "missing"},
		{"signed by someone else", func() string {
			k, _ := rsa.GenerateKey(rand.Reader, 2048)
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(nil))
			tok.Header["kid"] = d.kid
			raw, _ := tok.SignedString(k)
			return raw
		}, "invalid token"},
		{"hs256", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
			raw, _ := tok.SignedString([]byte("secret"))
			return raw
		}, "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.VerifySubjectToken(ctx, tt.raw())
			if floe.KindOf(err) != floe.Unauthenticated || !strings.Contains(floe.PublicMessage(err), tt.want) {
				t.Fatalf("err = %v, want Unauthenticated with %q", err, tt.want)
			}
		})
	}

	// A key rotated at the IdP is fetched on its unknown kid, but unknown
	// kids do not make Floe fetch more than once per 30 s.
	before := d.fetches.Load()
	d.rotate(t)
	c.Advance(time.Minute)
	_, err = s.VerifySubjectToken(ctx, d.token(t, claims(nil)))
	must(t, err)
	if n := d.fetches.Load() - before; n != 1 {
		t.Errorf("%d JWKS fetches for a rotated key, want 1", n)
	}
	for range 5 {
		bogus := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(nil))
		bogus.Header["kid"] = "nope"
		raw, _ := bogus.SignedString(d.key)
		if _, err := s.VerifySubjectToken(ctx, raw); err == nil {
			t.Fatal("token with an unknown kid verified")
		}
	}
	if n := d.fetches.Load() - before; n != 1 {
		t.Errorf("%d JWKS fetches after unknown kids, want still 1", n)
	}
}

// FuzzVerifyAssertion: any input to the assertion and subject token paths
// yields a subject or an Unauthenticated error, never a panic.
func FuzzVerifyAssertion(f *testing.F) {
	c := newClock()
	st := openStore(f, c.Now)
	s := newService(f, st, c, auth.Options{})
	ctx := context.Background()
	p, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "etl-client", "")
	must(f, err)
	sg, _ := newRSASigner(f, s, "etl")
	sg.iss = p.ClientID
	good := sg.sign(f, sg.claims(c.Now()))
	f.Add(good)
	f.Add(b64(map[string]string{"alg": "none"}) + "." + b64(map[string]any{"iss": "etl-client"}) + ".")
	f.Add(b64(map[string]any{"alg": "RS256", "kid": 7, "crit": []int{1}}) + "." + b64(map[string]any{"iss": 5, "aud": []any{1}}) + ".x")
	f.Add(b64(map[string]string{"alg": "ES256"}) + "." + b64(map[string]any{"iss": "etl-client", "exp": "soon"}) + ".AAAA")
	f.Add("..")
	f.Add("eyJ.eyJ.")
	f.Fuzz(func(t *testing.T, raw string) {
		for _, fn := range []func() (auth.Subject, error){
			func() (auth.Subject, error) { return s.VerifyAssertion(ctx, raw, "") },
			func() (auth.Subject, error) { return s.VerifySubjectToken(ctx, raw) },
		} {
			sub, err := fn()
			if err == nil {
				if sub.Principal.Name != "etl" {
					t.Fatalf("verified an assertion for %+v", sub)
				}
				continue
			}
			if k := floe.KindOf(err); k != floe.Unauthenticated {
				t.Fatalf("error of kind %v: %v", k, err)
			}
		}
	})
}

type bigInt = big.Int // RFC 7638 vector modulus

// TestSigningAlg: a node configured for RS256 signs RS256; switching to
// ES256 rotates the key at Init and the RS256 tokens keep verifying; a
// token whose header names another alg than its key's is refused.
func TestSigningAlg(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	rs := newService(t, st, c, auth.Options{SigningAlg: auth.AlgRS256})
	p, _, err := rs.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	old, err := rs.Issue(ctx, p, p.Scopes)
	must(t, err)
	if alg := headerAlg(t, old.AccessToken); alg != "RS256" {
		t.Fatalf("alg %s, want RS256", alg)
	}
	c.Advance(time.Second)
	es := newService(t, st, c, auth.Options{}) // default ES256: rotates at Init
	fresh, err := es.Issue(ctx, p, p.Scopes)
	must(t, err)
	if alg := headerAlg(t, fresh.AccessToken); alg != "ES256" {
		t.Fatalf("alg %s, want ES256", alg)
	}
	for _, tok := range []string{old.AccessToken, fresh.AccessToken} {
		if _, err := es.Verify(ctx, tok); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
	// Re-label the ES256 token as RS256 (and as HS256): refused.
	parts := strings.Split(fresh.AccessToken, ".")
	for _, alg := range []string{"RS256", "HS256", "none"} {
		forged := b64(map[string]string{"alg": alg, "kid": headerKID(t, fresh.AccessToken), "typ": "JWT"}) + "." + parts[1] + "." + parts[2]
		if _, err := es.Verify(ctx, forged); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("token relabelled %s: %v", alg, err)
		}
	}
}

func headerAlg(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	must(t, err)
	alg, _ := tok.Header["alg"].(string)
	return alg
}

// TestLoadedSigningKeysBounded: a node holds at most 32 signing keys in
// memory, the newest. With 40 in the store, a token signed under the
// oldest (beyond the bound) does not verify on a node that starts then;
// one that node issues does.
func TestLoadedSigningKeysBounded(t *testing.T) {
	c := newClock()
	st := openStore(t, c.Now)
	ctx := context.Background()
	first := newService(t, st, c, auth.Options{})
	p, _, err := first.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(t, err)
	old, err := first.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	for i := range 39 {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
		der, err := x509.MarshalPKCS8PrivateKey(k)
		must(t, err)
		must(t, st.AddSigningKey(ctx, auth.SigningKey{KID: fmt.Sprintf("bound-%02d", i),
			PrivatePEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), CreatedAt: c.Now().Add(time.Duration(i+1) * time.Second)}))
	}
	c.Advance(time.Minute)
	node := newService(t, st, c, auth.Options{})
	if _, err := node.Verify(ctx, old.AccessToken); err == nil {
		t.Fatal("a token under the 40th newest signing key verified: more than 32 keys are held")
	}
	fresh, err := node.Issue(ctx, p, []string{"catalog"})
	must(t, err)
	if _, err := node.Verify(ctx, fresh.AccessToken); err != nil {
		t.Fatalf("a token under the newest key: %v", err)
	}
}
