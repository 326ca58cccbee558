package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/revoke"
)

// TestRevocations: each revoking mutation bumps the revocation version
// and records its subject; granting does not.
func TestRevocations(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := openForTest(t, b.dsn(t), Options{})
			subjects := func(after int64) []string {
				t.Helper()
				es, err := s.Revocations(ctx, after)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, e := range es {
					out = append(out, string(e.Kind)+":"+e.Subject)
				}
				slices.Sort(out)
				return out
			}
			version := func() int64 {
				t.Helper()
				v, err := s.RevocationVersion(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for _, n := range []string{"alice", "bob", "carol"} {
				if err := s.CreatePrincipal(ctx, auth.Principal{ID: n + "-id", Name: n, ClientID: n, SecretHash: "x", CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			tbl := authz.Securable{Kind: authz.KindTable, Warehouse: "floe", Namespace: catalog.Namespace{"crm"}, Name: "accounts"}
			direct := authz.Grant{Grantee: authz.Grantee{Kind: authz.GranteePrincipal, Name: "alice"}, Privilege: authz.Select, On: tbl}
			direct.ID = direct.Key()
			if err := s.CreateRole(ctx, authz.RoleInfo{Name: "analysts"}); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"bob", "carol"} {
				if err := s.AddRoleMember(ctx, "analysts", m); err != nil {
					t.Fatal(err)
				}
			}
			viaRole := authz.Grant{Grantee: authz.Grantee{Kind: authz.GranteeRole, Name: "analysts"}, Privilege: authz.Select, On: tbl}
			viaRole.ID = viaRole.Key()
			for _, g := range []authz.Grant{direct, viaRole} {
				if err := s.PutGrant(ctx, g); err != nil {
					t.Fatal(err)
				}
			}
			if v := version(); v != 0 {
				t.Fatalf("granting bumped the revocation version to %d", v)
			}

			steps := []struct {
				name string
				do   func() error
				want []string
			}{
				{"revoke a direct grant", func() error { return s.DeleteGrant(ctx, direct.ID) }, []string{"grant:alice"}},
				{"revoke a role's grant", func() error { return s.DeleteGrant(ctx, viaRole.ID) }, []string{"grant:bob", "grant:carol"}},
				{"remove a role member", func() error { return s.RemoveRoleMember(ctx, "analysts", "carol") }, []string{"grant:carol"}},
				{"drop a role", func() error { return s.DropRole(ctx, "analysts") }, []string{"grant:bob"}},
				{"disable a principal", func() error { return s.SetPrincipalDisabled(ctx, "alice", true) }, []string{"disabled:alice"}},
				{"revoke a token", func() error { return s.RevokeToken(ctx, "jti-1", time.Now().Add(time.Hour)) }, []string{"token:jti-1"}},
			}
			for _, st := range steps {
				before := version()
				if err := st.do(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if version() <= before {
					t.Fatalf("%s: revocation version stayed at %d", st.name, before)
				}
				if got := subjects(before); !slices.Equal(got, st.want) {
					t.Fatalf("%s: revocations %v, want %v", st.name, got, st.want)
				}
			}
			// Enabling again keeps the entry, now with a bounded expiry.
			if err := s.SetPrincipalDisabled(ctx, "alice", false); err != nil {
				t.Fatal(err)
			}
			es, err := s.Revocations(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if e.Kind == revoke.Disabled && e.Expires.After(time.Now().Add(revocationTTL+time.Minute)) {
					t.Errorf("re-enabled principal's revocation expires at %s", e.Expires)
				}
			}
		})
	}
}

// TestRevocationsSwept: rows are deleted once nothing they refuse can be
// alive, on the next revocation; the table stays bounded.
func TestRevocationsSwept(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			s := openForTest(t, b.dsn(t), Options{Now: func() time.Time { return now }})
			for i := range 3 {
				if err := s.RevokeToken(ctx, fmt.Sprintf("jti-%d", i), now.Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			count := func() int {
				t.Helper()
				var n int
				if err := s.db().QueryRowContext(ctx, "SELECT count(*) FROM revocations").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := count(); n != 3 {
				t.Fatalf("%d rows, want 3", n)
			}
			// Past the tokens' expiry plus the longest credential life.
			now = now.Add(time.Hour + revocationTTL + time.Minute)
			if es, err := s.Revocations(ctx, 0); err != nil || len(es) != 0 {
				t.Fatalf("expired revocations still listed: %v %v", es, err)
			}
			if err := s.RevokeToken(ctx, "jti-new", now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 1 {
				t.Fatalf("%d rows after the sweep, want 1", n)
			}
		})
	}
}
