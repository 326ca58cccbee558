package storetest

import (
	"slices"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// testPrincipalAllowedCIDRs: a principal's allowlist is stored at
// creation and by SetPrincipalAllowedCIDRs, read back by every principal
// read (by name, by client id, the list, the SQL password read and
// TokenState, which Verify runs per request), and cleared by an empty
// list; an unknown principal is NotFound.
func testPrincipalAllowedCIDRs(t *testing.T, e *env) {
	wantErr(t, e.s.SetPrincipalAllowedCIDRs(e.ctx, "ghost", []string{"10.0.0.0/8"}), floe.NotFound, "principal", "Principal does not exist: ghost")
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "id-net", Name: "net", ClientID: "c-net", SecretHash: "h",
		AllowedCIDRs: []string{"10.0.0.0/8"}}))
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "id-open", Name: "open", ClientID: "c-open", SecretHash: "h"}))
	must(t, e.s.SetPrincipalPassword(e.ctx, "net", "verifier"))
	check := func(name string, want []string) {
		t.Helper()
		p, err := e.s.PrincipalByName(e.ctx, name)
		must(t, err)
		byID, err := e.s.PrincipalByClientID(e.ctx, p.ClientID)
		must(t, err)
		ts, err := e.s.TokenState(e.ctx, p.ClientID, "jti")
		must(t, err)
		list, err := e.s.ListPrincipals(e.ctx)
		must(t, err)
		var listed auth.Principal
		for _, l := range list {
			if l.Name == name {
				listed = l
			}
		}
		for what, got := range map[string][]string{"by name": p.AllowedCIDRs, "by client id": byID.AllowedCIDRs,
			"token state": ts.Principal.AllowedCIDRs, "list": listed.AllowedCIDRs} {
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: allowed cidrs %q, want %q", name, what, got, want)
			}
		}
	}
	check("net", []string{"10.0.0.0/8"})
	check("open", nil)
	must(t, e.s.SetPrincipalAllowedCIDRs(e.ctx, "net", []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"}))
	check("net", []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"})
	check("open", nil) // only the one named changes
	if p, _, err := e.s.PrincipalPassword(e.ctx, "net"); err != nil || len(p.AllowedCIDRs) != 3 {
		t.Errorf("PrincipalPassword: %v %v", p.AllowedCIDRs, err)
	}
	must(t, e.s.SetPrincipalAllowedCIDRs(e.ctx, "net", nil))
	check("net", nil)
}
