package mgmtapi_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-lake/floe/mgmtapi"
)

// tokenRequest asks the token endpoint for a token with the client
// credentials grant and returns the status, the token and the OAuth error.
func (e *env) tokenRequest(t *testing.T, id, secret string) (status int, token, oauthErr string) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	resp, err := e.f.Client().PostForm(e.f.URL+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("token response: %v", err)
	}
	return resp.StatusCode, out.AccessToken, out.Error
}

// TestRotateSecret: an administrator rotates a principal's client secret;
// the new secret is shown once and works, the old one gets 401
// invalid_client at once (or after the grace period), tokens issued before
// stay valid, and the audit event has no secret.
func TestRotateSecret(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	tests := []struct {
		name    string
		body    any
		status  int
		oldWork bool
	}{
		{"no body: no grace", nil, 200, false},
		{"grace 0", map[string]any{"grace_seconds": 0}, 200, false},
		{"grace one hour", map[string]any{"grace_seconds": 3600}, 200, true},
		{"negative grace", map[string]any{"grace_seconds": -1}, 400, true},
		{"grace too long", map[string]any{"grace_seconds": 30*24*3600 + 1}, 400, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "etl" + string(rune('a'+i))
			var np mgmtapi.NewPrincipal
			e.ok(t, 201, "POST", "/api/v1/principals", map[string]any{"name": name}).JSON(t, &np)
			before := e.f.TokenFor(t, np.ClientID, np.ClientSecret)

			r := e.do(t, e.admin, "POST", "/api/v1/principals/"+name+"/rotate-secret", tt.body, "X-Request-Id", "rid-rotate-"+name)
			if r.Status != tt.status {
				t.Fatalf("rotate: %d %s, want %d", r.Status, r.Body, tt.status)
			}
			status, _, oauthErr := e.tokenRequest(t, np.ClientID, np.ClientSecret)
			if tt.oldWork && status != 200 {
				t.Errorf("old secret: %d %s, want 200", status, oauthErr)
			}
			if !tt.oldWork && (status != 401 || oauthErr != "invalid_client") {
				t.Errorf("old secret: %d %s, want 401 invalid_client", status, oauthErr)
			}
			if tt.status != 200 {
				return
			}
			var rot mgmtapi.NewPrincipal
			r.JSON(t, &rot)
			if rot.ClientID != np.ClientID || rot.ClientSecret == "" || rot.ClientSecret == np.ClientSecret || rot.Name != name {
				t.Fatalf("rotated %+v", rot)
			}
			if r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q on a response with a secret", r.Header.Get("Cache-Control"))
			}
			if status, _, oauthErr := e.tokenRequest(t, np.ClientID, rot.ClientSecret); status != 200 {
				t.Errorf("new secret: %d %s", status, oauthErr)
			}
			if r := e.do(t, before, "GET", "/api/v1/whoami", nil); r.Status != 200 {
				t.Errorf("token issued before the rotation: %d %s", r.Status, r.Body)
			}
			recs, err := e.f.App.Store().AuditRecords(context.Background(), 0, 100000)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, rec := range recs {
				if strings.Contains(string(rec.Detail), rot.ClientSecret) || strings.Contains(string(rec.Detail), np.ClientSecret) {
					t.Errorf("a secret in audit record %d: %s", rec.Seq, rec.Detail)
				}
				if rec.RequestID == "rid-rotate-"+name {
					found = rec.Action == "mgmt.principal.rotate_secret" && rec.Resource == "principal:"+name &&
						rec.Principal == "admin" && rec.Outcome == "success"
				}
			}
			if !found {
				t.Error("no mgmt.principal.rotate_secret audit event")
			}
		})
	}
	wantError(t, e.do(t, bob, "POST", "/api/v1/principals/bob/rotate-secret", nil), 403, "ForbiddenException", "")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals/ghost/rotate-secret", nil), 404, "NotFoundException", "")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals/etla/rotate-secret", `{"grace_seconds":"1h"}`), 400, "BadRequestException", "")
}

// TestRevokeTokens: every token issued to the principal before the call is
// refused at once (401); new tokens work; an administrator may revoke any
// principal's tokens, a principal only its own, and not with a
// catalog:read token.
func TestRevokeTokens(t *testing.T) {
	e := newEnv(t)
	bobCred := e.f.NewPrincipal(t, "bob")
	carolCred := e.f.NewPrincipal(t, "carol")
	tests := []struct {
		name       string
		caller     func() string // token of the caller, obtained before the call
		target     string
		status     int
		bobRefused bool // bob's earlier token is refused after the call
	}{
		{"administrator", func() string { return e.admin }, "bob", 200, true},
		{"a principal for itself", func() string { return e.f.TokenFor(t, bobCred.ClientID, bobCred.Secret) }, "bob", 200, true},
		{"a principal for another", func() string { return e.f.TokenFor(t, carolCred.ClientID, carolCred.Secret) }, "bob", 403, false},
		// A catalog:read token changes nothing, its own tokens included.
		{"a catalog:read token for itself", func() string { return e.f.TokenScoped(t, bobCred.ClientID, bobCred.Secret, "catalog:read") },
			"bob", 403, false},
		{"unknown principal", func() string { return e.admin }, "ghost", 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bobTok := e.f.TokenFor(t, bobCred.ClientID, bobCred.Secret)
			caller := tt.caller()
			r := e.do(t, caller, "POST", "/api/v1/principals/"+tt.target+"/revoke-tokens", nil)
			if r.Status != tt.status {
				t.Fatalf("revoke-tokens: %d %s, want %d", r.Status, r.Body, tt.status)
			}
			got := e.do(t, bobTok, "GET", "/api/v1/whoami", nil).Status
			if tt.bobRefused && got != 401 {
				t.Errorf("bob's earlier token after revoke-tokens: %d, want 401", got)
			}
			if !tt.bobRefused && got != 200 {
				t.Errorf("bob's token after a refused revoke-tokens: %d, want 200", got)
			}
			if tt.status == 200 {
				var out mgmtapi.RevokedPrincipalTokens
				r.JSON(t, &out)
				if out.Name != tt.target || out.TokensNotBefore.IsZero() {
					t.Errorf("answer %+v", out)
				}
				fresh := e.f.TokenFor(t, bobCred.ClientID, bobCred.Secret)
				if r := e.do(t, fresh, "GET", "/api/v1/whoami", nil); r.Status != 200 {
					t.Errorf("new token after revoke-tokens: %d %s", r.Status, r.Body)
				}
			}
		})
	}
	if r := e.do(t, e.admin, "GET", "/api/v1/whoami", nil); r.Status != 200 {
		t.Errorf("the admin's token after revoking bob's: %d", r.Status)
	}
	recs, err := e.f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Action == "mgmt.principal.revoke_tokens" && rec.Resource == "principal:bob" && rec.Outcome == "success" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d successful mgmt.principal.revoke_tokens events for bob, want 2", n)
	}
}
