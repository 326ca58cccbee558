package mgmtapi_test

import (
	"fmt"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestTableTimeline: DESCRIBE reads a table's snapshot history (metadata),
// which SELECT-less principals may see, oldest first.
func TestTableTimeline(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.Maintenance = false })
	smallFilesTable(t, e, "tl", "events", 3)
	path := "/api/v1/tables/" + e.f.Warehouse + "/tl/events/timeline"
	bob := e.f.PrincipalToken(t, "bob")
	wantError(t, e.do(t, bob, "GET", path, nil), 403, "ForbiddenException", `principal "bob" lacks DESCRIBE on table "tl.events"`)
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "DESCRIBE", tableOn("tl", "events")))
	r := e.do(t, bob, "GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("bob with DESCRIBE: %d %s", r.Status, r.Body)
	}
	var tl maint.Timeline
	r.JSON(t, &tl)
	if tl.SnapshotCount != 3 || len(tl.Points) != 3 {
		t.Fatalf("timeline %+v, want 3 snapshots in 3 points", tl)
	}
	for i, p := range tl.Points {
		if p.Operation != "append" || p.AddedRecords != 1 || p.AddedFiles != 1 || p.Snapshots != 1 || (i > 0 && p.Time.Before(tl.Points[i-1].Time)) {
			t.Errorf("point %d: %+v", i, p)
		}
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/tables/"+e.f.Warehouse+"/tl/nosuch/timeline", nil), 404, "NoSuchTableException", "")
}

// TestAuditAPI: administrators page through the audit log, filtered,
// newest first, and verify its chain; others are refused; bad filters are
// 400s.
func TestAuditAPI(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.ok(t, 201, "POST", "/api/v1/roles", map[string]any{"name": fmt.Sprintf("audited%d", i)})
	}
	var page mgmtapi.AuditPage
	e.ok(t, 200, "GET", "/api/v1/audit?action=mgmt.role.create&limit=2", nil).JSON(t, &page)
	if len(page.Records) != 2 || !page.More || page.Records[0].Resource != "role:audited2" || page.Records[1].Resource != "role:audited1" ||
		page.Records[0].Seq <= page.Records[1].Seq || page.Records[0].Principal != "admin" {
		t.Fatalf("first page %+v", page)
	}
	e.ok(t, 200, "GET", fmt.Sprintf("/api/v1/audit?action=mgmt.role.*&limit=2&before=%d", page.Records[1].Seq), nil).JSON(t, &page)
	if len(page.Records) != 1 || page.More || page.Records[0].Resource != "role:audited0" {
		t.Fatalf("second page %+v", page)
	}
	e.ok(t, 200, "GET", "/api/v1/audit?principal=nobody", nil).JSON(t, &page)
	if len(page.Records) != 0 || page.More {
		t.Fatalf("no match: %+v", page)
	}
	var v mgmtapi.AuditVerification
	e.ok(t, 200, "GET", "/api/v1/audit/verify", nil).JSON(t, &v)
	if !v.OK || v.Records < 3 || v.Last < v.First || v.Head == "" {
		t.Fatalf("verify %+v", v)
	}
	bob := e.f.PrincipalToken(t, "bob")
	wantError(t, e.do(t, bob, "GET", "/api/v1/audit", nil), 403, "ForbiddenException", `principal "bob" is not an administrator: reading the audit log requires an admin principal`)
	wantError(t, e.do(t, bob, "GET", "/api/v1/audit/verify", nil), 403, "ForbiddenException", `principal "bob" is not an administrator: verifying the audit log requires an admin principal`)
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "since=yesterday", "before=-1", "action=a*b*",
		"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z"} {
		wantError(t, e.do(t, e.admin, "GET", "/api/v1/audit?"+q, nil), 400, "BadRequestException", "")
	}
}
