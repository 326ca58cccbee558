package app_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestLastEnabledAdminCannotBeDisabled: the only enabled administrator
// cannot disable itself through the management API (409 with a reason);
// once another admin is enabled it can, and the remaining one then cannot.
func TestLastEnabledAdminCannotBeDisabled(t *testing.T) {
	f := testkit.Start(t)
	var opsTok string
	for _, step := range []struct {
		name, path string
		admin      string // "" uses the bootstrap admin's token
		want       int
		reason     string
	}{
		{"only admin disables itself", "/api/v1/principals/admin/disable", "", 409, "only enabled administrator"},
		{"non-admin disabled while one admin remains", "/api/v1/principals/etl/disable", "", 200, ""},
		{"second admin created, first disables itself", "/api/v1/principals/admin/disable", "", 200, ""},
		{"second admin, now the only one, disables itself", "/api/v1/principals/ops/disable", "ops", 409, "only enabled administrator"},
		{"disabled first admin re-enabled", "/api/v1/principals/admin/enable", "ops", 200, ""},
		{"then the second can go", "/api/v1/principals/ops/disable", "ops", 200, ""},
	} {
		switch step.name {
		case "non-admin disabled while one admin remains":
			f.NewPrincipal(t, "etl")
		case "second admin created, first disables itself":
			r := f.Do(t, "POST", "/api/v1/principals", map[string]any{"name": "ops", "admin": true})
			if r.Status != 201 {
				t.Fatalf("create admin ops: %d %s", r.Status, r.Body)
			}
			var np struct {
				ClientID     string `json:"client_id"`
				ClientSecret string `json:"client_secret"`
			}
			r.JSON(t, &np)
			opsTok = f.TokenFor(t, np.ClientID, np.ClientSecret)
		}
		tok := f.Token(t)
		if step.admin == "ops" {
			tok = opsTok
		}
		r := f.DoAs(t, tok, "POST", step.path, nil)
		if r.Status != step.want || !strings.Contains(string(r.Body), step.reason) {
			t.Fatalf("%s: %d %s, want %d with %q", step.name, r.Status, r.Body, step.want, step.reason)
		}
	}
}
