package testkit

import (
	"context"
	"testing"

	"github.com/floe-lake/floe/internal/app"
)

// NewPrincipal creates a non-admin principal allowed the given scopes
// (default: catalog) and returns its credential, failing the test on error.
func (f *Floe) NewPrincipal(t testing.TB, name string, scopes ...string) app.Credential {
	t.Helper()
	p, secret, err := f.App.Auth().CreatePrincipal(context.Background(), name, scopes, false, "", "")
	if err != nil {
		t.Fatalf("create principal %s: %v", name, err)
	}
	return app.Credential{ClientID: p.ClientID, Secret: secret}
}

// PrincipalToken creates a non-admin principal with the scope catalog and
// returns an access token for it obtained through the token endpoint.
func (f *Floe) PrincipalToken(t testing.TB, name string) string {
	t.Helper()
	c := f.NewPrincipal(t, name)
	return f.TokenFor(t, c.ClientID, c.Secret)
}
