package mgmtapi_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestForeignCatalogs: the foreign catalog endpoints, each exchange
// validated against the OpenAPI document: create with a secret in the
// body (never answered, audited without it), list with the configured
// catalog, show, refusals (not an administrator, a taken name, a
// configured catalog's drop, an unknown field), drop; the audit events
// name the principal.
func TestForeignCatalogs(t *testing.T) {
	e := newEnv(t, func(c *app.Config) {
		c.FederatedCatalogs = []federation.Catalog{{Name: "conf", URI: "http://127.0.0.1:9", Auth: "none"}}
		c.Getenv = func(k string) string { return map[string]string{"BEE_TOKEN_FOR_TEST": "bee-token"}[k] }
	})
	bob := e.f.PrincipalToken(t, "bob")
	const secret = "catalog-secret-do-not-leak"
	body := map[string]any{"name": "acme", "uri": "http://127.0.0.1:9", "warehouse": "floe", "auth": "oauth2",
		"client_id": "isv", "client_secret": secret, "cache_ttl_seconds": 10}

	wantError(t, e.do(t, bob, "POST", "/api/v1/catalogs", body), 403, "ForbiddenException",
		`principal "bob" is not an administrator: creating a foreign catalog requires an admin principal (foreign catalogs are server-wide)`)
	var fc mgmtapi.ForeignCatalog
	r := e.ok(t, 201, "POST", "/api/v1/catalogs", body)
	r.JSON(t, &fc)
	if fc.Name != "acme" || fc.Source != "api" || fc.Secret != "set" || fc.CacheTTLSeconds != 10 || fc.CreatedBy != "admin" ||
		fc.CreatedAt == nil || strings.Contains(string(r.Body), secret) {
		t.Errorf("created %+v %s", fc, r.Body)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/catalogs", map[string]any{"name": "ACME", "uri": "http://x.example"}), 409,
		"AlreadyExistsException", `foreign catalog "ACME" already exists`)
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/catalogs", map[string]any{"name": "Conf", "uri": "http://x.example"}), 400,
		"BadRequestException", "foreign catalog Conf: the name is taken by a warehouse or another foreign catalog")
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/catalogs", map[string]any{"name": "b", "uri": "http://x.example", "password": "x"}), 400,
		"BadRequestException", "")
	e.ok(t, 201, "POST", "/api/v1/catalogs", map[string]any{"name": "bee", "uri": "http://x.example", "auth": "bearer", "token_env": "BEE_TOKEN_FOR_TEST"})

	var ls mgmtapi.ForeignCatalogList
	e.ok(t, 200, "GET", "/api/v1/catalogs", nil).JSON(t, &ls)
	if len(ls.Catalogs) != 3 || ls.Catalogs[0].Name != "conf" || ls.Catalogs[0].Source != "config" || ls.Catalogs[1].Name != "acme" ||
		ls.Catalogs[2].Secret != "env" || ls.Catalogs[2].SecretEnv != "BEE_TOKEN_FOR_TEST" {
		t.Errorf("list %+v", ls)
	}
	wantError(t, e.do(t, bob, "GET", "/api/v1/catalogs", nil), 403, "ForbiddenException", "")
	e.ok(t, 200, "GET", "/api/v1/catalogs/ACME", nil).JSON(t, &fc)
	if fc.Name != "acme" || fc.ClientID != "isv" || fc.Secret != "set" {
		t.Errorf("show %+v", fc)
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/catalogs/nope", nil), 404, "NotFoundException", `foreign catalog "nope" does not exist`)
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/catalogs/conf", nil), 422, "UnprocessableEntityException",
		"foreign catalog conf is in the server's configuration: remove it there and restart")
	wantError(t, e.do(t, bob, "DELETE", "/api/v1/catalogs/acme", nil), 403, "ForbiddenException", "")
	e.ok(t, 204, "DELETE", "/api/v1/catalogs/acme", nil)
	wantError(t, e.do(t, e.admin, "DELETE", "/api/v1/catalogs/acme", nil), 404, "NotFoundException", "")
	e.ok(t, 204, "DELETE", "/api/v1/catalogs/bee", nil)

	recs, err := e.f.App.Store().AuditQuery(t.Context(), audit.Query{Action: "federation.catalog.*", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, rec := range recs {
		count[rec.Action+" "+rec.Principal+" "+rec.Outcome]++
		if strings.Contains(rec.Resource+string(rec.Detail), secret) {
			t.Errorf("secret in the audit record %+v", rec)
		}
	}
	for k, n := range map[string]int{"federation.catalog.create admin success": 2, "federation.catalog.create bob denied": 1,
		"federation.catalog.drop admin success": 2, "federation.catalog.drop bob denied": 1, "federation.catalog.create admin failure": 3} {
		if count[k] != n {
			t.Errorf("audit %q: %d, want %d (all %v)", k, count[k], n, count)
		}
	}
}
