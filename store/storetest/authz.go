package storetest

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// testAuthz covers authz.Store: roles, memberships, grants, tags, the
// version counter and consistent loading.
func testAuthz(t *testing.T, e *env) {
	version := func() int64 {
		t.Helper()
		v, err := e.s.AuthzVersion(e.ctx)
		must(t, err)
		return v
	}
	load := func() *authz.Snapshot {
		t.Helper()
		snap, err := e.s.LoadAuthz(e.ctx)
		must(t, err)
		if snap.Version != version() {
			t.Fatalf("LoadAuthz version %d, AuthzVersion %d", snap.Version, version())
		}
		return snap
	}
	// bumped runs fn and checks that it changed the version.
	bumped := func(what string, fn func() error) {
		t.Helper()
		before := version()
		must(t, fn())
		if after := version(); after <= before {
			t.Errorf("%s: version %d -> %d, want an increase", what, before, after)
		}
	}

	if v := version(); v != 0 {
		t.Errorf("initial version = %d, want 0", v)
	}
	snap := load()
	if snap.Roles == nil || snap.Members == nil || snap.Grants == nil || snap.Tags == nil ||
		len(snap.Roles)+len(snap.Members)+len(snap.Grants)+len(snap.Tags) != 0 {
		t.Fatalf("empty store snapshot = %+v, want empty non-nil slices", snap)
	}

	// Roles and memberships.
	created := time.Date(2026, 2, 3, 4, 5, 6, 789123456, time.FixedZone("X", 3600))
	bumped("create role", func() error {
		return e.s.CreateRole(e.ctx, authz.RoleInfo{Name: "analysts", Description: "Read sales", CreatedAt: created})
	})
	bumped("create role", func() error { return e.s.CreateRole(e.ctx, authz.RoleInfo{Name: "etl"}) })
	wantErr(t, e.s.CreateRole(e.ctx, authz.RoleInfo{Name: "analysts"}), floe.AlreadyExists, "role", "Role already exists: analysts")
	wantErr(t, e.s.CreateRole(e.ctx, authz.RoleInfo{}), floe.Invalid, "role", "")
	bumped("add member", func() error { return e.s.AddRoleMember(e.ctx, "analysts", "alice") })
	bumped("add member", func() error { return e.s.AddRoleMember(e.ctx, "analysts", "bob") })
	bumped("add member", func() error { return e.s.AddRoleMember(e.ctx, "etl", "bob") })
	wantErr(t, e.s.AddRoleMember(e.ctx, "analysts", "alice"), floe.AlreadyExists, "role member",
		"Principal alice is already a member of role analysts")
	wantErr(t, e.s.AddRoleMember(e.ctx, "nope", "alice"), floe.NotFound, "role", "Role does not exist: nope")
	bumped("remove member", func() error { return e.s.RemoveRoleMember(e.ctx, "analysts", "bob") })
	wantErr(t, e.s.RemoveRoleMember(e.ctx, "analysts", "bob"), floe.NotFound, "role member",
		"Principal bob is not a member of role analysts")

	snap = load()
	wantRoles := []authz.RoleInfo{
		{Name: "analysts", Description: "Read sales", CreatedAt: created.UTC().Truncate(time.Microsecond)},
		{Name: "etl", CreatedAt: e.clock.Now().UTC().Truncate(time.Microsecond)},
	}
	if !slices.EqualFunc(snap.Roles, wantRoles, func(a, b authz.RoleInfo) bool {
		return a.Name == b.Name && a.Description == b.Description && a.CreatedAt.Equal(b.CreatedAt) && a.CreatedAt.Location() == time.UTC
	}) {
		t.Errorf("roles = %+v, want %+v", snap.Roles, wantRoles)
	}
	if want := []authz.Membership{{Role: "analysts", Principal: "alice"}, {Role: "etl", Principal: "bob"}}; !slices.Equal(snap.Members, want) {
		t.Errorf("members = %+v, want %+v", snap.Members, want)
	}

	// Grants round-trip every field.
	crm := catalog.Namespace{"crm", "eu"}
	accounts := authz.Table("wh", catalog.Ident{Namespace: crm, Name: "accounts"})
	grants := []authz.Grant{
		{Grantee: authz.Role("analysts"), Privilege: authz.Select, On: authz.NamespaceOf("wh", crm), AllTables: true,
			CreatedAt: created, CreatedBy: "admin"},
		{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: accounts,
			Filter: &authz.DataFilter{RowFilter: "region = 'EU' AND x <> \"q\"", IncludeColumns: []string{"a", "b"}}},
		{Grantee: authz.Principal("bi"), Privilege: authz.Describe, On: accounts},
		{Grantee: authz.Principal("tagger"), Privilege: authz.Select, On: authz.Warehouse("wh"), TagExpr: "domain = sales"},
		{Grantee: authz.Role("etl"), Privilege: authz.Modify, On: authz.View("wh", catalog.Ident{Namespace: crm, Name: "accounts"})},
		{Grantee: authz.Principal("bi"), Privilege: authz.Describe, On: authz.NamespaceOf("wh", crm)},
	}
	for i := range grants {
		grants[i].ID = grants[i].Key()
		bumped("put grant", func() error { return e.s.PutGrant(e.ctx, grants[i]) })
	}
	wantErr(t, e.s.PutGrant(e.ctx, grants[2]), floe.AlreadyExists, "grant",
		`Grant already exists: DESCRIBE on table "crm.eu.accounts" to principal "bi"`)
	ghost := authz.Grant{Grantee: authz.Role("ghost"), Privilege: authz.Describe, On: accounts}
	ghost.ID = ghost.Key()
	wantErr(t, e.s.PutGrant(e.ctx, ghost), floe.NotFound, "role", "Role does not exist: ghost")
	wantErr(t, e.s.PutGrant(e.ctx, authz.Grant{Grantee: authz.Principal("x")}), floe.Invalid, "grant", "")

	wantGrants := func(want ...authz.Grant) {
		t.Helper()
		got := load().Grants
		want = slices.Clone(want)
		slices.SortFunc(want, func(a, b authz.Grant) int { return compareStrings(a.ID, b.ID) })
		if len(got) != len(want) {
			t.Fatalf("got %d grants, want %d: %+v", len(got), len(want), got)
		}
		for i := range got {
			g, w := got[i], want[i]
			wantAt := w.CreatedAt
			if wantAt.IsZero() {
				wantAt = e.clock.Now()
			}
			if g.ID != w.ID || g.Key() != g.ID || g.Grantee != w.Grantee || g.Privilege != w.Privilege ||
				g.On.String() != w.On.String() || g.On.Kind != w.On.Kind || g.On.Warehouse != w.On.Warehouse ||
				!slices.Equal(g.On.Namespace, w.On.Namespace) || g.TagExpr != w.TagExpr || g.AllTables != w.AllTables ||
				g.FilterJSON() != w.FilterJSON() || g.CreatedBy != w.CreatedBy ||
				!g.CreatedAt.Equal(wantAt.Truncate(time.Microsecond)) || g.CreatedAt.Location() != time.UTC {
				t.Errorf("grant %d = %+v, want %+v", i, g, w)
			}
			if (g.Filter == nil) != (w.Filter == nil) {
				t.Errorf("grant %d filter = %+v, want %+v", i, g.Filter, w.Filter)
			}
		}
	}
	wantGrants(grants...)

	bumped("delete grant", func() error { return e.s.DeleteGrant(e.ctx, grants[2].ID) })
	wantErr(t, e.s.DeleteGrant(e.ctx, grants[2].ID), floe.NotFound, "grant", "Grant does not exist: "+grants[2].ID)
	wantGrants(grants[0], grants[1], grants[3], grants[4], grants[5])

	// PutGrants: one transaction, existing IDs skipped, all or nothing.
	owner := []authz.Grant{grants[2], grants[3],
		{Grantee: authz.Principal("bi"), Privilege: authz.Drop, On: accounts}}
	owner[2].ID = owner[2].Key()
	bumped("put grants", func() error { return e.s.PutGrants(e.ctx, owner) })
	wantGrants(grants[0], grants[1], grants[2], grants[3], grants[4], grants[5], owner[2])
	wantErr(t, e.s.PutGrants(e.ctx, []authz.Grant{grants[2], ghost}), floe.NotFound, "role", "Role does not exist: ghost")
	bumped("delete grant", func() error { return e.s.DeleteGrant(e.ctx, grants[2].ID) })
	bumped("delete grant", func() error { return e.s.DeleteGrant(e.ctx, owner[2].ID) })
	wantGrants(grants[0], grants[1], grants[3], grants[4], grants[5])

	// Tags.
	tagsOf := func(snap *authz.Snapshot) map[string]string {
		out := map[string]string{}
		for _, tg := range snap.Tags {
			out[tg.On.String()+"/"+tg.Column+"/"+tg.Key] = tg.Value
		}
		return out
	}
	nsT := authz.TagTarget{On: authz.NamespaceOf("wh", crm)}
	tblT := authz.TagTarget{On: accounts}
	colT := authz.TagTarget{On: accounts, Column: "email"}
	viewT := authz.TagTarget{On: authz.View("wh", catalog.Ident{Namespace: crm, Name: "accounts"})}
	bumped("set tags", func() error { return e.s.SetTags(e.ctx, nsT, map[string]string{"domain": "crm", "owner": "it"}) })
	bumped("set tags", func() error { return e.s.SetTags(e.ctx, tblT, map[string]string{"sensitivity": "low"}) })
	bumped("set tags", func() error {
		return e.s.SetTags(e.ctx, colT, map[string]string{"sensitivity": "high", "pii": "yes it's"})
	})
	bumped("set tags", func() error { return e.s.SetTags(e.ctx, viewT, map[string]string{"sensitivity": "low"}) })
	bumped("set tags", func() error { return e.s.SetTags(e.ctx, nsT, map[string]string{"domain": "sales"}) }) // replaces
	want := map[string]string{
		`namespace "crm.eu"//domain`:                "sales",
		`namespace "crm.eu"//owner`:                 "it",
		`table "crm.eu.accounts"//sensitivity`:      "low",
		`table "crm.eu.accounts"/email/sensitivity`: "high",
		`table "crm.eu.accounts"/email/pii`:         "yes it's",
		`view "crm.eu.accounts"//sensitivity`:       "low",
	}
	if got := tagsOf(load()); !maps.Equal(got, want) {
		t.Errorf("tags = %v, want %v", got, want)
	}
	before := version()
	n, err := e.s.DeleteTags(e.ctx, colT, []string{"pii", "absent"})
	must(t, err)
	if n != 1 || version() <= before {
		t.Errorf("DeleteTags = %d (version %d -> %d), want 1 and a new version", n, before, version())
	}
	delete(want, `table "crm.eu.accounts"/email/pii`)
	if got := tagsOf(load()); !maps.Equal(got, want) {
		t.Errorf("tags after DeleteTags = %v, want %v", got, want)
	}

	// DeleteGrantsOn removes the named grants and the tags of exactly that
	// securable (and its columns), not tag-based grants nor other kinds.
	before = version()
	n, err = e.s.DeleteGrantsOn(e.ctx, accounts)
	must(t, err)
	if n != 1 || version() <= before {
		t.Errorf("DeleteGrantsOn = %d (version %d -> %d), want 1 and a new version", n, before, version())
	}
	wantGrants(grants[0], grants[3], grants[4], grants[5])
	delete(want, `table "crm.eu.accounts"//sensitivity`)
	delete(want, `table "crm.eu.accounts"/email/sensitivity`)
	if got := tagsOf(load()); !maps.Equal(got, want) {
		t.Errorf("tags after DeleteGrantsOn = %v, want %v", got, want)
	}
	n, err = e.s.DeleteGrantsOn(e.ctx, authz.NamespaceOf("wh", catalog.Namespace{"crm"}))
	must(t, err)
	if n != 0 {
		t.Errorf("DeleteGrantsOn(crm) = %d, want 0 (grants on crm.eu stay)", n)
	}
	n, err = e.s.DeleteGrantsOn(e.ctx, authz.Warehouse("wh"))
	must(t, err)
	if n != 0 {
		t.Errorf("DeleteGrantsOn(wh) = %d, want 0 (tag-based grants stay)", n)
	}

	// Dropping a role removes its memberships and grants.
	bumped("drop role", func() error { return e.s.DropRole(e.ctx, "analysts") })
	wantErr(t, e.s.DropRole(e.ctx, "analysts"), floe.NotFound, "role", "Role does not exist: analysts")
	snap = load()
	if len(snap.Roles) != 1 || snap.Roles[0].Name != "etl" || !slices.Equal(snap.Members, []authz.Membership{{Role: "etl", Principal: "bob"}}) {
		t.Errorf("after DropRole: roles %+v members %+v", snap.Roles, snap.Members)
	}
	wantGrants(grants[3], grants[4], grants[5])
	// A role created again under the old name starts empty.
	must(t, e.s.CreateRole(e.ctx, authz.RoleInfo{Name: "analysts"}))
	wantGrants(grants[3], grants[4], grants[5])

	// The snapshot builds a policy.
	p, err := authz.NewPolicy(load())
	must(t, err)
	bob := authz.Subject{Principal: "bob"}
	if err := p.Check(bob, authz.Modify, grants[4].On); err != nil {
		t.Errorf("bob through role etl: %v", err)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testColumnBindings covers authz.Store.PutColumnBindings: the first
// binding of a scope, table and name is kept; the version changes only when
// one is stored; a grant's bindings go with the grant.
func testColumnBindings(t *testing.T, e *env) {
	version := func() int64 {
		t.Helper()
		v, err := e.s.AuthzVersion(e.ctx)
		must(t, err)
		return v
	}
	bindings := func() []authz.ColumnBinding {
		t.Helper()
		snap, err := e.s.LoadAuthz(e.ctx)
		must(t, err)
		if snap.Bindings == nil {
			t.Fatal("Bindings is nil")
		}
		return snap.Bindings
	}
	if n := len(bindings()); n != 0 {
		t.Fatalf("%d bindings in an empty store", n)
	}
	g, err := authz.New(e.s, authz.Options{}).Grant(e.ctx, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select,
		On:     authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"}),
		Filter: &authz.DataFilter{ExcludeColumns: []string{"email"}}})
	must(t, err)
	v0 := version()
	must(t, e.s.PutColumnBindings(e.ctx, []authz.ColumnBinding{
		{Scope: g.ID, Table: "u1", Name: "email", FieldID: 3},
		{Scope: authz.TagScope, Table: "u1", Name: "ssn", FieldID: 4},
		{Scope: g.ID, Table: "u1", Name: "Mixed Case", FieldID: authz.AbsentField},
	}))
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("version %d -> %d after new bindings", v0, v1)
	}
	// Rebinding a name keeps the first binding and changes nothing.
	must(t, e.s.PutColumnBindings(e.ctx, []authz.ColumnBinding{{Scope: g.ID, Table: "u1", Name: "email", FieldID: 9}}))
	if v := version(); v != v1 {
		t.Fatalf("version %d -> %d after a binding that existed", v1, v)
	}
	want := []authz.ColumnBinding{
		{Scope: g.ID, Table: "u1", Name: "Mixed Case", FieldID: authz.AbsentField},
		{Scope: g.ID, Table: "u1", Name: "email", FieldID: 3},
		{Scope: authz.TagScope, Table: "u1", Name: "ssn", FieldID: 4},
	}
	got := bindings()
	slices.SortFunc(got, func(a, b authz.ColumnBinding) int {
		return strings.Compare(a.Scope+"\x00"+a.Name, b.Scope+"\x00"+b.Name)
	})
	slices.SortFunc(want, func(a, b authz.ColumnBinding) int {
		return strings.Compare(a.Scope+"\x00"+a.Name, b.Scope+"\x00"+b.Name)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("bindings %+v, want %+v", got, want)
	}
	wantErr(t, e.s.PutColumnBindings(e.ctx, []authz.ColumnBinding{{Scope: "", Table: "u1", Name: "x"}}), floe.Invalid, "column binding", "")
	// Revoking the grant removes its bindings, not the tags'.
	must(t, e.s.DeleteGrant(e.ctx, g.ID))
	if got := bindings(); len(got) != 1 || got[0].Scope != authz.TagScope {
		t.Fatalf("bindings after revoke: %+v", got)
	}
}
