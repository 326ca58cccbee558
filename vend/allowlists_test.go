package vend_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/fakeclock"
)

// TestAllowedCIDRsTravel: a session's allowlist is sealed into the
// credential and comes back on Resolve; a principal's longest allowlist
// (auth.MaxPrincipalCIDRs entries of the longest IPv6 form) still fits in
// a session token.
func TestAllowedCIDRsTravel(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	var longest []string
	for i := range auth.MaxPrincipalCIDRs {
		longest = append(longest, fmt.Sprintf("2001:db8:%x:ffff:ffff:ffff:ffff:ff00/120", 0x1000+i))
	}
	for _, cidrs := range [][]string{nil, {"10.0.0.0/8"}, {"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"}, longest} {
		s := session()
		s.AllowedCIDRs = cidrs
		c, got := mint(t, e, s, 0)
		if res := resolve(t, e, c); !slices.Equal(res.AllowedCIDRs, cidrs) || !slices.Equal(got.AllowedCIDRs, cidrs) {
			t.Errorf("allowlist %q came back as %q (minted %q)", cidrs, res.AllowedCIDRs, got.AllowedCIDRs)
		}
	}
}
