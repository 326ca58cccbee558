package authz

import (
	"slices"
	"strings"
	"testing"
)

// TestReachingAgreesWithEffective: for every principal of the fixture and
// securable, the privileges of the grants Reaching lists for the principal
// and its roles are exactly what Effective decides (less the DESCRIBE that
// holding anything implies), so "who has access and why" never disagrees
// with the decision.
func TestReachingAgreesWithEffective(t *testing.T) {
	p := fixture(t)
	principals := []string{"alice", "reader", "bi", "etl", "whuser", "creator", "tagger", "nsdescr", "colsel", "other-wh",
		"colnarrow", "filtered", "both", "viewer", "nobody"}
	on := []Securable{tbl("crm.accounts"), tbl("sales.x"), tbl("sales.q1.orders"), tbl("sales.q1.pii"), tbl("crm.eu.t"),
		view("crm.v"), nsS("crm"), nsS("sales"), nsS("crm.eu")}
	for _, s := range on {
		reach := p.Reaching(s)
		for _, name := range principals {
			var set Set
			for _, r := range reach {
				g := r.Grant.Grantee
				if (g.Kind == GranteePrincipal && g.Name == name) || (g.Kind == GranteeRole && slices.Contains(p.RolesOf(name), g.Name)) {
					set = set.With(r.Grant.Privilege)
				}
			}
			if set != 0 {
				set = set.With(Describe)
			}
			if want := p.Effective(sub(name), s); set != want {
				t.Errorf("%s on %s: Reaching gives %v, Effective %v", name, s, set, want)
			}
		}
	}
}

func TestReachingVia(t *testing.T) {
	p := fixture(t)
	owner := grant(t, Grant{Grantee: Principal("maker"), Privilege: Modify, On: tbl("crm.accounts"), CreatedBy: "maker"})
	p2, err := NewPolicy(&Snapshot{Grants: append(slices.Clone(p.grants), owner)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p    *Policy
		on   Securable
		want []string // "grantee privilege via [columns]"
	}{
		{p2, tbl("crm.accounts"), []string{
			`principal "whuser" DESCRIBE warehouse`,
			`principal "bi" DESCRIBE namespace`,
			`principal "both" SELECT namespace`,
			`principal "both" SELECT direct`, `principal "etl" MODIFY direct`, `principal "filtered" SELECT direct`, `principal "maker" MODIFY owner`,
		}},
		{p, tbl("sales.q1.orders"), []string{
			`principal "whuser" DESCRIBE warehouse`,
			`role "analysts" SELECT namespace`,
			`principal "colnarrow" SELECT tag [email] partial`, `principal "colsel" SELECT tag [email] partial`,
			`principal "nsdescr" DESCRIBE tag`, `principal "tagger" SELECT tag [email]`,
		}},
		{p, nsS("crm"), []string{`principal "whuser" DESCRIBE warehouse`, `principal "whuser" CREATE_NAMESPACE warehouse`,
			`principal "bi" DESCRIBE direct`, `principal "creator" CREATE_TABLE direct`, `principal "reader" DESCRIBE direct`, `principal "both" SELECT direct`}},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range tt.p.Reaching(tt.on) {
			s := r.Grant.Grantee.String() + " " + r.Grant.Privilege.String() + " " + r.Via
			if len(r.Columns) > 0 {
				s += " [" + strings.Join(r.Columns, ",") + "]"
			}
			if r.Partial {
				s += " partial"
			}
			got = append(got, s)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Reaching(%s):\n got  %q\n want %q", tt.on, got, want)
		}
	}
}
