package authz

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

const wh = "wh"

func ns(path string) catalog.Namespace { return catalog.Namespace(strings.Split(path, ".")) }

func nsS(path string) Securable { return NamespaceOf(wh, ns(path)) }

func tbl(path string) Securable {
	i := strings.LastIndexByte(path, '.')
	return Table(wh, catalog.Ident{Namespace: ns(path[:i]), Name: path[i+1:]})
}

func view(path string) Securable {
	s := tbl(path)
	s.Kind = KindView
	return s
}

func grant(t testing.TB, g Grant) Grant {
	t.Helper()
	if err := g.normalize(); err != nil {
		t.Fatalf("grant %+v: %v", g, err)
	}
	return g
}

func tag(on Securable, kv string) Tag {
	k, v, _ := strings.Cut(kv, "=")
	return Tag{On: on, Key: k, Value: v}
}

func colTag(on Securable, col, kv string) Tag {
	t := tag(on, kv)
	t.Column = col
	return t
}

func sub(name string) Subject { return Subject{PrincipalID: "id-" + name, Principal: name} }

// fixture is the policy the decision tests share.
func fixture(t testing.TB, extra ...Tag) *Policy {
	t.Helper()
	snap := &Snapshot{
		Version: 7,
		Roles:   []RoleInfo{{Name: "analysts"}, {Name: "empty"}},
		Members: []Membership{{Role: "analysts", Principal: "alice"}, {Role: "empty", Principal: "alice"}},
		Grants: []Grant{
			grant(t, Grant{Grantee: Principal("reader"), Privilege: Describe, On: nsS("crm")}),
			grant(t, Grant{Grantee: Principal("bi"), Privilege: Describe, On: nsS("crm"), AllTables: true}),
			grant(t, Grant{Grantee: Principal("etl"), Privilege: Modify, On: tbl("crm.accounts")}),
			grant(t, Grant{Grantee: Role("analysts"), Privilege: Select, On: nsS("sales"), AllTables: true}),
			grant(t, Grant{Grantee: Principal("whuser"), Privilege: Describe, On: Warehouse(wh), AllTables: true}),
			grant(t, Grant{Grantee: Principal("whuser"), Privilege: CreateNamespace, On: Warehouse(wh)}),
			grant(t, Grant{Grantee: Principal("creator"), Privilege: CreateTable, On: nsS("crm")}),
			grant(t, Grant{Grantee: Principal("tagger"), Privilege: Select, On: Warehouse(wh), TagExpr: "domain=sales AND sensitivity=low"}),
			grant(t, Grant{Grantee: Principal("nsdescr"), Privilege: Describe, On: Warehouse(wh), TagExpr: "domain = sales"}),
			grant(t, Grant{Grantee: Principal("colsel"), Privilege: Select, On: Warehouse(wh), TagExpr: "sensitivity = high"}),
			grant(t, Grant{Grantee: Principal("other-wh"), Privilege: Select, On: Warehouse("wh2"), TagExpr: "domain = sales"}),
			// A column-tag grant whose filter keeps none of the matching columns.
			grant(t, Grant{Grantee: Principal("colnarrow"), Privilege: Select, On: Warehouse(wh), TagExpr: "sensitivity = high",
				Filter: &DataFilter{IncludeColumns: []string{"amount"}}}),
			grant(t, Grant{Grantee: Principal("filtered"), Privilege: Select, On: tbl("crm.accounts"),
				Filter: &DataFilter{RowFilter: " region = 'EU' ", ExcludeColumns: []string{"ssn"}}}),
			grant(t, Grant{Grantee: Principal("both"), Privilege: Select, On: tbl("crm.accounts"),
				Filter: &DataFilter{RowFilter: "region = 'EU'"}}),
			grant(t, Grant{Grantee: Principal("both"), Privilege: Select, On: nsS("crm"), AllTables: true}),
			grant(t, Grant{Grantee: Principal("viewer"), Privilege: Select, On: view("crm.v")}),
		},
		Tags: append([]Tag{
			tag(Warehouse(wh), "owner=platform"),
			tag(nsS("sales"), "domain=sales"),
			tag(nsS("crm"), "domain=crm"),
			tag(nsS("crm.eu"), "domain=sales"), // overrides crm's domain
			tag(tbl("sales.q1.orders"), "sensitivity=low"),
			tag(tbl("sales.q1.pii"), "sensitivity=high"),
			colTag(tbl("sales.q1.orders"), "email", "sensitivity=high"),
		}, extra...),
	}
	p, err := NewPolicy(snap)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	p := fixture(t)
	admin := Subject{PrincipalID: "id-root", Principal: "root", Admin: true}
	tests := []struct {
		sub  Subject
		priv Privilege
		on   Securable
		want string // "" = allowed
	}{
		// No grants at all.
		{sub("glue-federation"), Describe, nsS("crm"), `principal "glue-federation" lacks DESCRIBE on namespace "crm"`},
		{Subject{PrincipalID: "p-1"}, Describe, nsS("crm"), `principal "p-1" lacks DESCRIBE on namespace "crm"`},
		// A namespace grant covers the namespace and its descendants, not its tables.
		{sub("reader"), Describe, nsS("crm"), ""},
		{sub("reader"), Describe, nsS("crm.eu.deep"), ""},
		{sub("reader"), Describe, tbl("crm.accounts"), `principal "reader" lacks DESCRIBE on table "crm.accounts"`},
		{sub("reader"), Describe, nsS("sales"), `principal "reader" lacks DESCRIBE on namespace "sales"`},
		{sub("reader"), Describe, Warehouse(wh), `principal "reader" lacks DESCRIBE on warehouse "wh"`},
		{sub("reader"), CreateTable, nsS("crm"), `principal "reader" lacks CREATE_TABLE on namespace "crm" (it has DESCRIBE)`},
		// AllTables covers tables at any depth.
		{sub("bi"), Describe, tbl("crm.accounts"), ""},
		{sub("bi"), Describe, view("crm.eu.v"), ""},
		{sub("bi"), Select, tbl("crm.accounts"), `principal "bi" lacks SELECT on table "crm.accounts" (it has DESCRIBE)`},
		{sub("bi"), Describe, tbl("crmx.accounts"), `principal "bi" lacks DESCRIBE on table "crmx.accounts"`},
		// A table grant implies DESCRIBE on the table only.
		{sub("etl"), Modify, tbl("crm.accounts"), ""},
		{sub("etl"), Describe, tbl("crm.accounts"), ""},
		{sub("etl"), Select, tbl("crm.accounts"), `principal "etl" lacks SELECT on table "crm.accounts" (it has DESCRIBE, MODIFY)`},
		{sub("etl"), Describe, nsS("crm"), `principal "etl" lacks DESCRIBE on namespace "crm"`},
		{sub("etl"), Modify, view("crm.accounts"), `principal "etl" lacks MODIFY on view "crm.accounts"`},
		{sub("viewer"), Select, view("crm.v"), ""},
		{sub("viewer"), Select, tbl("crm.v"), `principal "viewer" lacks SELECT on table "crm.v"`},
		// Roles.
		{sub("alice"), Select, tbl("sales.q1.orders"), ""},
		{sub("alice"), Describe, nsS("sales.q1"), ""},
		{sub("alice"), CreateTable, nsS("sales"), `principal "alice" lacks CREATE_TABLE on namespace "sales" (it has DESCRIBE, SELECT)`},
		{sub("bob"), Select, tbl("sales.q1.orders"), `principal "bob" lacks SELECT on table "sales.q1.orders"`},
		// Warehouse grants.
		{sub("whuser"), Describe, tbl("any.where.t"), ""},
		{sub("whuser"), CreateNamespace, Warehouse(wh), ""},
		{sub("whuser"), CreateNamespace, nsS("crm"), ""},
		{sub("whuser"), Select, tbl("any.t"), `principal "whuser" lacks SELECT on table "any.t" (it has DESCRIBE)`},
		{sub("whuser"), Describe, NamespaceOf("wh2", ns("crm")), `principal "whuser" lacks DESCRIBE on namespace "crm"`},
		{sub("creator"), CreateTable, nsS("crm.eu"), ""},
		{sub("creator"), CreateView, nsS("crm"), `principal "creator" lacks CREATE_VIEW on namespace "crm" (it has DESCRIBE, CREATE_TABLE)`},
		// Admin.
		{admin, ManageGrants, Warehouse("anything"), ""},
		{admin, Select, tbl("x.y"), ""},
		// Tag expressions, with inheritance and overrides.
		{sub("tagger"), Select, tbl("sales.q1.orders"), ""},
		{sub("tagger"), Select, tbl("sales.q1.pii"), `principal "tagger" lacks SELECT on table "sales.q1.pii"`},
		{sub("tagger"), Select, tbl("sales.q1.untagged"), `principal "tagger" lacks SELECT on table "sales.q1.untagged"`},
		{sub("tagger"), Describe, tbl("sales.q1.orders"), ""},
		{sub("tagger"), Modify, tbl("sales.q1.orders"), `principal "tagger" lacks MODIFY on table "sales.q1.orders" (it has DESCRIBE, SELECT)`},
		{sub("nsdescr"), Describe, nsS("sales"), ""},
		{sub("nsdescr"), Describe, nsS("sales.q1"), ""},
		{sub("nsdescr"), Describe, nsS("crm"), `principal "nsdescr" lacks DESCRIBE on namespace "crm"`},
		{sub("nsdescr"), Describe, nsS("crm.eu"), ""},
		{sub("nsdescr"), Describe, tbl("crm.eu.t"), ""},
		{sub("nsdescr"), Describe, Warehouse(wh), `principal "nsdescr" lacks DESCRIBE on warehouse "wh"`},
		{sub("other-wh"), Select, tbl("sales.q1.orders"), `principal "other-wh" lacks SELECT on table "sales.q1.orders"`},
		// Column tags: a tag grant matching only a column covers that column.
		{sub("colsel"), Select, tbl("sales.q1.orders"), ""},
		{sub("colsel"), Select, tbl("sales.q1.pii"), ""},
		{sub("colsel"), Select, tbl("crm.accounts"), `principal "colsel" lacks SELECT on table "crm.accounts"`},
		// Filters do not change Check.
		{sub("filtered"), Select, tbl("crm.accounts"), ""},
	}
	for _, tt := range tests {
		err := p.Check(tt.sub, tt.priv, tt.on)
		if tt.want == "" {
			if err != nil {
				t.Errorf("Check(%s, %s, %s) = %v, want allowed", tt.sub, tt.priv, tt.on, err)
			}
			continue
		}
		var fe *floe.Error
		if !errors.As(err, &fe) || fe.Kind != floe.Forbidden || fe.Entity != "privilege" || fe.Msg != tt.want {
			t.Errorf("Check(%s, %s, %s) = %#v, want Forbidden %q", tt.sub, tt.priv, tt.on, err, tt.want)
		}
	}
}

func TestTableCreatedAfterTagGrant(t *testing.T) {
	later := tbl("sales.q2.new_orders")
	if err := fixture(t).Check(sub("tagger"), Select, later); err == nil {
		t.Fatal("untagged new table is readable")
	}
	// The table is created and tagged after the grant: the grant covers it.
	p := fixture(t, tag(later, "sensitivity=low"))
	if err := p.Check(sub("tagger"), Select, later); err != nil {
		t.Fatal(err)
	}
	// A table in crm.eu inherits domain=sales through the override.
	p = fixture(t, tag(tbl("crm.eu.t"), "sensitivity=low"), tag(tbl("crm.t"), "sensitivity=low"))
	if err := p.Check(sub("tagger"), Select, tbl("crm.eu.t")); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(sub("tagger"), Select, tbl("crm.t")); err == nil {
		t.Fatal("crm.t (domain=crm) is readable through a domain=sales grant")
	}
	// A lower level overrides a key and so removes the match.
	p = fixture(t, tag(tbl("sales.q1.orders"), "domain=hr"))
	if err := p.Check(sub("tagger"), Select, tbl("sales.q1.orders")); err == nil {
		t.Fatal("override of domain on the table did not remove the match")
	}
}

func TestReadFilters(t *testing.T) {
	p := fixture(t)
	tests := []struct {
		sub     Subject
		on      Securable
		want    []DataFilter
		wantErr string
	}{
		{sub("alice"), tbl("sales.q1.orders"), nil, ""},
		{Subject{Principal: "root", Admin: true}, tbl("crm.accounts"), nil, ""},
		{sub("both"), tbl("crm.accounts"), nil, ""},
		{sub("filtered"), tbl("crm.accounts"), []DataFilter{{RowFilter: "region = 'EU'", ExcludeColumns: []string{"ssn"}}}, ""},
		{sub("tagger"), tbl("sales.q1.orders"), []DataFilter{{ExcludeColumns: []string{"email"}}}, ""},
		{sub("colsel"), tbl("sales.q1.orders"), []DataFilter{{IncludeColumns: []string{"email"}}}, ""},
		{sub("colsel"), tbl("sales.q1.pii"), nil, ""},
		// The tag matches only column email, the filter keeps only amount:
		// nothing is readable, which must never turn into full access.
		{sub("colnarrow"), tbl("sales.q1.orders"), nil, `principal "colnarrow" may read no column of table "sales.q1.orders": the column filters of its SELECT grants leave none`},
		{sub("colnarrow"), tbl("sales.q1.pii"), []DataFilter{{IncludeColumns: []string{"amount"}}}, ""},
		{sub("bi"), tbl("crm.accounts"), nil, `principal "bi" lacks SELECT on table "crm.accounts" (it has DESCRIBE)`},
	}
	for _, tt := range tests {
		got, err := p.ReadFilters(tt.sub, tt.on)
		if tt.wantErr != "" {
			if floe.KindOf(err) != floe.Forbidden || floe.PublicMessage(err) != tt.wantErr {
				t.Errorf("ReadFilters(%s, %s) error = %v, want %q", tt.sub, tt.on, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadFilters(%s, %s): %v", tt.sub, tt.on, err)
			continue
		}
		if !slices.EqualFunc(got, tt.want, func(a, b DataFilter) bool { return equalFilter(&a, &b) }) || (got == nil) != (tt.want == nil) {
			t.Errorf("ReadFilters(%s, %s) = %+v, want %+v", tt.sub, tt.on, got, tt.want)
		}
		fileErr := p.CheckFileAccess(tt.sub, tt.on)
		if tt.want == nil && fileErr != nil {
			t.Errorf("CheckFileAccess(%s, %s) = %v, want nil", tt.sub, tt.on, fileErr)
		}
		if tt.want != nil && (floe.KindOf(fileErr) != floe.Forbidden || !strings.Contains(fileErr.Error(), "SQL endpoint")) {
			t.Errorf("CheckFileAccess(%s, %s) = %v, want a Forbidden error pointing to the SQL endpoint", tt.sub, tt.on, fileErr)
		}
	}
	want := `principal "filtered" may read table "crm.accounts" only through a data filter (row filter or column restriction), ` +
		`so no storage credentials are vended for it; query it through the SQL endpoint, which enforces the filter`
	if err := p.CheckFileAccess(sub("filtered"), tbl("crm.accounts")); floe.PublicMessage(err) != want {
		t.Errorf("CheckFileAccess message = %q, want %q", floe.PublicMessage(err), want)
	}
	if _, err := p.ReadFilters(sub("alice"), nsS("sales")); floe.KindOf(err) != floe.Invalid {
		t.Errorf("ReadFilters on a namespace = %v, want Invalid", err)
	}
}

func TestEffectiveAndTags(t *testing.T) {
	p := fixture(t)
	if got := p.Effective(sub("alice"), tbl("sales.x")); got != SetOf(Describe, Select) {
		t.Errorf("Effective(alice) = %v", got)
	}
	if got := p.Effective(sub("nobody"), tbl("sales.x")); got != 0 {
		t.Errorf("Effective(nobody) = %v", got)
	}
	if got := p.Effective(Subject{Admin: true}, tbl("sales.x")); got.String() != "DESCRIBE, SELECT, MODIFY, ALTER, CREATE_NAMESPACE, CREATE_TABLE, CREATE_VIEW, DROP, MANAGE_GRANTS, CREATE_SHARE" {
		t.Errorf("Effective(admin) = %v", got)
	}
	got := p.EffectiveTags(TagTarget{On: tbl("sales.q1.orders"), Column: "email"})
	want := map[string]string{"owner": "platform", "domain": "sales", "sensitivity": "high"}
	if len(got) != len(want) || got["owner"] != "platform" || got["domain"] != "sales" || got["sensitivity"] != "high" {
		t.Errorf("EffectiveTags = %v, want %v", got, want)
	}
	if got := p.EffectiveTags(TagTarget{On: tbl("crm.eu.x")}); got["domain"] != "sales" {
		t.Errorf("EffectiveTags(crm.eu.x) = %v", got)
	}
	if got := p.RolesOf("alice"); !slices.Equal(got, []string{"analysts", "empty"}) {
		t.Errorf("RolesOf = %v", got)
	}
	if got := p.Members("analysts"); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("Members = %v", got)
	}
	if p.Version() != 7 || p.GrantCount() != 16 || p.TagCount() != 7 {
		t.Errorf("policy = %s", p)
	}
}

func TestGrantValidation(t *testing.T) {
	tests := []struct {
		g    Grant
		want string
	}{
		{Grant{Grantee: Principal("p"), Privilege: Select, On: nsS("crm")}, `SELECT on a namespace covers no table unless all_tables is set (grants are per named resource)`},
		{Grant{Grantee: Principal("p"), Privilege: Modify, On: Warehouse(wh)}, `MODIFY on a warehouse covers no table unless all_tables is set (grants are per named resource)`},
		{Grant{Grantee: Principal("p"), Privilege: CreateTable, On: tbl("a.t")}, `CREATE_TABLE cannot be granted on a table (it applies to namespaces and warehouses)`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), AllTables: true}, `all_tables applies to a warehouse or namespace, not to a table`},
		{Grant{Grantee: Principal("p"), Privilege: Describe, On: tbl("a.t"), Filter: &DataFilter{RowFilter: "x > 1"}}, `a data filter applies only to SELECT, not to DESCRIBE`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{IncludeColumns: []string{"a"}, ExcludeColumns: []string{"b"}}}, `a filter has either included or excluded columns, not both`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{IncludeColumns: []string{"a", "a"}}}, `column "a" is listed twice`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{RowFilter: "a\x00"}}, `row filter contains a control character`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{RowFilter: strings.Repeat("x", MaxRowFilterLength+1)}}, `row filter is longer than 4096 bytes`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: nsS("a"), TagExpr: "a=b"}, `a tag-based grant is scoped to a warehouse, not to a namespace`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: Warehouse(wh), TagExpr: "a=b", AllTables: true}, `a tag-based grant covers the matching tables already; all_tables does not apply`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: Warehouse(wh), TagExpr: "a="}, `tag expression: expected a tag value but found end of expression at offset 3`},
		{Grant{Grantee: Principal(""), Privilege: Select, On: tbl("a.t")}, `principal name must not be empty`},
		{Grant{Grantee: Grantee{Name: "x"}, Privilege: Select, On: tbl("a.t")}, `unknown grantee kind 0`},
		{Grant{Grantee: Principal("p"), Privilege: Privilege(99), On: tbl("a.t")}, `unknown privilege 99`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: Securable{Kind: KindTable, Name: "t"}}, `warehouse name must not be empty`},
		{Grant{Grantee: Principal("p"), Privilege: Select, On: Securable{Kind: KindTable, Warehouse: wh, Name: "t"}}, `namespace must have at least one level`},
	}
	for _, tt := range tests {
		err := tt.g.normalize()
		if floe.KindOf(err) != floe.Invalid || floe.PublicMessage(err) != tt.want {
			t.Errorf("normalize(%+v) = %v, want Invalid %q", tt.g, err, tt.want)
		}
	}
	// Canonical forms give equal IDs.
	a := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: Warehouse(wh), TagExpr: "a=b AND c IN (x,y)"})
	b := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: Warehouse(wh), TagExpr: "a = b and (c in ('x', y))"})
	if a.ID != b.ID || a.TagExpr != "a = b AND c IN (x, y)" {
		t.Errorf("IDs %s %s, expr %q", a.ID, b.ID, a.TagExpr)
	}
	c := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{IncludeColumns: []string{"b", "a"}}})
	d := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{IncludeColumns: []string{"a", "b"}}})
	e := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t"), Filter: &DataFilter{}})
	f := grant(t, Grant{Grantee: Principal("p"), Privilege: Select, On: tbl("a.t")})
	if c.ID != d.ID || e.ID != f.ID || c.ID == f.ID || e.Filter != nil {
		t.Errorf("filter identity: %s %s %s %s", c.ID, d.ID, e.ID, f.ID)
	}
	if got := c.Describe(); got != `SELECT on table "a.t" to principal "p" with a data filter` {
		t.Errorf("Describe = %q", got)
	}
}

func TestPrivilegeNames(t *testing.T) {
	for _, p := range AllPrivileges() {
		q, err := ParsePrivilege(strings.ToLower(p.String()))
		if err != nil || q != p {
			t.Errorf("ParsePrivilege(%s) = %v, %v", p, q, err)
		}
	}
	if p, err := ParsePrivilege("manage-grants"); err != nil || p != ManageGrants {
		t.Errorf("ParsePrivilege(manage-grants) = %v, %v", p, err)
	}
	if _, err := ParsePrivilege("ALL"); floe.PublicMessage(err) != `unknown privilege "ALL" (want one of DESCRIBE, SELECT, MODIFY, ALTER, CREATE_NAMESPACE, CREATE_TABLE, CREATE_VIEW, DROP, MANAGE_GRANTS, CREATE_SHARE)` {
		t.Errorf("ParsePrivilege(ALL) = %v", err)
	}
}
