package mgmtapi_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestShares: the sharing endpoints, each exchange validated against the
// OpenAPI document: create, add, grant, show; a recipient's credential is
// answered once as a profile file and Iceberg connections; rotation and
// revocation; refusals (no CREATE_SHARE, not the owner, unknown field, a
// limit reached) with the protocol's statuses.
func TestShares(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.Sharing.MaxRecipients = 2 })
	e.f.CreateTable(t, "crm", "accounts")
	bob := e.f.PrincipalToken(t, "bob")

	r := e.do(t, bob, "POST", "/api/v1/shares", map[string]any{"name": "s1"})
	wantError(t, r, 403, "ForbiddenException", `principal "bob" lacks CREATE_SHARE on warehouse "floe"`)
	var sh mgmtapi.Share
	e.ok(t, 201, "POST", "/api/v1/shares", map[string]any{"name": "s1", "comment": "q1"}).JSON(t, &sh)
	if sh.Name != "s1" || sh.Owner != "admin" || sh.Warehouse != "floe" || sh.ID == "" {
		t.Errorf("share %+v", sh)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/shares", map[string]any{"name": "S1"}), 409, "AlreadyExistsException", `share "S1" already exists`)
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/shares", map[string]any{"name": "s2", "owner": "x"}), 400, "BadRequestException", "")
	var o mgmtapi.ShareObject
	e.ok(t, 201, "POST", "/api/v1/shares/s1/objects", map[string]any{"kind": "table", "name": "crm.accounts", "alias_schema": "pub", "history": true}).JSON(t, &o)
	if o.Schema != "pub" || o.Table != "accounts" || o.Name != "crm.accounts" || !o.History {
		t.Errorf("object %+v", o)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/shares/s1/objects", map[string]any{"kind": "table", "name": "crm.nope"}), 404, "NoSuchTableException", "")

	var cred mgmtapi.RecipientCredential
	e.ok(t, 201, "POST", "/api/v1/recipients", map[string]any{"name": "acme", "properties": map[string]string{"org": "ACME"},
		"allowed_cidrs": []string{"127.0.0.0/8"}}).JSON(t, &cred)
	if cred.Profile.ShareCredentialsVersion != 1 || cred.Profile.Endpoint != e.f.URL+"/delta-sharing/" || cred.Profile.BearerToken == "" ||
		cred.Profile.ExpirationTime != "" || len(cred.Iceberg) != 0 || cred.IcebergTemplate.URI != e.f.URL+"/shares/{share}/iceberg" ||
		cred.IcebergTemplate.Token != cred.Profile.BearerToken || cred.Recipient.Properties["org"] != "ACME" {
		t.Errorf("credential %+v", cred)
	}
	wantError(t, e.do(t, bob, "PUT", "/api/v1/shares/s1/recipients/acme", nil), 403, "ForbiddenException", `principal "bob" does not own share "s1" (owner "admin"): only its owner or an administrator may change it`)
	e.ok(t, 201, "PUT", "/api/v1/shares/s1/recipients/ACME", nil)
	e.ok(t, 200, "GET", "/api/v1/shares/s1", nil).JSON(t, &sh)
	if len(sh.Objects) != 1 || len(sh.Recipients) != 1 || sh.Recipients[0].Recipient != "acme" {
		t.Errorf("share %+v", sh)
	}
	var rot mgmtapi.RecipientCredential
	e.ok(t, 200, "POST", "/api/v1/recipients/acme/rotate", map[string]any{"grace_seconds": 60}).JSON(t, &rot)
	if rot.Profile.BearerToken == cred.Profile.BearerToken || len(rot.Iceberg) != 1 || rot.Iceberg[0].Warehouse != "s1" ||
		rot.Iceberg[0].URI != e.f.URL+"/shares/s1/iceberg" {
		t.Errorf("rotated %+v", rot)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/recipients/acme/rotate", map[string]any{"grace_seconds": -1}), 400, "BadRequestException", "")
	var rec mgmtapi.Recipient
	e.ok(t, 200, "GET", "/api/v1/recipients/acme", nil).JSON(t, &rec)
	if len(rec.Tokens) != 2 || !rec.Tokens[0].Live || !rec.Tokens[1].Live || rec.Tokens[1].ExpiresAt == nil || len(rec.Shares) != 1 {
		t.Errorf("recipient %+v", rec)
	}
	if r := e.do(t, e.admin, "GET", "/api/v1/recipients/acme", nil); strings.Contains(string(r.Body), "floe_rcpt_") {
		t.Errorf("GET recipient shows a token: %s", r.Body)
	}
	var rv mgmtapi.RevokedTokens
	e.ok(t, 200, "POST", "/api/v1/recipients/acme/revoke", map[string]any{"token_id": rot.TokenID}).JSON(t, &rv)
	if len(rv.Revoked) != 1 || rv.Revoked[0] != rot.TokenID {
		t.Errorf("revoked %+v", rv)
	}
	e.ok(t, 200, "POST", "/api/v1/recipients/acme/revoke", nil).JSON(t, &rv)
	if len(rv.Revoked) != 1 || rv.Revoked[0] != cred.TokenID {
		t.Errorf("revoked %+v", rv)
	}
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/recipients/acme/revoke", nil), 404, "NotFoundException", "the recipient has no live token to revoke")

	e.ok(t, 201, "POST", "/api/v1/recipients", map[string]any{"name": "globex"})
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/recipients", map[string]any{"name": "initech"}), 422, "UnprocessableEntityException",
		"limit reached: at most 2 recipients (setting sharing.max_recipients)")
	var rl mgmtapi.RecipientList
	e.ok(t, 200, "GET", "/api/v1/recipients", nil).JSON(t, &rl)
	if len(rl.Recipients) != 2 {
		t.Errorf("recipients %+v", rl)
	}
	var bl mgmtapi.ShareList
	r = e.do(t, bob, "GET", "/api/v1/shares", nil)
	r.JSON(t, &bl)
	if r.Status != 200 || len(bl.Shares) != 0 {
		t.Errorf("bob lists %d %+v", r.Status, bl)
	}
	e.ok(t, 204, "DELETE", "/api/v1/shares/s1/objects/pub.accounts", nil)
	e.ok(t, 204, "DELETE", "/api/v1/shares/s1/recipients/acme", nil)
	e.ok(t, 204, "DELETE", "/api/v1/shares/s1", nil)
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/shares/s1", nil), 404, "NotFoundException", `share "s1" does not exist`)
}
