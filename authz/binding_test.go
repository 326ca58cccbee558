package authz_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

func TestIdentifiers(t *testing.T) {
	for _, tt := range []struct {
		sql  string
		want []string
	}{
		{"region = 'eu'", []string{"region"}},
		{`"Region" = 'it''s' AND amount > 1.5e3`, []string{"Region", "AND", "amount"}},
		{`"a""b" IN ('x', 'y') -- region`, []string{`a"b`, "IN"}},
		{"lower(name) /* ssn */ = 'x' OR t.id = 2", []string{"lower", "name", "OR", "t", "id"}},
		{"région = 1 AND région = 2", []string{"région", "AND"}},
		{"'unterminated", nil},
		{`"unterminated`, []string{"unterminated"}},
		{"x /* unterminated", []string{"x"}},
		{"", nil},
	} {
		if got := authz.Identifiers(tt.sql); !slices.Equal(got, tt.want) {
			t.Errorf("Identifiers(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
}

func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{"region = 'eu'", `"a""b" = 1 -- c`, "x /* y */ AND z", "'", `"`, "/*", "1e5_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := authz.Identifiers(s)
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || seen[id] {
				t.Fatalf("Identifiers(%q) = %q: empty or repeated", s, ids)
			}
			seen[id] = true
			if len(id) > len(s) {
				t.Fatalf("Identifiers(%q): %q longer than the input", s, id)
			}
		}
	})
}

// people is a table whose column "ssn" (field 4) was renamed "tax_id" and
// whose "region" (field 3) was dropped and re-added as field 6.
func renamedPeople() *authz.TableColumns {
	return &authz.TableColumns{
		UUID: "u-1",
		Current: []authz.Field{{ID: 1, Name: "id"}, {ID: 2, Name: "name"}, {ID: 4, Name: "tax_id"},
			{ID: 5, Name: "email"}, {ID: 6, Name: "region"}},
		Schemas: []authz.TableSchema{
			{ID: 1, Fields: []authz.Field{{ID: 1, Name: "id"}, {ID: 2, Name: "name"}, {ID: 3, Name: "region"}, {ID: 4, Name: "tax_id"}, {ID: 5, Name: "email"}}},
			{ID: 0, Fields: []authz.Field{{ID: 1, Name: "id"}, {ID: 2, Name: "name"}, {ID: 3, Name: "region"}, {ID: 4, Name: "ssn"}, {ID: 5, Name: "email"}}},
		},
	}
}

// TestBindFilters checks the binding rules on one table: names bound at a
// first read resolve through the oldest schema that has them; bindings
// stored before win; exclusions also hide a column with the name now.
func TestBindFilters(t *testing.T) {
	tbl := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"})
	excl := authz.Grant{ID: "g-excl", Grantee: authz.Principal("a"), Privilege: authz.Select, On: tbl,
		Filter: &authz.DataFilter{ExcludeColumns: []string{"ssn", "email"}}}
	incl := authz.Grant{ID: "g-incl", Grantee: authz.Principal("b"), Privilege: authz.Select, On: tbl,
		Filter: &authz.DataFilter{IncludeColumns: []string{"id", "name", "phone"}, RowFilter: "region = 'eu'"}}
	snap := &authz.Snapshot{Grants: []authz.Grant{excl, incl},
		// "name" of g-incl was bound before to field 2; "email" of g-excl
		// was absent when bound (a column added later under the name).
		Bindings: []authz.ColumnBinding{{Scope: "g-incl", Table: "u-1", Name: "name", FieldID: 2},
			{Scope: "g-excl", Table: "u-1", Name: "email", FieldID: authz.AbsentField}}}
	p, err := authz.NewPolicy(snap)
	if err != nil {
		t.Fatal(err)
	}
	tc := renamedPeople()

	b, err := p.BindFilters(authz.Subject{Principal: "a"}, tbl, tc)
	if err != nil || len(b.Filters) != 1 {
		t.Fatalf("a: %+v %v", b, err)
	}
	f := b.Filters[0]
	var shown []int
	for _, fld := range tc.Current {
		if f.Shows(fld.ID) {
			shown = append(shown, fld.ID)
		}
	}
	// ssn is field 4 (oldest schema); email is hidden by its name now.
	if !slices.Equal(shown, []int{1, 2, 6}) {
		t.Fatalf("a sees fields %v", shown)
	}
	if !slices.ContainsFunc(b.New, func(c authz.ColumnBinding) bool { return c.Name == "ssn" && c.FieldID == 4 }) {
		t.Fatalf("new bindings %+v", b.New)
	}

	b, err = p.BindFilters(authz.Subject{Principal: "b"}, tbl, tc)
	if err != nil || len(b.Filters) != 1 {
		t.Fatalf("b: %+v %v", b, err)
	}
	f = b.Filters[0]
	shown = nil
	for _, fld := range tc.Current {
		if f.Shows(fld.ID) {
			shown = append(shown, fld.ID)
		}
	}
	if !slices.Equal(shown, []int{1, 2}) {
		t.Fatalf("b sees fields %v", shown)
	}
	// The row filter's region is the dropped field 3, not the new 6.
	if id, ok := f.RowColumn("REGION"); !ok || id != 3 {
		t.Fatalf("RowColumn(region) = %d %v", id, ok)
	}
	if _, ok := tc.NameOf(3); ok {
		t.Fatal("field 3 is not in the table")
	}
	if _, ok := f.RowColumn("phone"); ok {
		t.Fatal("phone was never a column")
	}

	// Bound as the grant is made: the current schema.
	now := p.BindNow("g-new", tc, []string{"region", "tax_id", "nope"})
	want := map[string]int{"region": 6, "tax_id": 4, "nope": authz.AbsentField}
	if len(now) != 3 {
		t.Fatalf("BindNow %+v", now)
	}
	for _, c := range now {
		if want[c.Name] != c.FieldID || c.Scope != "g-new" || c.Table != "u-1" {
			t.Fatalf("BindNow %+v", now)
		}
	}
	// Bindings already stored are not made again.
	if again := p.BindNow("g-incl", tc, []string{"name"}); len(again) != 0 {
		t.Fatalf("BindNow rebinds %+v", again)
	}

	// No SELECT: the usual denial.
	if _, err := p.BindFilters(authz.Subject{Principal: "c"}, tbl, tc); err == nil || !strings.Contains(err.Error(), "lacks SELECT") {
		t.Fatalf("c: %v", err)
	}
	// Administrators are not filtered.
	if b, err := p.BindFilters(authz.Subject{Admin: true}, tbl, tc); err != nil || b.Filters != nil {
		t.Fatalf("admin: %+v %v", b, err)
	}
}

// TestBindTagsFollowColumns: a tag grant that leaves out columns tagged
// high keeps leaving out the tagged field after a rename.
func TestBindTagsFollowColumns(t *testing.T) {
	tbl := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"})
	snap := &authz.Snapshot{
		Grants: []authz.Grant{{ID: "g-tag", Grantee: authz.Principal("a"), Privilege: authz.Select, On: authz.Warehouse("wh"), TagExpr: "s = low"}},
		Tags:   []authz.Tag{{On: tbl, Key: "s", Value: "low"}, {On: tbl, Column: "ssn", Key: "s", Value: "high"}},
	}
	p, err := authz.NewPolicy(snap)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.BindFilters(authz.Subject{Principal: "a"}, tbl, renamedPeople())
	if err != nil || len(b.Filters) != 1 {
		t.Fatalf("%+v %v", b, err)
	}
	if b.Filters[0].Shows(4) || !b.Filters[0].Shows(2) {
		t.Fatalf("the tagged field: shows(4)=%v", b.Filters[0].Shows(4))
	}
	if !slices.Contains(b.New, authz.ColumnBinding{Scope: authz.TagScope, Table: "u-1", Name: "ssn", FieldID: 4}) {
		t.Fatalf("new bindings %+v", b.New)
	}
}

// TestBindFiltersEmptied: a grant whose included columns do not exist in
// the table gives no column; with no other grant the read is refused.
func TestBindFiltersEmptied(t *testing.T) {
	tbl := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"})
	p, err := authz.NewPolicy(&authz.Snapshot{Grants: []authz.Grant{{ID: "g", Grantee: authz.Principal("a"), Privilege: authz.Select,
		On: tbl, Filter: &authz.DataFilter{IncludeColumns: []string{"phone"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.BindFilters(authz.Subject{Principal: "a"}, tbl, renamedPeople()); err == nil || !strings.Contains(err.Error(), "may read no column") {
		t.Fatalf("err %v", err)
	}
}
