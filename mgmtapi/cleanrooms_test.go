package mgmtapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestCleanRooms: the clean room endpoints, each exchange validated
// against the OpenAPI document, and a query through the SQL endpoint: two
// principals, each owning a table the other cannot read, make a
// collaboration, configure their tables (a table one cannot read in full
// is refused), and the advertiser's overlap query returns the groups at
// or above the thresholds only; a raw read is refused with 42501; both
// see the log; an outsider sees nothing; the creator drops it.
func TestCleanRooms(t *testing.T) {
	e := newEnv(t)
	f := e.f
	sql := func(q string) {
		t.Helper()
		wantStatus(t, e.do(t, e.admin, "POST", "/api/v1/query", map[string]any{"sql": q}), 200)
	}
	sql("CREATE SCHEMA retail")
	sql("CREATE SCHEMA ads")
	sql("CREATE TABLE retail.customers (customer_id BIGINT, email VARCHAR, segment VARCHAR)")
	sql("CREATE TABLE ads.exposures (user_id BIGINT, email VARCHAR, campaign VARCHAR, spend DOUBLE)")
	// gold: 4 customers all exposed to spring; silver: 2 (below the threshold).
	sql("INSERT INTO retail.customers VALUES (1, 'a', 'gold'), (2, 'b', 'gold'), (3, 'c', 'gold'), (4, 'd', 'gold'), (5, 'e', 'silver'), (6, 'f', 'silver')")
	sql("INSERT INTO ads.exposures VALUES (11, 'a', 'spring', 1), (12, 'b', 'spring', 1), (13, 'c', 'spring', 1), (14, 'd', 'spring', 1), (15, 'e', 'spring', 1), (16, 'f', 'spring', 1)")
	retailer, advertiser, outsider := f.PrincipalToken(t, "retailer"), f.PrincipalToken(t, "advertiser"), f.PrincipalToken(t, "outsider")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "retailer", "SELECT", tableOn("retail", "customers")))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "advertiser", "SELECT", tableOn("ads", "exposures")))

	okAs := func(tok string, status int, method, path string, body any) []byte {
		t.Helper()
		r := e.do(t, tok, method, path, body)
		if r.Status != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
		}
		return r.Body
	}
	okAs(retailer, 201, "POST", "/api/v1/cleanrooms", map[string]any{"name": "overlap", "description": "customers seen in campaigns"})
	wantErrorHas(t, e.do(t, retailer, "POST", "/api/v1/cleanrooms", map[string]any{"name": "overlap"}), 409, "AlreadyExistsException", "already exists")
	wantErrorHas(t, e.do(t, advertiser, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "advertiser"}), 404, "NotFoundException", "not a member")
	okAs(retailer, 200, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "advertiser"})

	customers := map[string]any{"namespace": []string{"retail"}, "table": "customers", "join_keys": []string{"email"},
		"dimensions": []string{"segment"}, "identifier": "customer_id", "rule": map[string]any{"min_identifiers": 3}}
	wantErrorHas(t, e.do(t, advertiser, "PUT", "/api/v1/cleanrooms/overlap/tables/customers", customers), 403, "ForbiddenException", "may not read table")
	okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/overlap/tables/customers", customers)
	okAs(advertiser, 200, "PUT", "/api/v1/cleanrooms/overlap/tables/exposures", map[string]any{"namespace": []string{"ads"}, "table": "exposures",
		"join_keys": []string{"email"}, "dimensions": []string{"campaign"}, "columns": []string{"spend"}, "identifier": "user_id",
		"rule": map[string]any{"min_identifiers": 2}})

	var ls mgmtapi.CollaborationList
	e.do(t, advertiser, "GET", "/api/v1/cleanrooms", nil).JSON(t, &ls)
	if len(ls.Collaborations) != 1 || len(ls.Collaborations[0].Tables) != 2 || ls.Collaborations[0].Tables[1].Owner != "advertiser" {
		t.Fatalf("list: %+v", ls)
	}
	e.do(t, outsider, "GET", "/api/v1/cleanrooms", nil).JSON(t, &ls)
	if len(ls.Collaborations) != 0 {
		t.Fatalf("an outsider lists %+v", ls)
	}
	wantErrorHas(t, e.do(t, outsider, "GET", "/api/v1/cleanrooms/overlap", nil), 404, "NotFoundException", "not a member")
	var got cleanroom.Collaboration
	e.do(t, retailer, "GET", "/api/v1/cleanrooms/overlap", nil).JSON(t, &got)
	if got.Creator != "retailer" || len(got.Members) != 2 {
		t.Fatalf("show: %+v", got)
	}

	// Differential privacy and the privacy budget: the creator sets them,
	// every member reads the budget, others may not set it.
	wantErrorHas(t, e.do(t, retailer, "GET", "/api/v1/cleanrooms/overlap/budget", nil), 404, "NotFoundException", "no privacy budget")
	wantErrorHas(t, e.do(t, advertiser, "PUT", "/api/v1/cleanrooms/overlap/budget", map[string]any{"epsilon": 2}), 403, "ForbiddenException", "creator")
	wantErrorHas(t, e.do(t, retailer, "PUT", "/api/v1/cleanrooms/overlap/budget", map[string]any{"epsilon": 2, "period": "1s"}), 400, "BadRequestException", "period")
	var bud cleanroom.Budget
	if err := json.Unmarshal(okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/overlap/budget", map[string]any{"epsilon": 2, "period": "24h"}), &bud); err != nil ||
		bud.Epsilon != 2 || bud.Remaining != 2 || bud.PeriodText != "24h0m0s" {
		t.Fatalf("set budget: %+v %v", bud, err)
	}
	e.do(t, advertiser, "GET", "/api/v1/cleanrooms/overlap/budget", nil).JSON(t, &bud)
	if bud.Remaining != 2 {
		t.Fatalf("budget as a member: %+v", bud)
	}
	wantErrorHas(t, e.do(t, retailer, "PUT", "/api/v1/cleanrooms/overlap/privacy", map[string]any{"privacy": map[string]any{"mechanism": "laplace", "epsilon": -1}}), 400, "BadRequestException", "epsilon")
	var withDP cleanroom.Collaboration
	if err := json.Unmarshal(okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/overlap/privacy", map[string]any{"privacy": map[string]any{"mechanism": "laplace", "epsilon": 0.5}}), &withDP); err != nil ||
		withDP.Privacy == nil || withDP.Privacy.Epsilon != 0.5 {
		t.Fatalf("set privacy: %+v %v", withDP, err)
	}
	var off cleanroom.Collaboration
	if err := json.Unmarshal(okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/overlap/privacy", map[string]any{"privacy": nil}), &off); err != nil || off.Privacy != nil {
		t.Fatalf("privacy off: %+v %v", off, err)
	}

	// The advertiser queries the collaboration through the SQL endpoint.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := url.URL{Scheme: "postgres", User: url.UserPassword("advertiser", advertiser), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT count(*) FROM retail.customers"); !isCode(err, "42501") {
		t.Fatalf("outside the collaboration the advertiser reads the retailer's table: %v", err)
	}
	if _, err := conn.Exec(ctx, "SET floe.collaboration = 'overlap'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) FROM customers c JOIN exposures e ON c.email = e.email GROUP BY c.segment, e.campaign ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var seg, camp string
		var n int64
		if err := rows.Scan(&seg, &camp, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, seg+"/"+camp+"/"+string(rune('0'+n)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out, ",") != "gold/spring/4" {
		t.Fatalf("overlap: %v, want gold/spring/4 only (silver has 2 customers, below 3)", out)
	}
	if len(rows.FieldDescriptions()) != 3 {
		t.Fatalf("%d columns: the threshold column reached the client", len(rows.FieldDescriptions()))
	}
	_, rawErr := conn.Exec(ctx, "SELECT customer_id FROM customers")
	if !isCode(rawErr, "42501") {
		t.Fatalf("a raw read in the collaboration: %v", rawErr)
	}

	var log mgmtapi.QueryLog
	e.do(t, retailer, "GET", "/api/v1/cleanrooms/overlap/queries?limit=10", nil).JSON(t, &log)
	if len(log.Queries) != 2 {
		t.Fatalf("log: %+v", log)
	}
	ok, denied := log.Queries[1], log.Queries[0]
	if ok.Member != "advertiser" || ok.Outcome != "success" || ok.Rows != 1 || ok.Suppressed != 1 || denied.Outcome != "denied" || !strings.HasPrefix(denied.Error, "42501 clean room rule") {
		t.Fatalf("log entries: %+v", log.Queries)
	}
	wantErrorHas(t, e.do(t, outsider, "GET", "/api/v1/cleanrooms/overlap/queries", nil), 404, "NotFoundException", "not a member")

	// The same through the HTTP query API with "collaboration": the same
	// result, the same refusals with the same messages, the same log and
	// charges.
	httpQuery(t, e, retailer, advertiser, outsider, conn, rawErr)

	wantErrorHas(t, e.do(t, advertiser, "DELETE", "/api/v1/cleanrooms/overlap", nil), 403, "ForbiddenException", "not the creator")
	okAs(retailer, 204, "DELETE", "/api/v1/cleanrooms/overlap", nil)
	if _, err := conn.Exec(ctx, "SELECT count(*) FROM customers"); !isCode(err, "42501") {
		t.Fatalf("a query after the drop: %v", err)
	}
}

// httpQuery is TestCleanRooms' part for POST /api/v1/query: the overlap
// analysis in collaboration "overlap" as the advertiser gives the rows the
// SQL endpoint gave; a raw read and a join on a column that is not a join
// key are refused with the SQL endpoint's messages (rawErr is its raw-read
// error); an outsider cannot enter; each statement is in the query log;
// with privacy on, a query is charged to the budget the log, its sql.query
// audit event and SHOW floe.privacy_budget report.
func httpQuery(t *testing.T, e *env, retailer, advertiser, outsider string, conn *pgx.Conn, rawErr error) {
	t.Helper()
	const overlap = "SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) AS n FROM customers c JOIN exposures e ON c.email = e.email GROUP BY c.segment, e.campaign ORDER BY 1"
	q := func(tok, sql string) testkit.Response {
		t.Helper()
		return e.do(t, tok, "POST", "/api/v1/query", map[string]any{"sql": sql, "collaboration": "overlap"})
	}
	r := q(advertiser, overlap)
	wantStatus(t, r, 200)
	if got := strings.TrimSpace(string(r.Body)); got != `{"segment":"gold","campaign":"spring","n":4}` {
		t.Fatalf("overlap over HTTP: %s, want gold/spring/4 only", got)
	}
	// Without the collaboration the configured names do not exist.
	wantErrorHas(t, e.do(t, advertiser, "POST", "/api/v1/query", map[string]any{"sql": overlap}), 404, "NotFoundException", "42P01")

	var pe *pgconn.PgError
	errors.As(rawErr, &pe)
	wantErrorHas(t, q(advertiser, "SELECT customer_id FROM customers"), 403, "ForbiddenException", pe.Message+" (SQLSTATE 42501)")
	const badJoin = "SELECT count(*) FROM customers c JOIN exposures e ON c.customer_id = e.user_id"
	_, wireErr := conn.Exec(context.Background(), badJoin)
	if !errors.As(wireErr, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "join") {
		t.Fatalf("a join on identifiers over the SQL endpoint: %v", wireErr)
	}
	wantErrorHas(t, q(advertiser, badJoin), 403, "ForbiddenException", pe.Message+" (SQLSTATE 42501)")
	wantErrorHas(t, q(outsider, "SELECT count(*) FROM customers"), 403, "ForbiddenException", "42501")
	// A query string names it as the body does; two different names are refused.
	r = e.do(t, advertiser, "POST", "/api/v1/query?collaboration=other", map[string]any{"sql": overlap, "collaboration": "overlap"})
	wantErrorHas(t, r, 400, "BadRequestException", "two collaborations")

	var log mgmtapi.QueryLog
	e.do(t, advertiser, "GET", "/api/v1/cleanrooms/overlap/queries?limit=10", nil).JSON(t, &log)
	// newest first: bad join (HTTP), bad join (wire), raw read (HTTP), overlap (HTTP), then the two wire queries.
	if len(log.Queries) != 6 || log.Queries[3].Outcome != "success" || log.Queries[3].Rows != 1 || log.Queries[3].Suppressed != 1 ||
		log.Queries[2].Outcome != "denied" || log.Queries[0].Outcome != "denied" || log.Queries[0].SQL != badJoin {
		t.Fatalf("log after the HTTP queries: %+v", log.Queries)
	}

	// Differential privacy on: the HTTP query is charged as a wire one.
	var c cleanroom.Collaboration
	if err := json.Unmarshal(e.do(t, retailer, "PUT", "/api/v1/cleanrooms/overlap/privacy",
		map[string]any{"privacy": map[string]any{"mechanism": "laplace", "epsilon": 0.5}}).Body, &c); err != nil || c.Privacy == nil {
		t.Fatalf("privacy on: %+v %v", c, err)
	}
	wantStatus(t, q(advertiser, overlap), 200)
	var bud cleanroom.Budget
	e.do(t, advertiser, "GET", "/api/v1/cleanrooms/overlap/budget", nil).JSON(t, &bud)
	if bud.Remaining != 1.5 {
		t.Fatalf("budget after one DP query over HTTP: %+v, want 1.5 of 2 left", bud)
	}
	e.do(t, advertiser, "GET", "/api/v1/cleanrooms/overlap/queries?limit=1", nil).JSON(t, &log)
	if len(log.Queries) != 1 || log.Queries[0].Epsilon != 0.5 || log.Queries[0].BudgetRemaining == nil || *log.Queries[0].BudgetRemaining != 1.5 {
		t.Fatalf("log of the DP query: %+v", log.Queries)
	}
	// Its audit event is the SQL endpoint's: sql.query with the
	// collaboration, the charge and what remains.
	var page mgmtapi.AuditPage
	var detail map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; {
		e.do(t, e.admin, "GET", "/api/v1/audit?action=sql.query&principal=advertiser&limit=1", nil).JSON(t, &page)
		if len(page.Records) == 1 && json.Unmarshal(page.Records[0].Detail, &detail) == nil && detail["epsilon"] == 0.5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sql.query audit event of the DP query over HTTP: %+v", page.Records)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if detail["collaboration"] != "overlap" || detail["budget_remaining"] != 1.5 || page.Records[0].Outcome != "success" {
		t.Fatalf("audit event of the DP query over HTTP: %s %s", page.Records[0].Outcome, page.Records[0].Detail)
	}
	r = q(advertiser, "SHOW floe.privacy_budget")
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.Body), "1.5") {
		t.Fatalf("SHOW floe.privacy_budget over HTTP: %s", r.Body)
	}
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// TestCleanRoomTemplatesAPI: the template endpoints and the analysis_rule
// field, each exchange validated against the OpenAPI document: tables
// configured under the custom and list rules, a template added (bad
// ones refused), listed with its approval, approved by the other owner,
// run through the SQL endpoint, removed only by its author or the
// creator; an outsider sees none of it.
func TestCleanRoomTemplatesAPI(t *testing.T) {
	e := newEnv(t)
	f := e.f
	sql := func(q string) {
		t.Helper()
		wantStatus(t, e.do(t, e.admin, "POST", "/api/v1/query", map[string]any{"sql": q}), 200)
	}
	sql("CREATE SCHEMA retail")
	sql("CREATE SCHEMA ads")
	sql("CREATE TABLE retail.customers (customer_id BIGINT, email VARCHAR, segment VARCHAR)")
	sql("CREATE TABLE ads.exposures (user_id BIGINT, email VARCHAR, campaign VARCHAR)")
	sql("INSERT INTO retail.customers VALUES (1, 'a', 'gold'), (2, 'b', 'silver')")
	sql("INSERT INTO ads.exposures VALUES (11, 'a', 'spring'), (12, 'b', 'autumn')")
	retailer, advertiser, outsider := f.PrincipalToken(t, "retailer"), f.PrincipalToken(t, "advertiser"), f.PrincipalToken(t, "outsider")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "retailer", "SELECT", tableOn("retail", "customers")))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "advertiser", "SELECT", tableOn("ads", "exposures")))
	okAs := func(tok string, status int, method, path string, body any) []byte {
		t.Helper()
		r := e.do(t, tok, method, path, body)
		if r.Status != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
		}
		return r.Body
	}
	okAs(retailer, 201, "POST", "/api/v1/cleanrooms", map[string]any{"name": "tmpl", "members": []string{"advertiser"}})
	wantErrorHas(t, e.do(t, retailer, "PUT", "/api/v1/cleanrooms/tmpl/tables/customers", map[string]any{"analysis_rule": "list",
		"namespace": []string{"retail"}, "table": "customers", "join_keys": []string{"email"}, "columns": []string{"segment"}, "rule": map[string]any{"min_identifiers": 3}}),
		400, "BadRequestException", "no threshold")
	var collab cleanroom.Collaboration
	if err := json.Unmarshal(okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/tmpl/tables/customers", map[string]any{"analysis_rule": "custom",
		"namespace": []string{"retail"}, "table": "customers", "join_keys": []string{"email"}, "columns": []string{"segment"}}), &collab); err != nil ||
		collab.Tables[0].Kind() != cleanroom.RuleCustom {
		t.Fatalf("configure custom: %+v %v", collab, err)
	}
	okAs(advertiser, 200, "PUT", "/api/v1/cleanrooms/tmpl/tables/exposures", map[string]any{"analysis_rule": "custom",
		"namespace": []string{"ads"}, "table": "exposures", "join_keys": []string{"email"}, "columns": []string{"campaign"}})

	const p = "/api/v1/cleanrooms/tmpl/templates"
	body := map[string]any{"name": "campaigns", "sql": "SELECT e.campaign FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = $segment",
		"params": []map[string]any{{"name": "segment", "type": "varchar"}}, "allowed_members": []string{"advertiser"}}
	wantErrorHas(t, e.do(t, outsider, "POST", p, body), 404, "NotFoundException", "not a member")
	wantErrorHas(t, e.do(t, retailer, "POST", p, map[string]any{"name": "x", "sql": "SELECT 1", "allowed_members": []string{"outsider"}}), 400, "BadRequestException", "not a member")
	wantErrorHas(t, e.do(t, retailer, "POST", p, map[string]any{"name": "x", "sql": "SELECT 1", "params": []map[string]any{{"name": "a", "type": "blob"}}, "allowed_members": []string{"advertiser"}}),
		400, "BadRequestException", "type")
	var tmpl cleanroom.Template
	if err := json.Unmarshal(okAs(retailer, 201, "POST", p, body), &tmpl); err != nil || !tmpl.Approved("retailer") || tmpl.Approved("advertiser") || tmpl.Version != 1 {
		t.Fatalf("add: %+v %v", tmpl, err)
	}
	wantErrorHas(t, e.do(t, retailer, "POST", p, body), 409, "AlreadyExistsException", "already has a template")
	var ls mgmtapi.TemplateList
	e.do(t, advertiser, "GET", p, nil).JSON(t, &ls)
	if len(ls.Templates) != 1 || ls.Templates[0].Name != "campaigns" {
		t.Fatalf("list: %+v", ls)
	}
	wantErrorHas(t, e.do(t, outsider, "GET", p, nil), 404, "NotFoundException", "not a member")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := url.URL{Scheme: "postgres", User: url.UserPassword("advertiser", advertiser), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET floe.collaboration = 'tmpl'"); err != nil {
		t.Fatal(err)
	}
	const run = "EXECUTE TEMPLATE campaigns (segment => 'gold')"
	if _, err := conn.Exec(ctx, run); !isCode(err, "42501") {
		t.Fatalf("before approval: %v", err)
	}
	if err := json.Unmarshal(okAs(advertiser, 200, "POST", p+"/campaigns/approvals", nil), &tmpl); err != nil || !tmpl.Approved("advertiser") || tmpl.Version != 2 {
		t.Fatalf("approve: %+v %v", tmpl, err)
	}
	var campaign string
	if err := conn.QueryRow(ctx, run).Scan(&campaign); err != nil || campaign != "spring" {
		t.Fatalf("run: %q %v", campaign, err)
	}
	wantErrorHas(t, e.do(t, advertiser, "DELETE", p+"/campaigns", nil), 403, "ForbiddenException", "may not remove")
	okAs(retailer, 204, "DELETE", p+"/campaigns", nil)
	wantErrorHas(t, e.do(t, retailer, "DELETE", p+"/campaigns", nil), 404, "NotFoundException", "no template")
	if _, err := conn.Exec(ctx, run); !isCode(err, "42501") {
		t.Fatalf("after removal: %v", err)
	}
}
