package mgmtapi_test

import (
	"slices"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestTableAccess: GET .../access lists every grant reaching a table with
// how (direct, namespace, warehouse, tag), role members and the
// administrators for a steward; a DESCRIBE holder sees only its own grants
// and no members; no DESCRIBE, 403.
func TestTableAccess(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.Maintenance = false })
	smallFilesTable(t, e, "acc", "events", 1)
	path := "/api/v1/tables/" + e.f.Warehouse + "/acc/events/access"
	bob := e.f.PrincipalToken(t, "bob")
	e.f.PrincipalToken(t, "carol")
	wantError(t, e.do(t, bob, "GET", path, nil), 403, "ForbiddenException", `principal "bob" lacks DESCRIBE on table "acc.events"`)
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "readers"})
	e.ok(t, 204, "PUT", "/api/v1/roles/readers/members/carol", nil)
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("role", "readers", "SELECT", tableOn("acc", "events"),
		"filter", map[string]any{"row_filter": "id > 0"}))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "DESCRIBE", nsOn("acc"), "all_tables", true))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "carol", "DESCRIBE", whOn(), "all_tables", true))
	e.ok(t, 200, "PUT", "/api/v1/tags", map[string]any{"target": map[string]any{"on": tableOn("acc", "events")}, "tags": map[string]any{"domain": "ops"}})
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "carol", "SELECT", nil, "tag_expression", "domain = ops"))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "carol", "SELECT", nil, "tag_expression", "domain = nothing"))

	var all mgmtapi.TableAccess
	e.ok(t, 200, "GET", path, nil).JSON(t, &all)
	var got []string
	for _, x := range all.Entries {
		got = append(got, x.Grantee.Name+" "+x.Privilege+" "+x.Via)
		if x.Grantee.Name == "readers" && (!slices.Equal(x.Members, []string{"carol"}) || x.Filter == nil || x.Filter.RowFilter != "id > 0") {
			t.Errorf("role entry %+v: want members [carol] and the row filter", x)
		}
	}
	want := []string{"carol DESCRIBE warehouse", "bob DESCRIBE namespace", "readers SELECT direct", "carol SELECT tag"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q (the unmatched tag grant left out)", got, want)
	}
	if !slices.Contains(all.Administrators, "admin") {
		t.Errorf("administrators %v, want admin among them", all.Administrators)
	}

	var own mgmtapi.TableAccess
	r := e.do(t, bob, "GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("bob: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &own)
	if len(own.Entries) != 1 || own.Entries[0].Grantee.Name != "bob" || own.Administrators != nil {
		t.Errorf("bob sees %+v, want only his own grant and no administrators", own)
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/tables/"+e.f.Warehouse+"/acc/bad%2Fname/access", nil), 400, "BadRequestException", "")
}
