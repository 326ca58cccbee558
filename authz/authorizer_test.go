package authz_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/store/sqlstore"
)

// countingStore counts the calls an Authorizer makes.
type countingStore struct {
	authz.Store
	versions, loads atomic.Int64
}

func (c *countingStore) AuthzVersion(ctx context.Context) (int64, error) {
	c.versions.Add(1)
	return c.Store.AuthzVersion(ctx)
}

func (c *countingStore) LoadAuthz(ctx context.Context) (*authz.Snapshot, error) {
	c.loads.Add(1)
	return c.Store.LoadAuthz(ctx)
}

func openSQLite(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRevokeSeenByOtherNode runs two Authorizers on one store, as two nodes
// would: a grant and a revoke made through one are seen by the other on its
// next decision, and an unchanged version costs no reload.
func TestRevokeSeenByOtherNode(t *testing.T) {
	ctx := t.Context()
	db := openSQLite(t)
	node1 := authz.New(db, authz.Options{})
	cs := &countingStore{Store: db}
	node2 := authz.New(cs, authz.Options{})

	bi := authz.Subject{PrincipalID: "id-bi", Principal: "bi"}
	accounts := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	crm := authz.NamespaceOf("wh", catalog.Namespace{"crm"})

	wantDenied := func(a *authz.Authorizer, priv authz.Privilege, s authz.Securable, msg string) {
		t.Helper()
		err := a.Check(ctx, bi, priv, s)
		if floe.KindOf(err) != floe.Forbidden || floe.PublicMessage(err) != msg {
			t.Fatalf("Check(%s, %s) = %v, want Forbidden %q", priv, s, err, msg)
		}
	}
	wantAllowed := func(a *authz.Authorizer, priv authz.Privilege, s authz.Securable) {
		t.Helper()
		if err := a.Check(ctx, bi, priv, s); err != nil {
			t.Fatalf("Check(%s, %s) = %v, want allowed", priv, s, err)
		}
	}

	wantDenied(node2, authz.Describe, crm, `principal "bi" lacks DESCRIBE on namespace "crm"`)

	must(t, node1.CreateRole(ctx, authz.RoleInfo{Name: "readers"}))
	must(t, node1.AddMember(ctx, "readers", "bi"))
	g, err := node1.Grant(ctx, authz.Grant{Grantee: authz.Role("readers"), Privilege: authz.Describe, On: crm, AllTables: true, CreatedBy: "root"})
	must(t, err)
	sel, err := node1.Grant(ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: accounts,
		Filter: &authz.DataFilter{RowFilter: "region = 'EU'"}})
	must(t, err)
	if _, err := node1.Grant(ctx, g); floe.KindOf(err) != floe.AlreadyExists {
		t.Fatalf("second identical grant = %v, want AlreadyExists", err)
	}

	wantAllowed(node2, authz.Describe, crm)
	wantAllowed(node2, authz.Select, accounts)
	p, err := node2.Policy(ctx)
	must(t, err)
	if err := p.CheckFileAccess(bi, accounts); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("CheckFileAccess through a filtered grant = %v, want Forbidden", err)
	}

	// No change: one version read per decision, no reload.
	loads := cs.loads.Load()
	for range 10 {
		wantAllowed(node2, authz.Describe, accounts)
	}
	if cs.loads.Load() != loads {
		t.Fatalf("policy reloaded %d times without a change", cs.loads.Load()-loads)
	}

	// Revoke on node 1; node 2 sees it on its next decision.
	must(t, node1.Revoke(ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: accounts,
		Filter: &authz.DataFilter{RowFilter: " region = 'EU'"}}))
	wantDenied(node2, authz.Select, accounts, `principal "bi" lacks SELECT on table "crm.accounts" (it has DESCRIBE)`)
	if err := node1.RevokeID(ctx, sel.ID); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("revoking twice = %v, want NotFound", err)
	}
	must(t, node1.RemoveMember(ctx, "readers", "bi"))
	wantDenied(node2, authz.Describe, accounts, `principal "bi" lacks DESCRIBE on table "crm.accounts"`)
	must(t, node1.AddMember(ctx, "readers", "bi"))
	wantAllowed(node2, authz.Describe, accounts)
	must(t, node1.DropRole(ctx, "readers"))
	wantDenied(node2, authz.Describe, crm, `principal "bi" lacks DESCRIBE on namespace "crm"`)
	if err := node1.RevokeID(ctx, g.ID); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("grant of a dropped role = %v, want NotFound (removed with the role)", err)
	}

	// Tag grants cover a table tagged after the grant.
	must(t, node1.SetTags(ctx, authz.TagTarget{On: crm}, map[string]string{"domain": "sales"}))
	_, err = node1.Grant(ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: authz.Warehouse("wh"),
		TagExpr: "domain = sales and sensitivity in (low)"})
	must(t, err)
	later := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "created_later"})
	wantDenied(node2, authz.Select, later, `principal "bi" lacks SELECT on table "crm.created_later"`)
	must(t, node1.SetTags(ctx, authz.TagTarget{On: later}, map[string]string{"sensitivity": "low"}))
	wantAllowed(node2, authz.Select, later)
	must(t, node1.DeleteTags(ctx, authz.TagTarget{On: later}, "sensitivity"))
	wantDenied(node2, authz.Select, later, `principal "bi" lacks SELECT on table "crm.created_later"`)
	if err := node1.DeleteTags(ctx, authz.TagTarget{On: later}, "sensitivity"); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("deleting an absent tag = %v, want NotFound", err)
	}

	// Dropping a table removes its grants.
	_, err = node1.Grant(ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Modify, On: accounts})
	must(t, err)
	wantAllowed(node2, authz.Modify, accounts)
	n, err := node1.DeleteGrantsOn(ctx, accounts)
	must(t, err)
	if n != 1 {
		t.Fatalf("DeleteGrantsOn = %d, want 1", n)
	}
	wantDenied(node2, authz.Modify, accounts, `principal "bi" lacks MODIFY on table "crm.accounts"`)

	list, err := node2.ListGrants(ctx, func(g *authz.Grant) bool { return g.Grantee == authz.Principal("bi") })
	must(t, err)
	if len(list) != 1 || list[0].TagExpr != "domain = sales AND sensitivity IN (low)" {
		t.Fatalf("ListGrants = %+v", list)
	}
}

func TestServiceValidation(t *testing.T) {
	ctx := t.Context()
	a := authz.New(openSQLite(t), authz.Options{})
	crm := authz.NamespaceOf("wh", catalog.Namespace{"crm"})
	for _, tt := range []struct {
		name string
		err  error
		kind floe.Kind
		msg  string
	}{
		{"empty role", a.CreateRole(ctx, authz.RoleInfo{}), floe.Invalid, "role name must not be empty"},
		{"member of missing role", a.AddMember(ctx, "nope", "bi"), floe.NotFound, "Role does not exist: nope"},
		{"grant to missing role", func() error {
			_, err := a.Grant(ctx, authz.Grant{Grantee: authz.Role("nope"), Privilege: authz.Describe, On: crm})
			return err
		}(), floe.NotFound, "Role does not exist: nope"},
		{"revoke absent", a.Revoke(ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Describe, On: crm}),
			floe.NotFound, `no grant of DESCRIBE on namespace "crm" to principal "bi"`},
		{"bad tag key", a.SetTags(ctx, authz.TagTarget{On: crm}, map[string]string{"a b": "c"}), floe.Invalid,
			`tag key "a b" may hold only letters, digits and _ . : / @ + -`},
		{"bad tag value", a.SetTags(ctx, authz.TagTarget{On: crm}, map[string]string{"k": "a\nb"}), floe.Invalid,
			`tag value "a\nb" contains a control character`},
		{"column of namespace", a.SetTags(ctx, authz.TagTarget{On: crm, Column: "c"}, map[string]string{"k": "v"}), floe.Invalid,
			"columns belong to tables and views, not to a namespace"},
		{"no tags", a.SetTags(ctx, authz.TagTarget{On: crm}, nil), floe.Invalid, "no tags to set"},
	} {
		if floe.KindOf(tt.err) != tt.kind || floe.PublicMessage(tt.err) != tt.msg {
			t.Errorf("%s: %v, want %v %q", tt.name, tt.err, tt.kind, tt.msg)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
