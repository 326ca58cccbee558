package vend_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/floe-lake/floe"
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

// TestSTSNetworkDeny: STS credentials of a principal with an allowlist are
// minted with a session policy that denies every S3 action from a source
// address outside it (aws:SourceIp); without one the policy has no such
// statement.
func TestSTSNetworkDeny(t *testing.T) {
	f := newFakeSTS(t, okAnswer)
	m := newSTS(t, f, nil)
	policy := func() map[string]any {
		t.Helper()
		reqs := f.requests()
		var doc map[string]any
		if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Get("Policy")), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	network := func(doc map[string]any) map[string]any {
		for _, st := range doc["Statement"].([]any) {
			if s := st.(map[string]any); s["Sid"] == "Network" {
				return s
			}
		}
		return nil
	}
	mint(t, m, session(), 0)
	if st := network(policy()); st != nil {
		t.Fatalf("a network statement without an allowlist: %v", st)
	}
	s := session()
	s.AllowedCIDRs = []string{"10.0.0.0/8", "2001:db8::/32"}
	mint(t, m, s, 0)
	doc := policy()
	st := network(doc)
	want := `{"Action":["s3:*"],"Condition":{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}},"Effect":"Deny","Resource":["*"],"Sid":"Network"}`
	if got, _ := json.Marshal(st); string(got) != want {
		t.Fatalf("network statement %s, want %s", got, want)
	}
	if n := len(doc["Statement"].([]any)); n < 3 {
		t.Fatalf("the grants' statements were lost: %v", doc)
	}
	// Too long a policy is refused before STS is asked.
	before := len(f.requests())
	s.AllowedCIDRs = nil
	for i := range 200 {
		s.AllowedCIDRs = append(s.AllowedCIDRs, fmt.Sprintf("2001:db8:%x::/48", i))
	}
	if _, _, err := m.Mint(t.Context(), s, 0); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("Mint with a huge allowlist: %v, want Invalid", err)
	}
	if len(f.requests()) != before {
		t.Fatal("STS was asked with a policy too long")
	}
}
