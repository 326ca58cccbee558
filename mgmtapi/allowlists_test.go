package mgmtapi_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestPrincipalAllowedCIDRs: an admin sets a principal's network
// allowlist at creation and with PUT /principals/{name}/allowed-cidrs; the
// list comes back canonical on every principal answer; bad lists, unknown
// principals and non-admins are refused; an empty list clears it.
func TestPrincipalAllowedCIDRs(t *testing.T) {
	e := newEnv(t)
	var np mgmtapi.NewPrincipal
	e.ok(t, 201, "POST", "/api/v1/principals", map[string]any{"name": "etl", "allowed_cidrs": []string{"10.9.9.9/8", "192.0.2.7"}}).JSON(t, &np)
	if !slices.Equal(np.AllowedCIDRs, []string{"10.0.0.0/8", "192.0.2.7/32"}) {
		t.Fatalf("created with allowed_cidrs %q", np.AllowedCIDRs)
	}
	var p mgmtapi.Principal
	e.ok(t, 200, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": []string{"2001:db8::/32", "127.0.0.1"}}).JSON(t, &p)
	if !slices.Equal(p.AllowedCIDRs, []string{"127.0.0.1/32", "2001:db8::/32"}) {
		t.Fatalf("set: %q", p.AllowedCIDRs)
	}
	e.ok(t, 200, "GET", "/api/v1/principals/etl", nil).JSON(t, &p)
	if !slices.Equal(p.AllowedCIDRs, []string{"127.0.0.1/32", "2001:db8::/32"}) {
		t.Fatalf("get: %q", p.AllowedCIDRs)
	}
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": []string{"10.0.0.0/33"}}),
		400, "BadRequestException", `allowlist entry "10.0.0.0/33" is not a CIDR prefix or an address`)
	// The bound: a principal's list travels inside its vended credentials.
	var many []string
	for i := range auth.MaxPrincipalCIDRs + 1 {
		many = append(many, fmt.Sprintf("10.0.%d.0/24", i))
	}
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": many}),
		400, "BadRequestException", fmt.Sprintf("a principal's allowlist has at most %d entries, not %d", auth.MaxPrincipalCIDRs, len(many)))
	e.ok(t, 200, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": many[:auth.MaxPrincipalCIDRs]})
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/principals/ghost/allowed-cidrs", map[string]any{"allowed_cidrs": []string{}}), 404, "NotFoundException", "")
	tok := e.f.PrincipalToken(t, "mallory")
	wantError(t, e.do(t, tok, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": []string{}}), 403, "ForbiddenException", "")
	e.ok(t, 200, "PUT", "/api/v1/principals/etl/allowed-cidrs", map[string]any{"allowed_cidrs": []string{}}).JSON(t, &p)
	if p.AllowedCIDRs == nil || len(p.AllowedCIDRs) != 0 {
		t.Fatalf("cleared: %#v", p.AllowedCIDRs)
	}
}
