package mgmtapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/mgmtapi"
)

// env is a running Floe whose test clients validate every management API
// exchange against docs/api/management.yaml.
type env struct {
	f     *testkit.Floe
	admin string // admin token
}

func newEnv(t *testing.T, opts ...testkit.Option) *env {
	t.Helper()
	f := testkit.Start(t, opts...)
	f.Transport.Base = &validator{spec: getSpec(t), t: t}
	e := &env{f: f}
	if !f.App.Config().InsecureNoAuth {
		e.admin = f.Token(t)
	}
	return e
}

// do sends a request with token ("" sends none); body may be nil, a string
// (sent as is) or a value encoded as JSON. headers are name, value pairs.
func (e *env) do(t *testing.T, token, method, path string, body any, headers ...string) testkit.Response {
	t.Helper()
	return e.f.DoAs(t, token, method, path, body, headers...)
}

// ok sends a request as the admin and fails unless it answers status.
func (e *env) ok(t *testing.T, status int, method, path string, body any) testkit.Response {
	t.Helper()
	r := e.do(t, e.admin, method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
	}
	return r
}

// errorOf decodes an ErrorModel response.
func errorOf(t *testing.T, r testkit.Response) (msg, typ string, code int) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	r.JSON(t, &e)
	return e.Error.Message, e.Error.Type, e.Error.Code
}

// wantError fails unless r is an error with status, type and (if msg is
// not "") exactly that message.
func wantError(t *testing.T, r testkit.Response, status int, typ, msg string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d %s, want %d", r.Status, r.Body, status)
	}
	m, ty, code := errorOf(t, r)
	if ty != typ || code != status || (msg != "" && m != msg) {
		t.Fatalf("error %q (%s, %d), want %q (%s, %d)", m, ty, code, msg, typ, status)
	}
}

func grantBody(granteeKind, grantee, priv string, on map[string]any, extra ...any) map[string]any {
	b := map[string]any{"grantee": map[string]any{"kind": granteeKind, "name": grantee}, "privilege": priv}
	if on != nil {
		b["on"] = on
	}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func tableOn(ns, name string) map[string]any {
	return map[string]any{"kind": "table", "namespace": strings.Split(ns, "."), "name": name}
}

func nsOn(ns string) map[string]any {
	return map[string]any{"kind": "namespace", "namespace": strings.Split(ns, ".")}
}

func whOn() map[string]any { return map[string]any{"kind": "warehouse"} }

// TestWhoamiAndRoles: roles are created, shown, joined and left through the
// API, and whoami reflects membership.
func TestWhoamiAndRoles(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")

	var who mgmtapi.Whoami
	e.ok(t, 200, "GET", "/api/v1/whoami", nil).JSON(t, &who)
	if who.Principal != "admin" || !who.Admin || who.PrincipalID == "" || len(who.Roles) != 0 {
		t.Errorf("admin whoami %+v", who)
	}
	r := e.do(t, bob, "GET", "/api/v1/whoami", nil)
	r.JSON(t, &who)
	if r.Status != 200 || who.Principal != "bob" || who.Admin || !slices.Equal(who.Scopes, []string{"catalog"}) {
		t.Errorf("bob whoami %d %+v", r.Status, who)
	}

	var role mgmtapi.Role
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "analysts", "description": "BI team"}).JSON(t, &role)
	if role.Name != "analysts" || role.Description != "BI team" || role.CreatedAt.IsZero() || len(role.Members) != 0 {
		t.Errorf("created role %+v", role)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/roles", map[string]any{"name": "analysts"}), 409, "AlreadyExistsException", "Role already exists: analysts")
	e.ok(t, 204, "PUT", "/api/v1/roles/analysts/members/bob", nil)
	e.ok(t, 204, "PUT", "/api/v1/roles/analysts/members/bob", nil) // idempotent
	e.ok(t, 204, "PUT", "/api/v1/roles/analysts/members/carol", nil)
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/roles/nope/members/bob", nil), 404, "NotFoundException", "")

	e.ok(t, 200, "GET", "/api/v1/roles/analysts", nil).JSON(t, &role)
	if !slices.Equal(role.Members, []string{"bob", "carol"}) {
		t.Errorf("members %v", role.Members)
	}
	var roles struct{ Roles []mgmtapi.Role }
	e.ok(t, 200, "GET", "/api/v1/roles", nil).JSON(t, &roles)
	if len(roles.Roles) != 1 || roles.Roles[0].Name != "analysts" {
		t.Errorf("roles %+v", roles)
	}
	e.do(t, bob, "GET", "/api/v1/whoami", nil).JSON(t, &who)
	if !slices.Equal(who.Roles, []string{"analysts"}) {
		t.Errorf("bob's roles %v", who.Roles)
	}
	var p mgmtapi.Principal
	e.ok(t, 200, "GET", "/api/v1/principals/bob", nil).JSON(t, &p)
	if !slices.Equal(p.Roles, []string{"analysts"}) || p.Admin {
		t.Errorf("principal bob %+v", p)
	}

	e.ok(t, 204, "DELETE", "/api/v1/roles/analysts/members/carol", nil)
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/roles/analysts/members/carol", nil), 404, "NotFoundException",
		"Principal carol is not a member of role analysts")
	e.ok(t, 204, "DELETE", "/api/v1/roles/analysts", nil)
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/roles/analysts", nil), 404, "NotFoundException", "Role does not exist: analysts")
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/roles/analysts", nil), 404, "NotFoundException", "Role does not exist: analysts")
	e.do(t, bob, "GET", "/api/v1/whoami", nil).JSON(t, &who)
	if len(who.Roles) != 0 {
		t.Errorf("bob still in %v after the role was dropped", who.Roles)
	}
}

// TestPrincipals: an admin creates, lists, shows, disables and re-enables
// principals; the secret is returned once and works, and disabling stops
// its tokens at once.
func TestPrincipals(t *testing.T) {
	e := newEnv(t)
	var np mgmtapi.NewPrincipal
	r := e.ok(t, 201, "POST", "/api/v1/principals", map[string]any{"name": "etl", "scopes": []string{"catalog:read"}})
	r.JSON(t, &np)
	if np.Name != "etl" || np.ClientID == "" || np.ClientSecret == "" || np.Admin || !slices.Equal(np.Scopes, []string{"catalog:read"}) {
		t.Fatalf("created %+v", np)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q on a response with a secret", r.Header.Get("Cache-Control"))
	}
	tok := e.f.TokenScoped(t, np.ClientID, np.ClientSecret, "catalog:read")
	var who mgmtapi.Whoami
	e.do(t, tok, "GET", "/api/v1/whoami", nil).JSON(t, &who)
	if who.Principal != "etl" || who.PrincipalID != np.PrincipalID {
		t.Errorf("whoami as etl: %+v", who)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals", map[string]any{"name": "etl"}), 409, "AlreadyExistsException", "")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals", map[string]any{"name": "a b"}), 400, "BadRequestException", "")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals", map[string]any{"admin": true}), 400, "BadRequestException", `missing required field "name"`)

	var list struct{ Principals []mgmtapi.Principal }
	e.ok(t, 200, "GET", "/api/v1/principals", nil).JSON(t, &list)
	var names []string
	for _, p := range list.Principals {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"admin", "etl"}) {
		t.Errorf("principals %v", names)
	}
	if strings.Contains(string(e.ok(t, 200, "GET", "/api/v1/principals", nil).Body), np.ClientSecret) {
		t.Error("the secret is listed")
	}

	var p mgmtapi.Principal
	e.ok(t, 200, "POST", "/api/v1/principals/etl/disable", nil).JSON(t, &p)
	if !p.Disabled {
		t.Errorf("disable: %+v", p)
	}
	wantError(t, e.do(t, tok, "GET", "/api/v1/whoami", nil), 401, "NotAuthorizedException", "")
	e.ok(t, 200, "POST", "/api/v1/principals/etl/enable", nil).JSON(t, &p)
	if p.Disabled {
		t.Errorf("enable: %+v", p)
	}
	if r := e.do(t, tok, "GET", "/api/v1/whoami", nil); r.Status != 200 {
		t.Errorf("token after re-enabling: %d %s", r.Status, r.Body)
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/principals/ghost", nil), 404, "NotFoundException", "")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/principals/ghost/disable", nil), 404, "NotFoundException", "")
}

// TestGrantsLifecycle: grants are created (normalized, with an id), listed
// with filters, refused when invalid or duplicated, and revoked by id and
// by content; revocation takes effect on the next request.
func TestGrantsLifecycle(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "analysts"})

	var g mgmtapi.Grant
	body := grantBody("role", "analysts", "SELECT", tableOn("crm", "accounts"),
		"filter", map[string]any{"row_filter": "  region = 'EMEA' ", "include_columns": []string{"region", "id"}})
	e.ok(t, 201, "POST", "/api/v1/grants", body).JSON(t, &g)
	if g.ID == "" || g.Privilege != "SELECT" || g.On.Warehouse != e.f.Warehouse || g.CreatedBy != "admin" ||
		g.Filter == nil || g.Filter.RowFilter != "region = 'EMEA'" || !slices.Equal(g.Filter.IncludeColumns, []string{"id", "region"}) ||
		g.Description != `SELECT on table "crm.accounts" to role "analysts" with a data filter` {
		t.Errorf("grant %+v", g)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/grants", body), 409, "AlreadyExistsException", "")

	var tg mgmtapi.Grant
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "DESCRIBE", nil,
		"tag_expression", "sensitivity = low and domain = sales")).JSON(t, &tg)
	if tg.TagExpression != "sensitivity = low AND domain = sales" || tg.On.Kind != "warehouse" {
		t.Errorf("tag grant %+v", tg)
	}
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "MANAGE_GRANTS", nsOn("crm")))

	for _, tt := range []struct {
		name string
		body any
		msg  string
	}{
		{"select on namespace without all_tables", grantBody("role", "analysts", "SELECT", nsOn("crm")),
			"SELECT on a namespace covers no table unless all_tables is set (grants are per named resource)"},
		{"create_table on a table", grantBody("role", "analysts", "CREATE_TABLE", tableOn("crm", "accounts")),
			"CREATE_TABLE cannot be granted on a table (it applies to namespaces and warehouses)"},
		{"filter on modify", grantBody("role", "analysts", "MODIFY", tableOn("crm", "accounts"), "filter", map[string]any{"row_filter": "x = 1"}),
			"a data filter applies only to SELECT, not to MODIFY"},
		{"unknown privilege", grantBody("role", "analysts", "READ", tableOn("crm", "accounts")), ""},
		{"unknown grantee kind", grantBody("group", "analysts", "SELECT", tableOn("crm", "accounts")), ""},
		{"missing on", grantBody("role", "analysts", "SELECT", nil), `missing required field "on"`},
		{"missing grantee", map[string]any{"privilege": "SELECT", "on": tableOn("crm", "accounts")}, `missing required field "grantee"`},
		{"table without namespace", grantBody("role", "analysts", "SELECT", map[string]any{"kind": "table", "name": "t"}), ""},
		{"unknown field", `{"grantee":{"kind":"role","name":"analysts"},"privilege":"SELECT","on":{"kind":"warehouse"},"owner":"x"}`, ""},
		{"unknown nested field", `{"grantee":{"kind":"role","name":"analysts","x":1},"privilege":"SELECT","on":{"kind":"warehouse"},"all_tables":true}`, ""},
		{"bad tag expression", grantBody("role", "analysts", "SELECT", nil, "tag_expression", "domain = "), ""},
		{"bad json", `{"grantee":`, ""},
		{"trailing data", `{"grantee":{"kind":"role","name":"analysts"},"privilege":"DESCRIBE","on":{"kind":"warehouse"}} {}`,
			"malformed request body: data after the JSON value"},
		{"empty body", "", "request body is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, e.do(t, e.admin, "POST", "/api/v1/grants", tt.body), 400, "BadRequestException", tt.msg)
		})
	}

	var list struct{ Grants []mgmtapi.Grant }
	e.ok(t, 200, "GET", "/api/v1/grants", nil).JSON(t, &list)
	if len(list.Grants) != 3 {
		t.Fatalf("%d grants listed, want 3: %+v", len(list.Grants), list.Grants)
	}
	for _, tt := range []struct {
		query string
		want  int
	}{
		{"grantee_kind=role", 1}, {"grantee=bob", 2}, {"grantee_kind=principal&grantee=bob&privilege=MANAGE_GRANTS", 1},
		{"namespace=crm", 2}, {"namespace=crm&table=accounts", 1}, {"view=accounts", 0},
		{"warehouse=" + e.f.Warehouse, 3}, {"warehouse=other", 0}, {"privilege=SELECT", 1},
	} {
		e.ok(t, 200, "GET", "/api/v1/grants?"+tt.query, nil).JSON(t, &list)
		if len(list.Grants) != tt.want {
			t.Errorf("grants?%s: %d, want %d", tt.query, len(list.Grants), tt.want)
		}
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/grants?privilege=READ", nil), 400, "BadRequestException", "")
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/grants?table=a&view=b", nil), 400, "BadRequestException", "give table or view, not both")

	// Revoke by content (the filter spelled differently), then by id.
	body["filter"] = map[string]any{"row_filter": "region = 'EMEA'", "include_columns": []string{"id", "region"}}
	e.ok(t, 204, "POST", "/api/v1/grants/revoke", body)
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/grants/revoke", body), 404, "NotFoundException",
		`no grant of SELECT on table "crm.accounts" to role "analysts" with a data filter`)
	e.ok(t, 204, "DELETE", "/api/v1/grants/"+tg.ID, nil)
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/grants/"+tg.ID, nil), 404, "NotFoundException", "Grant does not exist: "+tg.ID)

	// Bob manages grants on crm; once revoked, his next request is refused.
	if r := e.do(t, bob, "POST", "/api/v1/grants", grantBody("principal", "carol", "DESCRIBE", nsOn("crm"))); r.Status != 201 {
		t.Fatalf("bob grants on crm: %d %s", r.Status, r.Body)
	}
	e.ok(t, 204, "POST", "/api/v1/grants/revoke", grantBody("principal", "bob", "MANAGE_GRANTS", nsOn("crm")))
	wantError(t, e.do(t, bob, "POST", "/api/v1/grants/revoke", grantBody("principal", "carol", "DESCRIBE", nsOn("crm"))),
		403, "ForbiddenException", `principal "bob" lacks MANAGE_GRANTS on namespace "crm"`)
}

// TestGrantVisibility: a non-admin lists the grants it could manage and
// those given to it or its roles, and cannot learn of others by id.
func TestGrantVisibility(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "bobs"})
	e.ok(t, 204, "PUT", "/api/v1/roles/bobs/members/bob", nil)
	mk := func(body any) mgmtapi.Grant {
		var g mgmtapi.Grant
		e.ok(t, 201, "POST", "/api/v1/grants", body).JSON(t, &g)
		return g
	}
	manage := mk(grantBody("principal", "bob", "MANAGE_GRANTS", nsOn("sales")))         // his own
	viaRole := mk(grantBody("role", "bobs", "SELECT", tableOn("crm", "accounts")))      // his role's
	managed := mk(grantBody("principal", "carol", "DESCRIBE", nsOn("sales.emea")))      // he manages sales
	hidden := mk(grantBody("principal", "carol", "SELECT", tableOn("crm", "accounts"))) // none of his business

	var list struct{ Grants []mgmtapi.Grant }
	r := e.do(t, bob, "GET", "/api/v1/grants", nil)
	r.JSON(t, &list)
	var ids []string
	for _, g := range list.Grants {
		ids = append(ids, g.ID)
	}
	want := []string{manage.ID, viaRole.ID, managed.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("bob sees %v, want %v", ids, want)
	}
	// Hidden and absent grants answer alike.
	absent := strings.Repeat("0", len(hidden.ID))
	for _, id := range []string{hidden.ID, absent} {
		wantError(t, e.do(t, bob, "DELETE", "/api/v1/grants/"+id, nil), 404, "NotFoundException", "Grant does not exist: "+id)
	}
	// A grant he sees but cannot manage is refused with the reason.
	wantError(t, e.do(t, bob, "DELETE", "/api/v1/grants/"+viaRole.ID, nil), 403, "ForbiddenException",
		`principal "bob" lacks MANAGE_GRANTS on table "crm.accounts" (it has DESCRIBE, SELECT)`)
	e.ok(t, 200, "GET", "/api/v1/grants", nil).JSON(t, &list)
	if len(list.Grants) != 4 {
		t.Errorf("admin sees %d grants, want 4", len(list.Grants))
	}
	if r := e.do(t, bob, "DELETE", "/api/v1/grants/"+managed.ID, nil); r.Status != 204 {
		t.Errorf("bob revokes a grant on sales.emea: %d %s", r.Status, r.Body)
	}
}

// TestPrivilegesEndpoint: the troubleshooting endpoint reports effective
// privileges, filters and file access, for oneself or (admins) another.
func TestPrivilegesEndpoint(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "DESCRIBE", nsOn("crm")))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "SELECT", tableOn("crm", "accounts"),
		"filter", map[string]any{"row_filter": "region = 'EMEA'", "exclude_columns": []string{"email"}}))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "SELECT", nil, "tag_expression", "domain = sales"))
	e.ok(t, 200, "PUT", "/api/v1/tags", map[string]any{"target": map[string]any{"on": tableOn("crm", "deals")}, "tags": map[string]string{"domain": "sales"}})

	get := func(token, query string) mgmtapi.Privileges {
		t.Helper()
		r := e.do(t, token, "GET", "/api/v1/privileges?"+query, nil)
		if r.Status != 200 {
			t.Fatalf("privileges?%s: %d %s", query, r.Status, r.Body)
		}
		var p mgmtapi.Privileges
		r.JSON(t, &p)
		return p
	}
	p := get(bob, "namespace=crm")
	if !slices.Equal(p.Privileges, []string{"DESCRIBE"}) || p.FileAccess != nil || p.Securable.Kind != "namespace" {
		t.Errorf("on crm: %+v", p)
	}
	p = get(bob, "namespace=crm&table=accounts")
	if !slices.Equal(p.Privileges, []string{"DESCRIBE", "SELECT"}) || p.FileAccess == nil || *p.FileAccess ||
		len(p.Filters) != 1 || p.Filters[0].RowFilter != "region = 'EMEA'" || !slices.Equal(p.Filters[0].ExcludeColumns, []string{"email"}) ||
		!strings.Contains(p.Reason, "only through a data filter") {
		t.Errorf("on crm.accounts: %+v", p)
	}
	p = get(bob, "namespace=crm&table=deals") // through the tag grant, unrestricted
	if !slices.Equal(p.Privileges, []string{"DESCRIBE", "SELECT"}) || p.Filters != nil || p.FileAccess == nil || !*p.FileAccess {
		t.Errorf("on crm.deals: %+v", p)
	}
	p = get(bob, "namespace=hr&view=salaries")
	if len(p.Privileges) != 0 || p.FileAccess == nil || *p.FileAccess || p.Reason != `principal "bob" lacks SELECT on view "hr.salaries"` {
		t.Errorf("on hr.salaries: %+v", p)
	}
	p = get(e.admin, "principal=bob&namespace=crm&table=accounts")
	if p.Principal != "bob" || p.Admin || len(p.Filters) != 1 {
		t.Errorf("admin inspecting bob: %+v", p)
	}
	p = get(e.admin, "")
	if !p.Admin || len(p.Privileges) != 10 || p.Securable.Kind != "warehouse" {
		t.Errorf("admin on the warehouse: %+v", p)
	}
	wantError(t, e.do(t, bob, "GET", "/api/v1/privileges?principal=admin", nil), 403, "ForbiddenException",
		`principal "bob" is not an administrator: inspecting the privileges of another principal requires an admin principal`)
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/privileges?principal=ghost", nil), 404, "NotFoundException", "")
	wantError(t, e.do(t, bob, "GET", "/api/v1/privileges?table=accounts", nil), 400, "BadRequestException",
		"a table needs its namespace (namespace=a.b)")
}

// TestTags: tags are set, inherited, shown and removed on securables and
// columns.
func TestTags(t *testing.T) {
	e := newEnv(t)
	target := func(on map[string]any, col string) map[string]any {
		m := map[string]any{"on": on}
		if col != "" {
			m["column"] = col
		}
		return m
	}
	e.ok(t, 200, "PUT", "/api/v1/tags", map[string]any{"target": target(whOn(), ""), "tags": map[string]string{"owner": "data", "sensitivity": "low"}})
	e.ok(t, 200, "PUT", "/api/v1/tags", map[string]any{"target": target(nsOn("crm"), ""), "tags": map[string]string{"domain": "sales"}})
	var tags mgmtapi.Tags
	e.ok(t, 200, "PUT", "/api/v1/tags", map[string]any{"target": target(tableOn("crm", "accounts"), "email"),
		"tags": map[string]string{"sensitivity": "high"}}).JSON(t, &tags)
	if tags.Tags["sensitivity"] != "high" || tags.EffectiveTags["domain"] != "sales" || tags.EffectiveTags["owner"] != "data" ||
		tags.Target.Column != "email" || tags.Target.On.Name != "accounts" {
		t.Errorf("column tags %+v", tags)
	}
	tags = mgmtapi.Tags{}
	e.ok(t, 200, "GET", "/api/v1/tags?namespace=crm&table=accounts", nil).JSON(t, &tags)
	if len(tags.Tags) != 0 || tags.EffectiveTags["sensitivity"] != "low" || tags.EffectiveTags["domain"] != "sales" {
		t.Errorf("table tags %+v", tags)
	}
	tags = mgmtapi.Tags{}
	e.ok(t, 200, "GET", "/api/v1/tags?namespace=crm&table=accounts&column=email", nil).JSON(t, &tags)
	if tags.EffectiveTags["sensitivity"] != "high" {
		t.Errorf("column effective tags %+v", tags)
	}
	tags = mgmtapi.Tags{}
	e.ok(t, 200, "DELETE", "/api/v1/tags", map[string]any{"target": target(whOn(), ""), "keys": []string{"owner"}}).JSON(t, &tags)
	if _, ok := tags.Tags["owner"]; ok || tags.Tags["sensitivity"] != "low" {
		t.Errorf("after unset %+v", tags)
	}
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/tags", map[string]any{"target": target(whOn(), ""), "keys": []string{"owner"}}),
		404, "NotFoundException", fmt.Sprintf(`warehouse %q has no tag "owner"`, e.f.Warehouse))
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/tags", map[string]any{"target": target(nsOn("crm"), "c"), "tags": map[string]string{"a": "b"}}),
		400, "BadRequestException", "columns belong to tables and views, not to a namespace")
	wantError(t, e.do(t, e.admin, "PUT", "/api/v1/tags", map[string]any{"target": target(nsOn("crm"), "")}),
		400, "BadRequestException", `missing required field "tags"`)
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/tags", map[string]any{"keys": []string{"a"}}),
		400, "BadRequestException", `missing required field "target.on"`)
}

// TestAudit: every mutation records one event with the request id, the
// principal and the outcome; secrets never appear; the chain verifies.
func TestAudit(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	var np mgmtapi.NewPrincipal
	r := e.do(t, e.admin, "POST", "/api/v1/principals", map[string]any{"name": "etl"}, "X-Request-Id", "rid-principal")
	r.JSON(t, &np)
	if r.Header.Get("X-Request-Id") != "rid-principal" {
		t.Errorf("request id not echoed: %q", r.Header.Get("X-Request-Id"))
	}
	e.do(t, e.admin, "POST", "/api/v1/grants", grantBody("principal", "bob", "SELECT", tableOn("crm", "accounts")), "X-Request-Id", "rid-ok")
	e.do(t, bob, "POST", "/api/v1/grants", grantBody("principal", "bob", "SELECT", tableOn("crm", "orders")), "X-Request-Id", "rid-denied")
	e.do(t, e.admin, "POST", "/api/v1/grants", grantBody("principal", "bob", "SELECT", nsOn("crm")), "X-Request-Id", "rid-invalid")
	e.do(t, bob, "GET", "/api/v1/grants", nil, "X-Request-Id", "rid-read")
	e.do(t, "", "POST", "/api/v1/roles", map[string]any{"name": "x"}, "X-Request-Id", "rid-anonymous")

	recs, err := e.f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	byRID := map[string][]audit.Record{}
	for _, rec := range recs {
		byRID[rec.RequestID] = append(byRID[rec.RequestID], rec)
		if strings.Contains(string(rec.Detail), np.ClientSecret) || strings.Contains(string(rec.Detail), "eyJ") {
			t.Errorf("a secret or token in audit record %d: %s", rec.Seq, rec.Detail)
		}
	}
	for _, tt := range []struct {
		rid, principal, action, resource, outcome, detail string
	}{
		{"rid-principal", "admin", "mgmt.principal.create", "principal:etl", "success", `"client_id":"` + np.ClientID + `"`},
		{"rid-ok", "admin", "mgmt.grant.create", "table:" + e.f.Warehouse + "/crm.accounts", "success", `"grant_id":"`},
		{"rid-denied", "bob", "mgmt.grant.create", "table:" + e.f.Warehouse + "/crm.orders", "denied",
			`"error":"principal \"bob\" lacks MANAGE_GRANTS on table \"crm.orders\""`},
		{"rid-invalid", "admin", "mgmt.grant.create", "namespace:" + e.f.Warehouse + "/crm", "failure", `covers no table unless all_tables is set`},
	} {
		got := byRID[tt.rid]
		if len(got) != 1 {
			t.Errorf("%s: %d audit records, want 1", tt.rid, len(got))
			continue
		}
		rec := got[0]
		if rec.Principal != tt.principal || rec.Action != tt.action || rec.Resource != tt.resource || rec.Outcome != tt.outcome ||
			!strings.Contains(string(rec.Detail), tt.detail) || rec.ClientAddr != "127.0.0.1" {
			t.Errorf("%s: record %+v detail %s", tt.rid, rec, rec.Detail)
		}
	}
	if n := len(byRID["rid-read"]) + len(byRID["rid-anonymous"]); n != 0 {
		t.Errorf("%d audit records for a read and an unauthenticated call, want 0", n)
	}
	if err := e.f.App.Audit().Verify(context.Background()); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}

// TestProtocol: authentication, scopes, unknown routes and methods, body
// limits and request ids.
func TestProtocol(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.do(t, "", "GET", "/api/v1/whoami", nil), 401, "NotAuthorizedException",
		"missing bearer token: authenticate at /v1/oauth/tokens and send Authorization: Bearer <token>")
	wantError(t, e.do(t, "not-a-token", "GET", "/api/v1/whoami", nil), 401, "NotAuthorizedException", "invalid or expired access token")
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/nothing", nil), 404, "NotFoundException", "no management API route for GET /api/v1/nothing")
	r := e.do(t, e.admin, "PATCH", "/api/v1/roles", nil)
	wantError(t, r, 405, "MethodNotAllowedException", "PATCH is not allowed on /api/v1/roles (allowed: GET, POST, HEAD)")
	if r.Header.Get("Allow") != "GET, POST, HEAD" {
		t.Errorf("Allow %q", r.Header.Get("Allow"))
	}
	big := `{"name":"` + strings.Repeat("x", mgmtapi.MaxBodyBytes) + `"}`
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/roles", big), 400, "BadRequestException", "")
	if r := e.do(t, e.admin, "GET", "/api/v1/whoami", nil); len(r.Header.Get("X-Request-Id")) != 16 {
		t.Errorf("generated request id %q", r.Header.Get("X-Request-Id"))
	}

	// A catalog:read token reads but never changes anything.
	c := e.f.NewPrincipal(t, "reader", "catalog")
	ro := e.f.TokenScoped(t, c.ClientID, c.Secret, "catalog:read")
	if r := e.do(t, ro, "GET", "/api/v1/grants", nil); r.Status != 200 {
		t.Errorf("read-only token lists grants: %d %s", r.Status, r.Body)
	}
	wantError(t, e.do(t, ro, "POST", "/api/v1/grants", grantBody("principal", "reader", "DESCRIBE", whOn())), 403, "ForbiddenException",
		"token scope catalog:read does not allow POST /api/v1/grants")
}

// TestNoAuth: with authentication off (insecure demo mode) every caller is
// an administrator.
func TestNoAuth(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.InsecureNoAuth = true })
	var who mgmtapi.Whoami
	r := e.do(t, "", "GET", "/api/v1/whoami", nil)
	r.JSON(t, &who)
	if r.Status != 200 || who.Principal != "anonymous" || !who.Admin {
		t.Errorf("whoami without auth: %d %+v", r.Status, who)
	}
	if r := e.do(t, "", "POST", "/api/v1/roles", map[string]any{"name": "analysts"}); r.Status != 201 {
		t.Errorf("create role without auth: %d %s", r.Status, r.Body)
	}
}
