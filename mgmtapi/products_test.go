package mgmtapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/products"
)

// TestProducts: the data product endpoints, each exchange validated
// against the OpenAPI document, over a real table written through the
// query API: publishing needs ALTER on the outputs and writes the context
// into the table (properties, column doc); a principal without DESCRIBE
// does not see the product; checks on demand pass, then fail after a bad
// insert, with the history kept; versions with a stale replace refused;
// the metric's SQL gives what a hand-written query gives; drop takes the
// context out; every mutation is audited.
func TestProducts(t *testing.T) {
	e := newEnv(t)
	f := e.f
	sql := func(tok, q string) string {
		t.Helper()
		r := e.do(t, tok, "POST", "/api/v1/query", map[string]any{"sql": q})
		wantStatus(t, r, 200)
		return string(r.Body)
	}
	sql(e.admin, "CREATE SCHEMA crm")
	sql(e.admin, "CREATE TABLE crm.opps (id BIGINT, account_id BIGINT, amount DOUBLE, stage VARCHAR, region VARCHAR, created_at TIMESTAMP)")
	sql(e.admin, `INSERT INTO crm.opps VALUES
		(1, 10, 100, 'open', 'eu', TIMESTAMP '2026-01-05 10:00:00'), (2, 10, 50, 'won', 'eu', TIMESTAMP '2026-01-20 10:00:00'),
		(3, 11, 70, 'open', 'us', TIMESTAMP '2026-02-01 10:00:00'), (4, 12, 30, 'open', 'eu', TIMESTAMP '2026-02-11 10:00:00')`)
	bob := f.PrincipalToken(t, "bob")

	def := map[string]any{
		"name": "sales_pipeline", "domain": "sales", "owner": "sales_ops", "description": "Open pipeline, by account",
		"terms": []string{"pipeline", "opportunity"},
		"outputs": []map[string]any{{"name": "opps", "namespace": []string{"crm"}, "table": "opps",
			"columns": map[string]string{"amount": "Deal value in EUR"}}},
		"metrics": []map[string]any{{"name": "open_value", "port": "opps", "expr": "sum(amount)", "filter": "stage = 'open'",
			"time_column": "created_at", "grains": []string{"month"}, "dimensions": []string{"region"}}},
		"expectations": []map[string]any{
			{"kind": "not_null", "port": "opps", "column": "account_id"},
			{"name": "fresh", "kind": "freshness", "port": "opps", "max_age": "1h"},
			{"name": "has_rows", "kind": "row_count", "port": "opps", "min": 1},
			{"name": "stages", "kind": "accepted_values", "port": "opps", "column": "stage", "values": []string{"open", "won", "lost"}},
			{"name": "ids", "kind": "unique", "port": "opps", "column": "id"},
		},
	}
	wantError(t, e.do(t, bob, "POST", "/api/v1/products", def), 403, "ForbiddenException", `principal "bob" lacks ALTER on table "crm.opps"`)
	bad := map[string]any{"name": "x", "owner": "o", "outputs": []map[string]any{{"namespace": []string{"crm"}, "table": "opps", "columns": map[string]string{"revenue": "?"}}}}
	wantErrorHas(t, e.do(t, e.admin, "POST", "/api/v1/products", bad), 400, "BadRequestException", `has no column "revenue"`)
	wantError(t, e.do(t, e.admin, "POST", "/api/v1/products", map[string]any{"name": "x", "owner": "o", "outputs": []map[string]any{{"namespace": []string{"crm"}, "table": "nope"}}}),
		404, "NoSuchTableException", "Table does not exist: crm.nope")

	var p products.Product
	e.ok(t, 201, "POST", "/api/v1/products", def).JSON(t, &p)
	if p.Version != 1 || p.Warehouse != f.Warehouse || p.UpdatedBy != "admin" || p.Expectations[0].Name != "not_null_opps_account_id" {
		t.Fatalf("published %+v", p)
	}
	wantErrorHas(t, e.do(t, e.admin, "POST", "/api/v1/products", def), 409, "AlreadyExistsException", "already exists")

	// The context is in the table, for every engine.
	var lt struct {
		Metadata struct {
			Properties map[string]string `json:"properties"`
			Schemas    []struct {
				ID     int `json:"schema-id"`
				Fields []struct {
					Name string `json:"name"`
					Doc  string `json:"doc"`
				} `json:"fields"`
			} `json:"schemas"`
			CurrentSchemaID int `json:"current-schema-id"`
		} `json:"metadata"`
	}
	e.ok(t, 200, "GET", f.P("/namespaces/crm/tables/opps"), nil).JSON(t, &lt)
	props := lt.Metadata.Properties
	if props["comment"] != "Open pipeline, by account" || props["floe.product"] != "sales_pipeline" || props["floe.product.owner"] != "sales_ops" ||
		props["floe.product.terms"] != "pipeline, opportunity" || props["floe.product.version"] != "1" {
		t.Errorf("properties %v", props)
	}
	doc := ""
	for _, s := range lt.Metadata.Schemas {
		if s.ID == lt.Metadata.CurrentSchemaID {
			for _, fl := range s.Fields {
				if fl.Name == "amount" {
					doc = fl.Doc
				}
			}
		}
	}
	if doc != "Deal value in EUR" {
		t.Errorf("amount's doc %q", doc)
	}

	// Discovery follows DESCRIBE on an output.
	var ls mgmtapi.ProductList
	e.do(t, bob, "GET", "/api/v1/products", nil).JSON(t, &ls)
	if len(ls.Products) != 0 {
		t.Errorf("bob lists %d products without DESCRIBE", len(ls.Products))
	}
	wantErrorHas(t, e.do(t, bob, "GET", "/api/v1/products/sales_pipeline", nil), 404, "NotFoundException", "you lack DESCRIBE")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "DESCRIBE", tableOn("crm", "opps")))
	e.do(t, bob, "GET", "/api/v1/products", nil).JSON(t, &ls)
	if len(ls.Products) != 1 || ls.Products[0].Name != "sales_pipeline" {
		t.Errorf("bob lists %+v with DESCRIBE", ls.Products)
	}
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline?warehouse="+f.Warehouse, nil)

	// Checks: all pass; bob's run cannot read the table (DESCRIBE only).
	var run products.CheckRun
	e.ok(t, 200, "POST", "/api/v1/products/sales_pipeline/checks", nil).JSON(t, &run)
	if run.Status != products.StatusPass || len(run.Results) != 5 || run.By != "admin" {
		t.Fatalf("run %+v", run)
	}
	r := e.do(t, bob, "POST", "/api/v1/products/sales_pipeline/checks", nil)
	wantStatus(t, r, 200)
	r.JSON(t, &run)
	if run.Status != products.StatusError || !strings.Contains(run.Results[0].Detail, "SELECT") {
		t.Errorf("bob's run %+v", run)
	}
	sql(e.admin, "INSERT INTO crm.opps VALUES (5, NULL, 10, 'maybe', 'us', TIMESTAMP '2026-02-20 10:00:00'), (5, 13, 5, 'open', 'us', TIMESTAMP '2026-02-21 10:00:00')")
	e.ok(t, 200, "POST", "/api/v1/products/sales_pipeline/checks", nil).JSON(t, &run)
	got := map[string]string{}
	for _, res := range run.Results {
		got[res.Expectation] = res.Status + " " + res.Observed
	}
	want := map[string]string{"not_null_opps_account_id": "fail 1", "fresh": got["fresh"], "has_rows": "pass 6", "stages": "fail 1", "ids": "fail 1"}
	if run.Status != products.StatusFail || fmt.Sprint(got) != fmt.Sprint(want) || !strings.HasPrefix(got["fresh"], "pass ") {
		t.Errorf("after a bad insert: %v (%s)", got, run.Status)
	}
	var runs mgmtapi.CheckRunList
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline/checks?limit=2", nil).JSON(t, &runs)
	if len(runs.Runs) != 2 || runs.Runs[0].ID != run.ID {
		t.Errorf("history %+v", runs)
	}

	// Versions: a replace on top of the current version, then a stale one.
	def["version"] = 1
	def["description"] = "Open pipeline by account, EUR"
	e.ok(t, 200, "PUT", "/api/v1/products/sales_pipeline", def).JSON(t, &p)
	if p.Version != 2 {
		t.Errorf("replaced: version %d", p.Version)
	}
	wantErrorHas(t, e.do(t, e.admin, "PUT", "/api/v1/products/sales_pipeline", def), 409, "CommitFailedException", "is at version 2")
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline/versions", nil).JSON(t, &ls)
	if len(ls.Products) != 2 || ls.Products[0].Version != 2 {
		t.Errorf("versions %+v", ls.Products)
	}
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline?version=1", nil).JSON(t, &p)
	if p.Description != "Open pipeline, by account" {
		t.Errorf("version 1: %+v", p)
	}

	// The metric equals a hand-written query.
	var mq struct {
		SQL string `json:"sql"`
	}
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline/metrics/open_value?grain=month&dimension=region", nil).JSON(t, &mq)
	byMetric := sql(e.admin, mq.SQL)
	byHand := sql(e.admin, `SELECT CAST(date_trunc('month', created_at) AS DATE) AS "month", region, sum(amount) AS open_value FROM crm.opps
		WHERE stage = 'open' GROUP BY 1, 2 ORDER BY 1, 2`)
	if byMetric != byHand || strings.Count(byMetric, "\n") != 3 {
		t.Errorf("metric rows\n%s\nhand-written\n%s", byMetric, byHand)
	}
	wantErrorHas(t, e.do(t, e.admin, "GET", "/api/v1/products/sales_pipeline/metrics/open_value?dimension="+url.QueryEscape(`email`), nil),
		400, "BadRequestException", `cannot be grouped by "email"`)

	// Grants on the product: SELECT on its outputs through its tag, which
	// no one else may set.
	wantErrorHas(t, e.do(t, e.admin, "PUT", "/api/v1/tags", map[string]any{"target": map[string]any{"on": tableOn("crm", "opps")},
		"tags": map[string]string{"floe.product.other": "output"}}), 400, "BadRequestException", `tag key "floe.product.other" is reserved`)
	count := func(tok string) int {
		return e.do(t, tok, "POST", "/api/v1/query", map[string]any{"sql": "SELECT count(*) FROM crm.opps"}).Status
	}
	if st := count(bob); st != 403 {
		t.Fatalf("bob reads before the grant: %d", st)
	}
	bobSelect := map[string]any{"grantee": map[string]any{"kind": "principal", "name": "bob"}, "privilege": "SELECT"}
	wantErrorHas(t, e.do(t, bob, "POST", "/api/v1/products/sales_pipeline/grants", bobSelect), 403, "ForbiddenException", "lacks MANAGE_GRANTS")
	wantErrorHas(t, e.do(t, e.admin, "POST", "/api/v1/products/sales_pipeline/grants",
		map[string]any{"grantee": map[string]any{"kind": "principal", "name": "bob"}, "privilege": "MODIFY"}), 400, "BadRequestException", "DESCRIBE or SELECT")
	var g mgmtapi.Grant
	e.ok(t, 201, "POST", "/api/v1/products/sales_pipeline/grants", bobSelect).JSON(t, &g)
	if g.TagExpression != "floe.product.sales_pipeline = output" || g.Privilege != "SELECT" {
		t.Errorf("grant %+v", g)
	}
	if st := count(bob); st != 200 {
		t.Errorf("bob reads through the product grant: %d", st)
	}
	var gl mgmtapi.GrantList
	e.ok(t, 200, "GET", "/api/v1/products/sales_pipeline/grants", nil).JSON(t, &gl)
	if len(gl.Grants) != 1 || gl.Grants[0].ID != g.ID {
		t.Errorf("grants %+v", gl)
	}
	e.ok(t, 204, "POST", "/api/v1/products/sales_pipeline/grants/revoke", bobSelect)
	if st := count(bob); st != 403 {
		t.Errorf("bob reads after the revoke: %d", st)
	}
	e.ok(t, 201, "POST", "/api/v1/products/sales_pipeline/grants", bobSelect)

	// Drop: bob may not; the context leaves the table.
	wantErrorHas(t, e.do(t, bob, "DELETE", "/api/v1/products/sales_pipeline", nil), 403, "ForbiddenException", "lacks ALTER")
	e.ok(t, 204, "DELETE", "/api/v1/products/sales_pipeline", nil)
	lt.Metadata.Properties = nil // JSON decoding merges into a map it finds
	e.ok(t, 200, "GET", f.P("/namespaces/crm/tables/opps"), nil).JSON(t, &lt)
	for k := range lt.Metadata.Properties {
		if strings.HasPrefix(k, "floe.product") {
			t.Errorf("property %s stays after drop", k)
		}
	}
	wantError(t, e.do(t, e.admin, "GET", "/api/v1/products/sales_pipeline", nil), 404, "NotFoundException", "")
	if st := count(bob); st != 403 {
		t.Errorf("bob reads after the product was dropped: %d", st)
	}

	recs, err := f.App.Store().AuditQuery(t.Context(), audit.Query{Action: "product.*", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, rec := range recs {
		actions[rec.Action+" "+rec.Principal+" "+rec.Outcome]++
	}
	for k, n := range map[string]int{"product.publish admin success": 2, "product.publish bob denied": 1, "product.check admin success": 1, "product.check admin failure": 1,
		"product.check bob failure": 1, "product.drop admin success": 1, "product.drop bob denied": 1,
		"product.grant admin success": 2, "product.grant bob denied": 1, "product.grant admin failure": 1, "product.revoke admin success": 1} {
		if actions[k] != n {
			t.Errorf("audit %q: %d, want %d (all %v)", k, actions[k], n, actions)
		}
	}
}

// wantErrorHas fails unless r is an error with status and type whose
// message contains msg.
func wantErrorHas(t *testing.T, r testkit.Response, status int, typ, msg string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d %s, want %d", r.Status, r.Body, status)
	}
	m, ty, code := errorOf(t, r)
	if ty != typ || code != status || !strings.Contains(m, msg) {
		t.Fatalf("error %q (%s, %d), want one containing %q (%s, %d)", m, ty, code, msg, typ, status)
	}
}
