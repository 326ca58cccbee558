package mgmtapi_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/mgmtapi"
)

// securableCase is one securable of the matrix, in its three spellings.
type securableCase struct {
	kind  string
	on    map[string]any // JSON in bodies
	query string         // query parameters
	msg   string         // as in denials
}

// privilegedEndpoint is a management endpoint gated by a privilege on the
// securable it names.
type privilegedEndpoint struct {
	name string
	need authz.Privilege
	ok   int
	// setup runs as the admin before the call and returns what call needs
	// (a grant id); describes says that it gives the caller DESCRIBE on s.
	setup     func(t *testing.T, s securableCase) string
	describes bool
	call      func(t *testing.T, tok string, s securableCase, arg string) testkit.Response
	// undo runs as the admin after the call, whatever its outcome.
	undo func(t *testing.T, s securableCase, arg string)
}

// TestAuthorizationMatrix is generated from a table of the privileged
// management endpoints: for every securable kind and every privilege (and
// none), a non-admin principal holding just that privilege is refused
// with 403 and the exact authz message when it lacks the one the endpoint
// needs, and served when it holds it. Revoking takes effect on the next
// request (each row revokes before the next grants).
func TestAuthorizationMatrix(t *testing.T) {
	e := newEnv(t)
	wh := e.f.Warehouse
	bob := e.f.PrincipalToken(t, "bob")
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "bobs"})
	e.ok(t, 204, "PUT", "/api/v1/roles/bobs/members/bob", nil)
	e.f.CreateTable(t, "crm", "accounts")

	securables := []securableCase{
		{"warehouse", whOn(), "", fmt.Sprintf("warehouse %q", wh)},
		{"namespace", nsOn("crm"), "namespace=crm", `namespace "crm"`},
		{"table", tableOn("crm", "accounts"), "namespace=crm&table=accounts", `table "crm.accounts"`},
		{"view", map[string]any{"kind": "view", "namespace": []string{"crm"}, "name": "v_accounts"}, "namespace=crm&view=v_accounts", `view "crm.v_accounts"`},
	}
	carolGrant := func(s securableCase) map[string]any { return grantBody("principal", "carol", "DESCRIBE", s.on) }
	tagBody := func(s securableCase) map[string]any {
		return map[string]any{"target": map[string]any{"on": s.on}, "tags": map[string]string{"matrix": "x"}}
	}
	untagBody := func(s securableCase) map[string]any {
		return map[string]any{"target": map[string]any{"on": s.on}, "keys": []string{"matrix"}}
	}
	adminDo := func(t *testing.T, method, path string, body any, ok ...int) {
		t.Helper()
		r := e.do(t, e.admin, method, path, body)
		for _, s := range ok {
			if r.Status == s {
				return
			}
		}
		t.Fatalf("admin %s %s: %d %s, want one of %v", method, path, r.Status, r.Body, ok)
	}
	none := func(*testing.T, securableCase) string { return "" }
	keep := func(*testing.T, securableCase, string) {}

	endpoints := []privilegedEndpoint{
		{name: "POST /api/v1/grants", need: authz.ManageGrants, ok: 201, setup: none,
			call: func(t *testing.T, tok string, s securableCase, _ string) testkit.Response {
				return e.do(t, tok, "POST", "/api/v1/grants", carolGrant(s))
			},
			undo: func(t *testing.T, s securableCase, _ string) {
				adminDo(t, "POST", "/api/v1/grants/revoke", carolGrant(s), 204, 404)
			}},
		{name: "POST /api/v1/grants/revoke", need: authz.ManageGrants, ok: 204,
			setup: func(t *testing.T, s securableCase) string {
				adminDo(t, "POST", "/api/v1/grants", carolGrant(s), 201)
				return ""
			},
			call: func(t *testing.T, tok string, s securableCase, _ string) testkit.Response {
				return e.do(t, tok, "POST", "/api/v1/grants/revoke", carolGrant(s))
			},
			undo: func(t *testing.T, s securableCase, _ string) {
				adminDo(t, "POST", "/api/v1/grants/revoke", carolGrant(s), 204, 404)
			}},
		{name: "DELETE /api/v1/grants/{id}", need: authz.ManageGrants, ok: 204, describes: true,
			// A grant to bob's role, so that he sees it: without
			// MANAGE_GRANTS he is refused (403), not told it is absent.
			setup: func(t *testing.T, s securableCase) string {
				var g mgmtapi.Grant
				e.ok(t, 201, "POST", "/api/v1/grants", grantBody("role", "bobs", "DESCRIBE", s.on)).JSON(t, &g)
				return g.ID
			},
			call: func(t *testing.T, tok string, _ securableCase, id string) testkit.Response {
				return e.do(t, tok, "DELETE", "/api/v1/grants/"+id, nil)
			},
			undo: func(t *testing.T, _ securableCase, id string) {
				adminDo(t, "DELETE", "/api/v1/grants/"+id, nil, 204, 404)
			}},
		{name: "GET /api/v1/tags", need: authz.Describe, ok: 200, setup: none,
			call: func(t *testing.T, tok string, s securableCase, _ string) testkit.Response {
				return e.do(t, tok, "GET", "/api/v1/tags?"+s.query, nil)
			},
			undo: keep},
		{name: "PUT /api/v1/tags", need: authz.ManageGrants, ok: 200, setup: none,
			call: func(t *testing.T, tok string, s securableCase, _ string) testkit.Response {
				return e.do(t, tok, "PUT", "/api/v1/tags", tagBody(s))
			},
			undo: func(t *testing.T, s securableCase, _ string) {
				adminDo(t, "DELETE", "/api/v1/tags", untagBody(s), 200, 404)
			}},
		{name: "DELETE /api/v1/tags", need: authz.ManageGrants, ok: 200,
			setup: func(t *testing.T, s securableCase) string {
				adminDo(t, "PUT", "/api/v1/tags", tagBody(s), 200)
				return ""
			},
			call: func(t *testing.T, tok string, s securableCase, _ string) testkit.Response {
				return e.do(t, tok, "DELETE", "/api/v1/tags", untagBody(s))
			},
			undo: func(t *testing.T, s securableCase, _ string) {
				adminDo(t, "DELETE", "/api/v1/tags", untagBody(s), 200, 404)
			}},
	}

	rows := append([]*authz.Privilege{nil}, func() []*authz.Privilege {
		var out []*authz.Privilege
		for _, p := range authz.AllPrivileges() {
			out = append(out, &p)
		}
		return out
	}()...)
	allowed, denied, ungrantable := 0, 0, 0
	for _, s := range securables {
		for _, p := range rows {
			rowName := "none"
			var grant map[string]any
			var held authz.Set
			if p != nil {
				rowName = p.String()
				grant = grantBody("principal", "bob", p.String(), s.on)
				if r := e.do(t, e.admin, "POST", "/api/v1/grants", grant); r.Status == 400 {
					// SELECT and MODIFY on a container need all_tables.
					grant["all_tables"] = true
					if r2 := e.do(t, e.admin, "POST", "/api/v1/grants", grant); r2.Status != 201 {
						// Not grantable on this kind (CREATE_* on a table): the API says so.
						wantError(t, r2, 400, "BadRequestException", "")
						ungrantable++
						continue
					}
				} else if r.Status != 201 {
					t.Fatalf("grant %s on %s: %d %s", p, s.kind, r.Status, r.Body)
				}
				held = authz.SetOf(*p, authz.Describe)
			}
			for _, ep := range endpoints {
				t.Run(fmt.Sprintf("%s/%s/%s", s.kind, rowName, ep.name), func(t *testing.T) {
					arg := ep.setup(t, s)
					defer ep.undo(t, s, arg)
					h := held
					if ep.describes {
						h = h.With(authz.Describe)
					}
					r := ep.call(t, bob, s, arg)
					if h.Has(ep.need) {
						allowed++
						if r.Status != ep.ok {
							t.Fatalf("holding %s: %d %s, want %d", h, r.Status, r.Body, ep.ok)
						}
						return
					}
					denied++
					msg := fmt.Sprintf("principal \"bob\" lacks %s on %s", ep.need, s.msg)
					if h != 0 {
						msg += fmt.Sprintf(" (it has %s)", h)
					}
					wantError(t, r, 403, "ForbiddenException", msg)
				})
			}
			if p != nil {
				e.ok(t, 204, "POST", "/api/v1/grants/revoke", grant)
			}
		}
	}
	t.Logf("%d allowed, %d denied, %d privilege/kind pairs not grantable", allowed, denied, ungrantable)
	if allowed == 0 || denied == 0 {
		t.Fatalf("degenerate matrix: %d allowed, %d denied", allowed, denied)
	}
}

// TestAdminOnlyMatrix: every administrator-only endpoint refuses every
// non-admin, even one holding every privilege on the warehouse, with 403
// and the exact message, and serves an administrator.
func TestAdminOnlyMatrix(t *testing.T) {
	e := newEnv(t)
	bob := e.f.PrincipalToken(t, "bob")
	mallory := e.f.PrincipalToken(t, "mallory")
	for _, p := range authz.AllPrivileges() {
		b := grantBody("principal", "mallory", p.String(), whOn())
		if p == authz.Select || p == authz.Modify {
			b["all_tables"] = true
		}
		e.ok(t, 201, "POST", "/api/v1/grants", b)
	}
	e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "bobs"})
	n := 0
	uniq := func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) }

	type adminCase struct {
		method, path string
		body         func() any
		what         string
		ok           int
		// setup and undo run as the admin around the admin's call.
		setup, undo func(t *testing.T)
	}
	roles, principals := "managing roles", "managing principals"
	nop := func(*testing.T) {}
	cases := []adminCase{
		{"GET", "/api/v1/principals", nil, principals, 200, nop, nop},
		{"POST", "/api/v1/principals", func() any { return map[string]any{"name": uniq("p")} }, principals, 201, nop, nop},
		{"GET", "/api/v1/principals/bob", nil, principals, 200, nop, nop},
		{"POST", "/api/v1/principals/mallory/disable", nil, principals, 200, nop,
			func(t *testing.T) { e.ok(t, 200, "POST", "/api/v1/principals/mallory/enable", nil) }},
		{"POST", "/api/v1/principals/bob/enable", nil, principals, 200, nop, nop},
		{"GET", "/api/v1/roles", nil, roles, 200, nop, nop},
		{"POST", "/api/v1/roles", func() any { return map[string]any{"name": "tmp"} }, roles, 201, nop,
			func(t *testing.T) { e.ok(t, 204, "DELETE", "/api/v1/roles/tmp", nil) }},
		{"GET", "/api/v1/roles/bobs", nil, roles, 200, nop, nop},
		{"DELETE", "/api/v1/roles/tmp", nil, roles, 204,
			func(t *testing.T) { e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": "tmp"}) }, nop},
		{"PUT", "/api/v1/roles/bobs/members/zed", nil, roles, 204, nop,
			func(t *testing.T) { e.ok(t, 204, "DELETE", "/api/v1/roles/bobs/members/zed", nil) }},
		{"DELETE", "/api/v1/roles/bobs/members/zed", nil, roles, 204,
			func(t *testing.T) { e.ok(t, 204, "PUT", "/api/v1/roles/bobs/members/zed", nil) }, nop},
		{"GET", "/api/v1/privileges?principal=admin", nil, "inspecting the privileges of another principal", 200, nop, nop},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			body := func() any {
				if c.body == nil {
					return nil
				}
				return c.body()
			}
			for _, who := range []struct{ name, tok string }{{"bob", bob}, {"mallory", mallory}} {
				wantError(t, e.do(t, who.tok, c.method, c.path, body()), 403, "ForbiddenException",
					fmt.Sprintf("principal %q is not an administrator: %s requires an admin principal", who.name, c.what))
			}
			c.setup(t)
			if r := e.do(t, e.admin, c.method, c.path, body()); r.Status != c.ok {
				t.Fatalf("admin: %d %s, want %d", r.Status, r.Body, c.ok)
			}
			c.undo(t)
		})
	}
}

// TestTombstoneMatrix: releasing a dropped table's location is gated by
// ownership, not by a privilege: for every privilege on the warehouse (and
// none), a principal that does not own the tombstone is refused with 403
// and the reason, and does not see it listed; its owner releases it.
func TestTombstoneMatrix(t *testing.T) {
	w := newTombWorld(t)
	e := w.e
	mallory := e.f.PrincipalToken(t, "mallory")
	msg := "only the previous owner of dropped table sandbox.mine or an administrator may release its location " + w.mine
	rows := append([]*authz.Privilege{nil}, func() []*authz.Privilege {
		var out []*authz.Privilege
		for _, p := range authz.AllPrivileges() {
			out = append(out, &p)
		}
		return out
	}()...)
	for _, p := range rows {
		name := "none"
		if p != nil {
			name = p.String()
			b := grantBody("principal", "mallory", p.String(), whOn())
			if *p == authz.Select || *p == authz.Modify {
				b["all_tables"] = true
			}
			e.ok(t, 201, "POST", "/api/v1/grants", b)
		}
		t.Run(name, func(t *testing.T) {
			wantError(t, e.do(t, mallory, "DELETE", w.release(w.mine), nil), 403, "ForbiddenException", msg)
			if got := w.list(t, mallory, "").tables(); len(got) != 0 {
				t.Errorf("mallory holding %s sees %v", name, got)
			}
		})
	}
	// Holding every privilege at once changes nothing either.
	wantError(t, e.do(t, mallory, "DELETE", w.release(w.mine), nil), 403, "ForbiddenException", msg)
	if r := e.do(t, w.alice, "DELETE", w.release(w.mine), nil); r.Status != 200 {
		t.Fatalf("owner: %d %s", r.Status, r.Body)
	}
}

// TestAuthenticationMatrix: every route refuses a request without a valid
// token (401), and every mutating route refuses a catalog:read token
// (403) with the scope message.
func TestAuthenticationMatrix(t *testing.T) {
	e := newEnv(t)
	c := e.f.NewPrincipal(t, "reader")
	ro := e.f.TokenScoped(t, c.ClientID, c.Secret, "catalog:read")
	param := regexp.MustCompile(`\{[a-z]+\}`)
	mutating := map[string]bool{}
	for _, rt := range []string{"POST /api/v1/principals", "POST /api/v1/principals/{name}/disable", "POST /api/v1/principals/{name}/enable",
		"POST /api/v1/roles", "DELETE /api/v1/roles/{role}", "PUT /api/v1/roles/{role}/members/{principal}",
		"DELETE /api/v1/roles/{role}/members/{principal}", "POST /api/v1/grants", "POST /api/v1/grants/revoke",
		"DELETE /api/v1/grants/{id}", "PUT /api/v1/tags", "DELETE /api/v1/tags",
		"DELETE /api/v1/warehouses/{warehouse}/tombstones"} {
		mutating[rt] = true
	}
	routes := mgmtapi.New(mgmtapi.Options{}).Routes()
	for _, rt := range routes {
		var method, pattern string
		fmt.Sscan(rt, &method, &pattern)
		path := param.ReplaceAllString(pattern, "x")
		t.Run(rt, func(t *testing.T) {
			wantError(t, e.do(t, "", method, path, nil), 401, "NotAuthorizedException",
				"missing bearer token: authenticate at /v1/oauth/tokens and send Authorization: Bearer <token>")
			wantError(t, e.do(t, "garbage", method, path, nil), 401, "NotAuthorizedException", "invalid or expired access token")
			if mutating[rt] {
				wantError(t, e.do(t, ro, method, path, nil), 403, "ForbiddenException", "token scope catalog:read does not allow "+rt)
				delete(mutating, rt)
			}
		})
	}
	if len(mutating) != 0 {
		t.Errorf("mutating routes not served: %v", mutating)
	}
}
