package oauth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/oauth"
	"github.com/floe-lake/floe/store/sqlstore"
)

const issuer = "http://floe.test"

// clock is a settable clock, safe for concurrent use.
type clock = fakeclock.Clock

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// env is an OAuth handler over a fresh store with a fake clock, served by
// httptest: the real HTTP path without the catalog.
type env struct {
	clock *clock
	store *sqlstore.Store
	auth  *auth.Service
	audit *audit.Log
	h     *oauth.Handler
	srv   *httptest.Server
	logs  *syncBuffer

	etl       auth.Principal
	etlSecret string
	etlKey    *signer
	secrets   []string // never to appear in logs or the audit log
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newEnv(t testing.TB, failuresPerMinute int) *env {
	t.Helper()
	e := &env{clock: fakeclock.New(time.Now().UTC().Truncate(time.Second)), logs: &syncBuffer{}}
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "floe.db"), sqlstore.Options{Now: e.clock.Now})
	must(t, err)
	t.Cleanup(func() { st.Close() })
	e.store = st
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.auth = auth.New(st, auth.Options{Issuer: issuer, Now: e.clock.Now, Logger: log})
	must(t, e.auth.Init(context.Background()))
	e.audit = audit.New(st, audit.Options{Now: e.clock.Now, Logger: log})
	e.h = oauth.New(e.auth, oauth.Options{Logger: log, Audit: e.audit, Now: e.clock.Now, FailuresPerMinute: failuresPerMinute})
	e.srv = httptest.NewServer(e.h)
	t.Cleanup(e.srv.Close)
	e.etl, e.etlSecret, err = e.auth.CreatePrincipal(context.Background(), "etl", nil, false, "etl-client", "")
	must(t, err)
	e.etlKey = e.addRSAKey(t, "etl", e.etl.ClientID)
	e.secrets = append(e.secrets, e.etlSecret)
	return e
}

// signer makes JWT assertions for one client.
type signer struct {
	key any
	alg string
	kid string
	iss string
	pub []byte // PKIX PEM
}

func (e *env) addRSAKey(t testing.TB, name, clientID string) *signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	must(t, err)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ck, err := e.auth.AddClientKey(context.Background(), name, pub)
	must(t, err)
	return &signer{key: k, alg: "RS256", kid: ck.KID, iss: clientID, pub: pub}
}

func (e *env) addECKey(t testing.TB, name, clientID string) *signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	must(t, err)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ck, err := e.auth.AddClientKey(context.Background(), name, pub)
	must(t, err)
	return &signer{key: k, alg: "ES256", kid: ck.KID, iss: clientID, pub: pub}
}

func (s *signer) claims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": s.iss, "sub": s.iss, "aud": issuer + "/v1/oauth/tokens", "iat": now.Unix(),
		"exp": now.Add(2 * time.Minute).Unix(), "jti": uuid.NewString()}
}

func (s *signer) sign(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(s.alg), c)
	tok.Header["kid"] = s.kid
	raw, err := tok.SignedString(s.key)
	must(t, err)
	return raw
}

func (s *signer) assertion(t testing.TB, now time.Time, edit func(jwt.MapClaims)) string {
	c := s.claims(now)
	if edit != nil {
		edit(c)
	}
	return s.sign(t, c)
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// reply is a captured response.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r reply) str(k string) string { s, _ := r.body[k].(string); return s }

// post sends a form; basic, if given, is a client id and secret for HTTP Basic.
func post(t testing.TB, u string, form url.Values, rid string, basic ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rid != "" {
		req.Header.Set("X-Request-Id", rid)
	}
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

func (e *env) token(t testing.TB, form url.Values, rid string, basic ...string) reply {
	t.Helper()
	return post(t, e.srv.URL+oauth.TokenPath, form, rid, basic...)
}

// record returns the audit record of a request id.
func (e *env) record(t testing.TB, rid string) audit.Record {
	t.Helper()
	rs, err := e.store.AuditRecords(context.Background(), 0, 100000)
	must(t, err)
	for _, r := range rs {
		if r.RequestID == rid {
			return r
		}
	}
	t.Fatalf("no audit record for request %s", rid)
	return audit.Record{}
}

func detailOf(t testing.TB, r audit.Record) map[string]any {
	t.Helper()
	var d map[string]any
	must(t, json.Unmarshal(r.Detail, &d))
	return d
}

const (
	exchange   = oauth.GrantTokenExchange
	jwtType    = oauth.TokenTypeJWT
	accessType = oauth.TokenTypeAccessToken
)

func TestTokenGrants(t *testing.T) {
	e := newEnv(t, -1)
	now := e.clock.Now()
	es := e.addECKey(t, "etl", e.etl.ClientID)
	ctx := context.Background()
	_, _, err := e.auth.CreatePrincipal(ctx, "bi", []string{"catalog:read"}, false, "bi-client", "bi-secret")
	must(t, err)
	e.secrets = append(e.secrets, "bi-secret")
	refreshable := e.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"},
		"client_secret": {e.etlSecret}}, "")
	if refreshable.status != 200 {
		t.Fatalf("client credentials: %d %s", refreshable.status, refreshable.raw)
	}
	floeToken := refreshable.str("access_token")
	clientAssertion := func(edit func(jwt.MapClaims)) url.Values {
		return url.Values{"client_assertion_type": {oauth.ClientAssertionJWT}, "client_assertion": {e.etlKey.assertion(t, now, edit)}}
	}
	with := func(v url.Values, kv ...string) url.Values {
		out := url.Values{}
		for k, vs := range v {
			out[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name      string
		form      url.Values
		basic     []string
		principal string
		scope     string
		method    string
		subject   string
	}{
		{"client_secret_post", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"},
			"client_secret": {e.etlSecret}, "scope": {"catalog"}}, nil, "etl", "catalog", "client_secret_post", ""},
		{"client_secret_basic", url.Values{"grant_type": {"client_credentials"}}, []string{"etl-client", e.etlSecret},
			"etl", "catalog", "client_secret_basic", ""},
		{"basic with client_id in body", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}},
			[]string{"etl-client", e.etlSecret}, "etl", "catalog", "client_secret_basic", ""},
		{"private_key_jwt", with(clientAssertion(nil), "grant_type", "client_credentials"), nil, "etl", "catalog", "private_key_jwt", ""},
		{"private_key_jwt narrowed", with(clientAssertion(nil), "grant_type", "client_credentials", "scope", "catalog:read",
			"client_id", "etl-client"), nil, "etl", "catalog:read", "private_key_jwt", ""},
		{"exchange rs256 assertion", url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType},
			"subject_token": {e.etlKey.assertion(t, now, nil)}}, nil, "etl", "catalog", "none", auth.SubjectAssertion},
		{"exchange es256 assertion", url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType},
			"subject_token": {es.assertion(t, now, nil)}, "scope": {"catalog:read"}}, nil, "etl", "catalog:read", "none", auth.SubjectAssertion},
		{"exchange with client auth", url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType},
			"subject_token": {e.etlKey.assertion(t, now, nil)}}, []string{"bi-client", "bi-secret"}, "etl", "catalog", "client_secret_basic", auth.SubjectAssertion},
		{"jwt-bearer grant", url.Values{"grant_type": {oauth.GrantJWTBearer}, "assertion": {e.etlKey.assertion(t, now, nil)}},
			nil, "etl", "catalog", "none", auth.SubjectAssertion},
		{"refresh", url.Values{"grant_type": {exchange}, "subject_token_type": {accessType}, "subject_token": {floeToken}},
			nil, "etl", "catalog", "none", auth.SubjectFloeToken},
		{"refresh narrowed", url.Values{"grant_type": {exchange}, "subject_token_type": {accessType}, "subject_token": {floeToken},
			"scope": {"catalog:read"}}, nil, "etl", "catalog:read", "none", auth.SubjectFloeToken},
		{"read-only principal asking catalog", url.Values{"grant_type": {"client_credentials"}, "client_id": {"bi-client"},
			"client_secret": {"bi-secret"}, "scope": {"catalog"}}, nil, "bi", "catalog:read", "client_secret_post", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rid := "ok-" + strings.ReplaceAll(tt.name, " ", "-")
			r := e.token(t, tt.form, rid, tt.basic...)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			if r.str("token_type") != "bearer" || r.body["expires_in"] != float64(900) ||
				r.str("issued_token_type") != accessType || r.str("scope") != tt.scope || r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("response %s", r.raw)
			}
			c, err := e.auth.Verify(ctx, r.str("access_token"))
			must(t, err)
			if c.Principal != tt.principal || strings.Join(c.Scopes, " ") != tt.scope {
				t.Errorf("token claims %+v", c)
			}
			rec := e.record(t, rid)
			d := detailOf(t, rec)
			if rec.Outcome != audit.OutcomeSuccess || rec.Principal != tt.principal || rec.Action != oauth.ActionToken ||
				d["token_id"] != c.TokenID || d["auth_method"] != tt.method || d["scope"] != tt.scope ||
				(tt.subject != "" && d["subject_kind"] != tt.subject) || rec.ClientAddr != "127.0.0.1" {
				t.Errorf("audit record %+v detail %s", rec, rec.Detail)
			}
		})
	}
	e.checkNoSecrets(t)
}

// checkNoSecrets fails if a secret, token or assertion is in the logs or the audit log.
func (e *env) checkNoSecrets(t *testing.T) {
	t.Helper()
	rs, err := e.store.AuditRecords(context.Background(), 0, 100000)
	must(t, err)
	var all strings.Builder
	all.WriteString(e.logs.String())
	for _, r := range rs {
		all.Write(r.Detail)
		all.WriteString(r.Principal + r.Resource)
	}
	text := all.String()
	for _, s := range e.secrets {
		if strings.Contains(text, s) {
			t.Errorf("secret %q... appears in the logs or the audit log", s[:min(8, len(s))])
		}
	}
	// No JWT (header.payload...) either: they start with eyJ.
	if strings.Contains(text, "eyJ") {
		t.Errorf("a JWT appears in the logs or the audit log")
	}
	if err := e.audit.Verify(context.Background()); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}

func TestTokenRefusals(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	now := e.clock.Now()
	off, offSecret, err := e.auth.CreatePrincipal(ctx, "off", nil, false, "off-client", "")
	must(t, err)
	offKey := e.addRSAKey(t, "off", off.ClientID)
	must(t, e.store.SetPrincipalDisabled(ctx, "off", true))
	e.secrets = append(e.secrets, offSecret)

	good := e.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}, "client_secret": {e.etlSecret}}, "")
	revoked := good.str("access_token")
	info, err := e.auth.Inspect(ctx, revoked)
	must(t, err)
	_, err = e.auth.Revoke(ctx, info)
	must(t, err)
	used := e.etlKey.assertion(t, now, nil)
	if r := e.token(t, url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType}, "subject_token": {used}}, ""); r.status != 200 {
		t.Fatalf("first use: %s", r.raw)
	}

	xchg := func(subject string) url.Values {
		return url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType}, "subject_token": {subject}}
	}
	assertion := func(edit func(jwt.MapClaims)) url.Values { return xchg(e.etlKey.assertion(t, now, edit)) }
	tampered := func() string {
		raw := e.etlKey.assertion(t, now, nil)
		i := strings.LastIndexByte(raw, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(raw[i+1:])
		sig[0] ^= 0x80
		return raw[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
	}
	hsPublic := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, e.etlKey.claims(now))
		tok.Header["kid"] = e.etlKey.kid
		raw, err := tok.SignedString(e.etlKey.pub)
		must(t, err)
		return raw
	}
	clientAssertion := func(edit func(jwt.MapClaims)) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {oauth.ClientAssertionJWT},
			"client_assertion": {e.etlKey.assertion(t, now, edit)}}
	}
	ccPost := func(id, secret string) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	}
	tests := []struct {
		name   string
		form   url.Values
		basic  []string
		status int
		code   string
		reason string // in the audit record
	}{
		{"alg none", xchg(b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(e.etlKey.claims(now)) + "."), nil,
			400, "invalid_grant", `alg "none" refused`},
		{"hs256 signed with the public key", xchg(hsPublic()), nil, 400, "invalid_grant", `alg "HS256" refused`},
		{"wrong aud", assertion(func(c jwt.MapClaims) { c["aud"] = "https://elsewhere.example/token" }), nil, 400, "invalid_grant", "aud must be"},
		{"expired", assertion(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-5*time.Minute).Unix(), now.Add(-2*time.Minute).Unix()
		}), nil, 400, "invalid_grant", "expired"},
		{"future iat", assertion(func(c jwt.MapClaims) { c["iat"] = now.Add(3 * time.Minute).Unix() }), nil, 400, "invalid_grant", "issued in the future"},
		{"future nbf", assertion(func(c jwt.MapClaims) { c["nbf"] = now.Add(3 * time.Minute).Unix() }), nil, 400, "invalid_grant", "not valid yet"},
		{"too long lived", assertion(func(c jwt.MapClaims) { c["exp"] = now.Add(time.Hour).Unix() }), nil, 400, "invalid_grant", "exceeds 5 minutes"},
		{"reused jti", xchg(used), nil, 400, "invalid_grant", "jti replayed"},
		{"tampered signature", xchg(tampered()), nil, 400, "invalid_grant", "signature is invalid"},
		{"unknown client assertion", assertion(func(c jwt.MapClaims) { c["iss"], c["sub"] = "ghost", "ghost" }), nil, 400, "invalid_grant", "unknown client id"},
		{"disabled client assertion", xchg(offKey.assertion(t, now, nil)), nil, 400, "invalid_grant", "client is disabled"},
		{"revoked token refresh", url.Values{"grant_type": {exchange}, "subject_token_type": {accessType}, "subject_token": {revoked}},
			nil, 400, "invalid_grant", "token was revoked"},
		{"garbage subject token", xchg("not.a.jwt"), nil, 400, "invalid_grant", "not a well-formed JWT"},
		{"unknown client secret", ccPost("ghost", "x"), nil, 401, "invalid_client", "unknown client id"},
		{"wrong secret", ccPost("etl-client", "nope"), nil, 401, "invalid_client", "wrong client secret"},
		{"wrong secret basic", url.Values{"grant_type": {"client_credentials"}}, []string{"etl-client", "nope"}, 401, "invalid_client", "wrong client secret"},
		{"disabled client secret", ccPost("off-client", offSecret), nil, 401, "invalid_client", "client is disabled"},
		{"client assertion expired", clientAssertion(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-5*time.Minute).Unix(), now.Add(-2*time.Minute).Unix()
		}), nil, 401, "invalid_client", "expired"},
		{"client assertion wrong aud", clientAssertion(func(c jwt.MapClaims) { c["aud"] = "floe" }), nil, 401, "invalid_client", "aud must be"},
		{"client assertion other client_id", func() url.Values {
			v := clientAssertion(nil)
			v.Set("client_id", "off-client")
			return v
		}(), nil, 401, "invalid_client", "does not match"},
		{"client assertion type wrong", func() url.Values {
			v := clientAssertion(nil)
			v.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
			return v
		}(), nil, 400, "invalid_request", "client_assertion_type must be"},
		{"two client auth methods", ccPost("etl-client", e.etlSecret), []string{"etl-client", e.etlSecret}, 400, "invalid_request", "exactly one"},
		{"no client auth", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}}, nil, 401, "invalid_client", "required"},
		{"widen scope", func() url.Values { v := ccPost("etl-client", e.etlSecret); v.Set("scope", "admin"); return v }(), nil,
			400, "invalid_scope", "not granted"},
		{"missing subject token", url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType}}, nil, 400, "invalid_request", "required"},
		{"actor token", func() url.Values {
			v := assertion(nil)
			v.Set("actor_token", "x")
			v.Set("actor_token_type", jwtType)
			return v
		}(), nil, 400, "invalid_request", "actor_token"},
		{"saml subject", func() url.Values {
			v := assertion(nil)
			v.Set("subject_token_type", "urn:ietf:params:oauth:token-type:saml2")
			return v
		}(),
			nil, 400, "invalid_request", "not supported"},
		{"jwt-bearer reused", url.Values{"grant_type": {oauth.GrantJWTBearer}, "assertion": {used}}, nil, 400, "invalid_grant", "jti replayed"},
		{"jwt-bearer without assertion", url.Values{"grant_type": {oauth.GrantJWTBearer}}, nil, 400, "invalid_request", "assertion is required"},
		{"unsupported grant", url.Values{"grant_type": {"password"}, "username": {"a"}, "password": {"b"}}, nil, 400, "unsupported_grant_type", "password"},
		{"no grant", url.Values{}, nil, 400, "invalid_request", "grant_type is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rid := "no-" + strings.ReplaceAll(tt.name, " ", "-")
			r := e.token(t, tt.form, rid, tt.basic...)
			if r.status != tt.status || r.str("error") != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
			if r.str("access_token") != "" {
				t.Fatal("refusal carries a token")
			}
			if tt.status == 401 && tt.basic != nil && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 to Basic credentials without WWW-Authenticate")
			}
			rec := e.record(t, rid)
			d := detailOf(t, rec)
			if rec.Outcome != audit.OutcomeFailure || d["error"] != tt.code || !strings.Contains(d["reason"].(string), tt.reason) {
				t.Errorf("audit record %+v detail %s, want error %s and reason with %q", rec, rec.Detail, tt.code, tt.reason)
			}
		})
	}
	e.checkNoSecrets(t)
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, 3)
	wrong := url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}, "client_secret": {"wrong"}}
	right := url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}, "client_secret": {e.etlSecret}}
	for i := range 3 {
		if r := e.token(t, wrong, ""); r.status != 401 {
			t.Fatalf("failure %d: %d %s", i, r.status, r.raw)
		}
	}
	count429 := func() int {
		rs, err := e.store.AuditRecords(context.Background(), 0, 1000)
		must(t, err)
		n := 0
		for _, r := range rs {
			if strings.Contains(string(r.Detail), "too many failed attempts") {
				n++
			}
		}
		return n
	}
	for i, f := range []url.Values{wrong, right, wrong} { // even the right secret waits
		r := e.token(t, f, "")
		if r.status != http.StatusTooManyRequests || r.str("error") != "invalid_client" ||
			r.str("error_description") != "too many failed attempts; retry after 20 s" || r.header.Get("Retry-After") != "20" {
			t.Fatalf("attempt %d while blocked: %d %v %s", i, r.status, r.header, r.raw)
		}
	}
	if n := count429(); n != 1 {
		t.Errorf("%d rate-limit refusals audited, want 1 per blocked period", n)
	}
	e.clock.Advance(20 * time.Second)
	if r := e.token(t, right, ""); r.status != 200 {
		t.Fatalf("after the refill: %d %s", r.status, r.raw)
	}
	// Per address: failures spread over client ids still block the address.
	e.clock.Advance(time.Minute)
	for i := range 3 {
		r := e.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {uuid.NewString()}, "client_secret": {"x"}}, "")
		if r.status != 401 {
			t.Fatalf("unknown client %d: %d", i, r.status)
		}
	}
	if r := e.token(t, right, ""); r.status != http.StatusTooManyRequests {
		t.Fatalf("address not limited: %d %s", r.status, r.raw)
	}
	// Requests that fail for other reasons do not count.
	e.clock.Advance(time.Minute)
	for range 5 {
		if r := e.token(t, url.Values{"grant_type": {"password"}}, ""); r.status != 400 {
			t.Fatal(r.raw)
		}
	}
	if r := e.token(t, right, ""); r.status != 200 {
		t.Fatalf("malformed requests counted as failed attempts: %d %s", r.status, r.raw)
	}
}

func TestRevocation(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	_, _, err := e.auth.CreatePrincipal(ctx, "root", nil, true, "root-client", "root-secret")
	must(t, err)
	_, _, err = e.auth.CreatePrincipal(ctx, "bi", nil, false, "bi-client", "bi-secret")
	must(t, err)
	e.secrets = append(e.secrets, "root-secret", "bi-secret")
	tok := func() string {
		r := e.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}, "client_secret": {e.etlSecret}}, "")
		return r.str("access_token")
	}
	revoke := func(rid, token string, basic ...string) reply {
		return post(t, e.srv.URL+oauth.RevokePath, url.Values{"token": {token}, "token_type_hint": {"access_token"}}, rid, basic...)
	}
	own, other, byAdmin := tok(), tok(), tok()
	tests := []struct {
		name    string
		token   string
		basic   []string
		status  int
		code    string
		revoked bool
	}{
		{"own token", own, []string{"etl-client", e.etlSecret}, 200, "", true},
		{"twice", own, []string{"etl-client", e.etlSecret}, 200, "", true},
		{"another client's token", other, []string{"bi-client", "bi-secret"}, 400, "unauthorized_client", false},
		{"admin revokes any", byAdmin, []string{"root-client", "root-secret"}, 200, "", true},
		{"not a floe token", "garbage", []string{"etl-client", e.etlSecret}, 200, "", false},
		{"no client auth", other, nil, 401, "invalid_client", false},
		{"wrong secret", other, []string{"etl-client", "nope"}, 401, "invalid_client", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rid := "rv-" + strings.ReplaceAll(tt.name, " ", "-")
			r := revoke(rid, tt.token, tt.basic...)
			if r.status != tt.status || r.str("error") != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
			rec := e.record(t, rid)
			if rec.Action != oauth.ActionRevoke || (rec.Outcome == audit.OutcomeSuccess) != (tt.status == 200) {
				t.Errorf("audit record %+v %s", rec, rec.Detail)
			}
			if tt.revoked {
				if _, err := e.auth.Verify(ctx, tt.token); err == nil {
					t.Error("revoked token still verifies")
				}
				if d := detailOf(t, rec); d["result"] != "revoked" || d["token_id"] == "" {
					t.Errorf("audit detail %s", rec.Detail)
				}
			}
		})
	}
	if _, err := e.auth.Verify(ctx, other); err != nil {
		t.Errorf("a refused revocation revoked the token: %v", err)
	}
	e.checkNoSecrets(t)
}

// FuzzTokenRequest: any form body gets a JSON answer with a token or an
// RFC 6749 error code, never a panic or a 500.
func FuzzTokenRequest(f *testing.F) {
	e := newEnv(f, -1)
	now := e.clock.Now()
	f.Add("grant_type=client_credentials&client_id=etl-client&client_secret=" + e.etlSecret)
	f.Add("grant_type=" + url.QueryEscape(exchange) + "&subject_token_type=" + url.QueryEscape(jwtType) + "&subject_token=" +
		e.etlKey.assertion(f, now.Add(time.Hour), nil))
	f.Add("grant_type=client_credentials&client_assertion_type=" + url.QueryEscape(oauth.ClientAssertionJWT) + "&client_assertion=a.b.c")
	f.Add("grant_type=" + url.QueryEscape(oauth.GrantJWTBearer) + "&assertion=eyJhbGciOiJub25lIn0.e30.")
	f.Add("grant_type=%zz")
	codes := map[string]bool{"invalid_request": true, "invalid_client": true, "invalid_grant": true, "invalid_scope": true,
		"unsupported_grant_type": true, "unauthorized_client": true}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, oauth.TokenPath, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("status %d, body not JSON: %q", w.Code, w.Body)
		}
		switch w.Code {
		case 200:
			if out["access_token"] == "" {
				t.Fatalf("200 without a token: %v", out)
			}
		case 400, 401:
			if code, _ := out["error"].(string); !codes[code] {
				t.Fatalf("status %d with error %q", w.Code, code)
			}
		default:
			t.Fatalf("status %d: %v", w.Code, out)
		}
	})
}
