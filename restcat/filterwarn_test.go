package restcat_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/restcat"
)

// TestCommitReportsBrokenFilter: a commit that drops a column a grant's row
// filter reads is applied, and its answer says which grant it broke; a
// commit that leaves the column (or changes no schema) says nothing.
func TestCommitReportsBrokenFilter(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"crm"}}), 200)
	fields := `{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"region","required":false,"type":"string"},{"id":3,"name":"email","required":false,"type":"string"}`
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/crm/tables"), map[string]any{"name": "accounts",
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[` + fields + `]}`)}), 200)
	principal(t, f, "eu-analyst")
	g := grant(t, f, authz.Grant{Grantee: authz.Principal("eu-analyst"), Privilege: authz.Select,
		On:     authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"}),
		Filter: &authz.DataFilter{RowFilter: "region = 'EU'"}})
	commit := func(schemaID int, fields string) []string {
		t.Helper()
		r := f.Do(t, "POST", f.P("/namespaces/crm/tables/accounts"), map[string]any{
			"requirements": []any{map[string]any{"type": "assert-current-schema-id", "current-schema-id": schemaID - 1}},
			"updates": []any{
				map[string]any{"action": "add-schema", "schema": json.RawMessage(`{"type":"struct","schema-id":` + strconv.Itoa(schemaID) + `,"fields":[` + fields + `]}`)},
				map[string]any{"action": "set-current-schema", "schema-id": -1},
			}})
		mustStatus(t, r, 200)
		return r.Header.Values(restcat.FilterWarningHeader)
	}
	// Dropping email: the filter reads region only.
	if ws := commit(1, `{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"region","required":false,"type":"string"}`); len(ws) != 0 {
		t.Fatalf("warnings for a harmless change: %q", ws)
	}
	// Dropping region breaks it.
	ws := commit(2, `{"id":1,"name":"id","required":true,"type":"long"}`)
	if len(ws) != 1 || !strings.Contains(ws[0], g.ID) || !strings.Contains(ws[0], `column "region" (field id 2) no longer exists`) {
		t.Fatalf("warnings %q, want one naming grant %s and column region", ws, g.ID)
	}
}
