package mgmtapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/mgmtapi"
)

func udfJSON(sql string) string {
	return fmt.Sprintf(`{"function-uuid":"42fd3f91-bc10-41c1-8a52-92b57dd0a9b2","format-version":1,
 "definitions":[{"definition-id":"int","parameters":[{"name":"x","type":"int"}],"return-type":"int","function-type":"udf",
  "versions":[{"version-id":1,"representations":[{"type":"sql","dialect":"spark","sql":%q}],"timestamp-ms":1734507000123}],
  "current-version-id":1}],
 "definition-log":[{"timestamp-ms":1734507000123,"definition-versions":[{"definition-id":"int","version-id":1}]}],"secure":true}`, sql)
}

// TestFunctions: create, replace (conditional and not), drop through the
// management API, each allowed by CREATE_VIEW on the namespace only,
// audited, and loaded back through the REST catalog.
func TestFunctions(t *testing.T) {
	e := newEnv(t)
	e.ok(t, 200, "POST", e.f.P("/namespaces"), `{"namespace":["crm"]}`)
	fn := "/api/v1/functions/" + e.f.Warehouse + "/crm/add_one"
	bob := e.f.PrincipalToken(t, "bob")

	// Without CREATE_VIEW on crm: 403 naming it.
	r := e.do(t, bob, "PUT", fn, udfJSON("x + 1"), "X-Request-Id", "rid-fn-denied")
	wantError(t, r, 403, "ForbiddenException", `principal "bob" lacks CREATE_VIEW on namespace "crm"`)
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "CREATE_VIEW", nsOn("crm")))

	// Invalid metadata: 400, nothing created.
	bad := strings.Replace(udfJSON("x + 1"), `"definition-id":"int"`, `"definition-id":"long"`, 1)
	wantError(t, e.do(t, bob, "PUT", fn, bad), 400, "IllegalArgumentException", "")
	wantError(t, e.do(t, e.admin, "GET", e.f.P("/namespaces/crm/functions/add_one"), nil), 404, "NoSuchFunctionException", "")
	wantError(t, e.do(t, bob, "PUT", fn+"?mode=replace", udfJSON("x + 1")), 404, "NoSuchFunctionException", "")
	wantError(t, e.do(t, bob, "PUT", fn+"?mode=sometimes", udfJSON("x + 1")), 400, "BadRequestException", "")

	// Create, then a create again conflicts.
	var res mgmtapi.FunctionResult
	r = e.do(t, bob, "PUT", fn+"?mode=create", udfJSON("x + 1"), "X-Request-Id", "rid-fn-create")
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	wantError(t, e.do(t, bob, "PUT", fn+"?mode=create", udfJSON("x + 1")), 409, "AlreadyExistsException", "")

	// A replace conditional on what was read wins once; a stale one conflicts.
	first := res.MetadataLocation
	r = e.do(t, bob, "PUT", fn+"?mode=replace&if-match="+url.QueryEscape(first), udfJSON("x + 2"))
	if r.Status != 200 {
		t.Fatalf("replace: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	if res.MetadataLocation == first || !strings.Contains(string(res.Metadata), `"x + 2"`) {
		t.Errorf("replace answered %s", r.Body)
	}
	wantError(t, e.do(t, bob, "PUT", fn+"?if-match="+url.QueryEscape(first), udfJSON("x + 3")), 409, "CommitFailedException", "")

	// The REST catalog serves the current metadata, body included (secure
	// is metadata for engines; Floe hides nothing from a caller that may load it).
	r = e.do(t, e.admin, "GET", e.f.P("/namespaces/crm/functions/add_one"), nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"x + 2"`) || !strings.Contains(string(r.Body), res.MetadataLocation) {
		t.Errorf("load: %d %s", r.Status, r.Body)
	}

	// Drop; a second drop is 404.
	if r := e.do(t, bob, "DELETE", fn, nil, "X-Request-Id", "rid-fn-drop"); r.Status != 204 {
		t.Fatalf("drop: %d %s", r.Status, r.Body)
	}
	wantError(t, e.do(t, bob, "DELETE", fn, nil), 404, "NoSuchFunctionException", "")

	recs, err := e.f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	byRID := map[string][]audit.Record{}
	for _, rec := range recs {
		byRID[rec.RequestID] = append(byRID[rec.RequestID], rec)
	}
	resource := "function:" + e.f.Warehouse + "/crm.add_one"
	for _, tt := range []struct{ rid, action, outcome, detail string }{
		{"rid-fn-denied", "mgmt.function.put", "denied", "CREATE_VIEW"},
		{"rid-fn-create", "mgmt.function.put", "success", `"created":true`},
		{"rid-fn-drop", "mgmt.function.drop", "success", ""},
	} {
		got := byRID[tt.rid]
		if len(got) != 1 {
			t.Errorf("%s: %d audit records, want 1", tt.rid, len(got))
			continue
		}
		if rec := got[0]; rec.Action != tt.action || rec.Outcome != tt.outcome || rec.Resource != resource || !strings.Contains(string(rec.Detail), tt.detail) {
			t.Errorf("%s: record %+v detail %s", tt.rid, rec, rec.Detail)
		}
	}
}
