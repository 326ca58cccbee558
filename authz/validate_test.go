package authz_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// fakeTables is a TableColumnsSource of one table, crm.accounts.
type fakeTables struct{ tc *authz.TableColumns }

func (f fakeTables) TableColumns(_ context.Context, _ string, id catalog.Ident) (*authz.TableColumns, error) {
	if id.String() != "crm.accounts" {
		return nil, floe.E(floe.NotFound, "table", "Table does not exist: %s", id)
	}
	return f.tc, nil
}

// wordParser is a RowFilterParser for tests: the column references of a
// filter are its words that are not the keywords AND, OR, NOT, IS, NULL;
// a filter with "((" is not valid SQL.
type wordParser struct{}

func (wordParser) Columns(_ context.Context, rf string) ([]string, error) {
	if strings.Contains(rf, "((") {
		return nil, floe.E(floe.Invalid, "filter", "the row filter is not valid SQL: syntax error")
	}
	var out []string
	for _, w := range authz.Identifiers(rf) {
		switch strings.ToUpper(w) {
		case "AND", "OR", "NOT", "IS", "NULL":
			continue
		}
		out = append(out, w)
	}
	return out, nil
}

// TestGrantValidatesFilterColumns: a data filter on a table that exists is
// checked against the table's current columns when the grant is made; a
// column the table does not have is refused (Invalid, naming the column
// and the table) instead of failing later for the grantee.
func TestGrantValidatesFilterColumns(t *testing.T) {
	tc := &authz.TableColumns{UUID: "u-accounts", Current: []authz.Field{
		{ID: 1, Name: "account_id"}, {ID: 2, Name: "name"}, {ID: 3, Name: "region"}, {ID: 4, Name: "email"}}}
	accounts := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	missing := authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "later"})
	crm := authz.NamespaceOf("wh", catalog.Namespace{"crm"})
	for _, tt := range []struct {
		name   string
		on     authz.Securable
		all    bool
		filter authz.DataFilter
		want   string // "" for accepted
	}{
		{"row filter ok", accounts, false, authz.DataFilter{RowFilter: "region = 'EMEA'"}, ""},
		{"row filter ok, other case", accounts, false, authz.DataFilter{RowFilter: "REGION = 'EMEA' AND email IS NOT NULL"}, ""},
		{"row filter unknown column", accounts, false, authz.DataFilter{RowFilter: "territory = 'EMEA'"},
			`row filter refers to column "territory", which is not a column of table "crm.accounts"`},
		{"row filter not SQL", accounts, false, authz.DataFilter{RowFilter: "((region"}, `not valid SQL`},
		{"row filter not SQL on a namespace", crm, true, authz.DataFilter{RowFilter: "((region"}, `not valid SQL`},
		{"excluded unknown column", accounts, false, authz.DataFilter{ExcludeColumns: []string{"email", "phone"}},
			`the filter excludes column "phone", which is not a column of table "crm.accounts"`},
		{"included unknown column", accounts, false, authz.DataFilter{IncludeColumns: []string{"name", "revenue"}},
			`the filter includes column "revenue", which is not a column of table "crm.accounts"`},
		{"columns ok", accounts, false, authz.DataFilter{ExcludeColumns: []string{"email"}}, ""},
		{"table not there yet", missing, false, authz.DataFilter{RowFilter: "territory = 'x'"}, ""},
		{"namespace grant binds per table later", crm, true, authz.DataFilter{RowFilter: "territory = 'x'"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := authz.New(openSQLite(t), authz.Options{Tables: fakeTables{tc}, RowFilters: wordParser{}})
			f := tt.filter
			_, err := a.Grant(t.Context(), authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select,
				On: tt.on, AllTables: tt.all, Filter: &f})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Grant = %v, want accepted", err)
			case tt.want != "" && (floe.KindOf(err) != floe.Invalid || !strings.Contains(floe.PublicMessage(err), tt.want)):
				t.Fatalf("Grant = %v, want Invalid containing %q", err, tt.want)
			}
			if tt.want != "" {
				gs, lerr := a.ListGrants(t.Context(), nil)
				if lerr != nil || len(gs) != 0 {
					t.Fatalf("refused grant stored: %v %v", gs, lerr)
				}
			}
		})
	}
}

// TestGrantErrorListsColumns: the refusal names the columns the table has,
// so the grantor can correct the filter.
func TestGrantErrorListsColumns(t *testing.T) {
	tc := &authz.TableColumns{UUID: "u", Current: []authz.Field{{ID: 1, Name: "account_id"}, {ID: 2, Name: "country"}}}
	a := authz.New(openSQLite(t), authz.Options{Tables: fakeTables{tc}, RowFilters: wordParser{}})
	f := authz.DataFilter{RowFilter: "region = 'EU'"}
	_, err := a.Grant(t.Context(), authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select,
		On: authz.Table("wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"}), Filter: &f})
	if msg := floe.PublicMessage(err); !strings.Contains(msg, "its columns: account_id, country") {
		t.Fatalf("Grant = %v, want the table's columns listed", err)
	}
}
