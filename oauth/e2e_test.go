package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/oauth"
)

func getJSON(t *testing.T, u string, v any) http.Header {
	t.Helper()
	resp, err := http.Get(u)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	must(t, json.NewDecoder(resp.Body).Decode(v))
	return resp.Header
}

// TestMetadata checks RFC 8414 metadata, OpenID discovery and the JWKS as
// served by a whole Floe node, and verifies a token with the published key.
func TestMetadata(t *testing.T) {
	f := testkit.Start(t)
	for _, path := range []string{oauth.MetadataPath, oauth.OpenIDPath} {
		var m map[string]any
		getJSON(t, f.URL+path, &m)
		want := map[string]string{"issuer": f.URL, "token_endpoint": f.URL + "/v1/oauth/tokens",
			"jwks_uri": f.URL + "/.well-known/jwks.json", "revocation_endpoint": f.URL + "/v1/oauth/revoke"}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %s", path, k, m[k], v)
			}
		}
		for k, vals := range map[string][]string{
			"grant_types_supported":                 {"client_credentials", oauth.GrantTokenExchange, oauth.GrantJWTBearer},
			"token_endpoint_auth_methods_supported": {"client_secret_basic", "client_secret_post", "private_key_jwt"},
			"scopes_supported":                      {"catalog", "catalog:read"},
		} {
			got, _ := json.Marshal(m[k])
			for _, v := range vals {
				if !strings.Contains(string(got), `"`+v+`"`) {
					t.Errorf("%s: %s = %s lacks %s", path, k, got, v)
				}
			}
		}
		if algs, _ := json.Marshal(m["token_endpoint_auth_signing_alg_values_supported"]); strings.Contains(string(algs), "none") {
			t.Errorf("signing algs include none: %s", algs)
		}
	}
	var set jose.JSONWebKeySet
	hdr := getJSON(t, f.URL+oauth.JWKSPath, &set)
	if len(set.Keys) == 0 || !set.Keys[0].IsPublic() || set.Keys[0].Algorithm != "ES256" || set.Keys[0].Use != "sig" {
		t.Fatalf("JWKS %+v", set)
	}
	if hdr.Get("Cache-Control") == "" {
		t.Error("JWKS without Cache-Control")
	}
	tok := f.Token(t)
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	must(t, err)
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("token kid %q not in the JWKS", jws.Signatures[0].Header.KeyID)
	}
	if _, err := jws.Verify(keys[0].Key); err != nil {
		t.Errorf("token does not verify with the published key: %v", err)
	}
	// The key rotates: old tokens keep working, the JWKS publishes both.
	before := len(set.Keys)
	newKID, err := f.App.Auth().RotateKey(context.Background())
	must(t, err)
	getJSON(t, f.URL+oauth.JWKSPath, &set)
	if len(set.Keys) != before+1 || set.Keys[0].KeyID != newKID {
		t.Errorf("JWKS after rotation has %d keys (%d before), first %s, want %s", len(set.Keys), before, set.Keys[0].KeyID, newKID)
	}
	if r := f.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 200 {
		t.Errorf("token signed with the previous key: %d", r.Status)
	}
	if r := f.DoAs(t, f.TokenFor(t, f.Cred.ClientID, f.Cred.Secret), "GET", "/v1/config", nil); r.Status != 200 {
		t.Errorf("token signed with the new key: %d", r.Status)
	}
}

func tokenAt(t *testing.T, f *testkit.Floe, form url.Values, basic ...string) reply {
	t.Helper()
	return post(t, f.URL+oauth.TokenPath, form, "", basic...)
}

// TestReadScope: a catalog:read token reads but can never change the catalog.
func TestReadScope(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	// Unique names: with FLOE_TEST_STORE the tests share one database.
	bi := "bi-" + uuid.NewString()[:8]
	_, _, err := f.App.Auth().CreatePrincipal(ctx, bi, []string{"catalog:read"}, false, bi, "bi-secret")
	must(t, err)
	readAll(t, f, bi)
	ns := "sales_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`
	for _, r := range []testkit.Response{
		f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["`+ns+`"]}`),
		f.Do(t, "POST", f.P("/namespaces/"+ns+"/tables"), `{"name":"t","schema":`+schema+`}`),
	} {
		if r.Status != 200 {
			t.Fatalf("setup: %d %s", r.Status, r.Body)
		}
	}
	readTokens := map[string]string{
		"read-only principal": tokenAt(t, f, url.Values{"grant_type": {"client_credentials"}, "scope": {"catalog"}}, bi, "bi-secret").str("access_token"),
		"narrowed admin": tokenAt(t, f, url.Values{"grant_type": {"client_credentials"}, "scope": {"catalog:read"}},
			f.Cred.ClientID, f.Cred.Secret).str("access_token"),
	}
	// A read token cannot be widened by refreshing it.
	refreshed := tokenAt(t, f, url.Values{"grant_type": {oauth.GrantTokenExchange}, "subject_token_type": {oauth.TokenTypeAccessToken},
		"subject_token": {readTokens["narrowed admin"]}, "scope": {"catalog"}})
	if refreshed.status != 200 || refreshed.str("scope") != "catalog:read" {
		t.Fatalf("refresh of a read token: %d %s", refreshed.status, refreshed.raw)
	}
	readTokens["refreshed"] = refreshed.str("access_token")

	writes := []struct{ method, path, body string }{
		{"POST", f.P("/namespaces"), `{"namespace":["x"]}`},
		{"DELETE", f.P("/namespaces/" + ns + ""), ""},
		{"POST", f.P("/namespaces/" + ns + "/properties"), `{"updates":{"a":"b"}}`},
		{"POST", f.P("/namespaces/" + ns + "/tables"), `{"name":"u","schema":` + schema + `}`},
		{"POST", f.P("/namespaces/" + ns + "/tables/t"), `{"requirements":[],"updates":[]}`},
		{"DELETE", f.P("/namespaces/" + ns + "/tables/t"), ""},
		{"POST", f.P("/tables/rename"), `{"source":{"namespace":["` + ns + `"],"name":"t"},"destination":{"namespace":["` + ns + `"],"name":"v"}}`},
		{"POST", f.P("/namespaces/" + ns + "/register"), `{"name":"r","metadata-location":"file:///x.json"}`},
		{"POST", f.P("/transactions/commit"), `{"table-changes":[]}`},
	}
	for name, tok := range readTokens {
		t.Run(name, func(t *testing.T) {
			for _, rd := range []string{"/v1/config", f.P("/namespaces"), f.P("/namespaces/" + ns + "/tables/t")} {
				if r := f.DoAs(t, tok, "GET", rd, nil); r.Status != 200 {
					t.Errorf("GET %s with a read token: %d %s", rd, r.Status, r.Body)
				}
			}
			for _, w := range writes {
				r := f.DoAs(t, tok, w.method, w.path, w.body)
				var e struct {
					Error struct {
						Message, Type string
					} `json:"error"`
				}
				_ = json.Unmarshal(r.Body, &e)
				if r.Status != 403 || e.Error.Type != "ForbiddenException" ||
					!strings.HasPrefix(e.Error.Message, "token scope catalog:read does not allow "+w.method+" /v1/{prefix}/") {
					t.Errorf("%s %s with a read token: %d %s", w.method, w.path, r.Status, r.Body)
				}
			}
		})
	}
	if r := f.Do(t, "GET", f.P("/namespaces/"+ns+"/tables/t"), nil); r.Status != 200 {
		t.Errorf("table gone after refused writes: %d", r.Status)
	}
}

// TestRevokeAndDisable: revocation and disabling take effect on the next
// catalog request.
func TestRevokeAndDisable(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	name := "etl-" + uuid.NewString()[:8]
	_, secret, err := f.App.Auth().CreatePrincipal(ctx, name, nil, false, name, "")
	must(t, err)
	readAll(t, f, name)
	get := func(tok string) int { return f.DoAs(t, tok, "GET", f.P("/namespaces"), nil).Status }
	tok := f.TokenFor(t, name, secret)
	if get(tok) != 200 {
		t.Fatal("fresh token refused")
	}
	r := post(t, f.URL+oauth.RevokePath, url.Values{"token": {tok}}, "", name, secret)
	if r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	if s := get(tok); s != 401 {
		t.Errorf("revoked token: %d", s)
	}
	tok2 := f.TokenFor(t, name, secret)
	if get(tok2) != 200 {
		t.Fatal("second token refused")
	}
	must(t, f.App.Store().SetPrincipalDisabled(ctx, name, true))
	if s := get(tok2); s != 401 {
		t.Errorf("token of a disabled client: %d", s)
	}
	r = tokenAt(t, f, url.Values{"grant_type": {"client_credentials"}, "client_id": {name}, "client_secret": {secret}})
	if r.status != 401 || r.str("error") != "invalid_client" {
		t.Errorf("disabled client got a token: %d %s", r.status, r.raw)
	}
	if err := f.App.Audit().Verify(ctx); err != nil {
		t.Error(err)
	}
}

// TestThreeStepFlow is docs/authentication.md's flow in Go: register a
// public key, sign an RS256 assertion, exchange it, present the token.
func TestThreeStepFlow(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuthFailuresPerMinute = -1 })
	ctx := context.Background()
	name := "etl-" + uuid.NewString()[:8]
	p, _, err := f.App.Auth().CreatePrincipal(ctx, name, nil, false, "", "")
	must(t, err)
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	must(t, err)
	_, err = f.App.Auth().AddClientKey(ctx, name, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	must(t, err)
	now := time.Now()
	assertion, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": p.ClientID, "sub": p.ClientID,
		"aud": f.URL + "/v1/oauth/tokens", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": uuid.NewString()}).SignedString(k)
	must(t, err)
	r := tokenAt(t, f, url.Values{"grant_type": {oauth.GrantTokenExchange}, "subject_token": {assertion},
		"subject_token_type": {oauth.TokenTypeJWT}, "scope": {"catalog"}})
	if r.status != 200 {
		t.Fatalf("exchange: %d %s", r.status, r.raw)
	}
	if s := f.DoAs(t, r.str("access_token"), "GET", "/v1/config", nil).Status; s != 200 {
		t.Fatalf("GET /v1/config: %d", s)
	}
	// Replaying the assertion fails, and is audited.
	r = post(t, f.URL+oauth.TokenPath, url.Values{"grant_type": {oauth.GrantTokenExchange}, "subject_token": {assertion},
		"subject_token_type": {oauth.TokenTypeJWT}}, "replay-"+name)
	if r.status != 400 || r.str("error") != "invalid_grant" {
		t.Fatalf("replay: %d %s", r.status, r.raw)
	}
	rs, err := f.App.Store().AuditRecords(ctx, 0, 1000)
	must(t, err)
	found := false
	for _, rec := range rs {
		found = found || (rec.RequestID == "replay-"+name && rec.Outcome == "failure" && strings.Contains(string(rec.Detail), "jti replayed"))
	}
	if !found {
		t.Error("replay not audited")
	}
}

// readAll grants a principal DESCRIBE and SELECT on every table of the
// warehouse, so that scope checks, not grants, decide these tests.
func readAll(t *testing.T, f *testkit.Floe, name string) {
	t.Helper()
	for _, p := range []authz.Privilege{authz.Describe, authz.Select} {
		if _, err := f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(name), Privilege: p,
			On: authz.Warehouse(f.Warehouse), AllTables: true}); err != nil {
			t.Fatal(err)
		}
	}
}
