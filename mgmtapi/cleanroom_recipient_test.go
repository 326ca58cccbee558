package mgmtapi_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/mgmtapi"
)

// TestCleanRoomRecipientMember: a member from another organisation. The
// retailer (a principal) makes recipient "agency" (another organisation's
// identity: a bearer token, no principal here) and adds it to the
// collaboration; the advertiser (a principal) brings its exposures. The
// agency signs in with its recipient token to the SQL endpoint and the
// HTTP query API and runs the overlap analysis, which equals the plain-SQL
// reference minus the suppressed group. It reads nothing else: outside the
// collaboration every statement is refused (catalog listing, a raw SELECT
// of a table); inside, a raw read is refused by the rule; the REST
// catalog's loadTable and the management API's other routes refuse its
// token; it cannot configure a table. A recipient the creator does not own
// cannot be added; a revoked token ends the SQL session.
func TestCleanRoomRecipientMember(t *testing.T) {
	e := newEnv(t)
	f := e.f
	sql := func(q string) testkit.Response {
		t.Helper()
		r := e.do(t, e.admin, "POST", "/api/v1/query", map[string]any{"sql": q})
		wantStatus(t, r, 200)
		return r
	}
	sql("CREATE SCHEMA retail")
	sql("CREATE SCHEMA ads")
	sql("CREATE TABLE retail.customers (customer_id BIGINT, email VARCHAR, segment VARCHAR)")
	sql("CREATE TABLE ads.exposures (user_id BIGINT, email VARCHAR, campaign VARCHAR)")
	sql("INSERT INTO retail.customers VALUES (1, 'a', 'gold'), (2, 'b', 'gold'), (3, 'c', 'gold'), (4, 'd', 'gold'), (5, 'e', 'silver'), (6, 'f', 'silver'), (7, 'g', 'silver')")
	sql("INSERT INTO ads.exposures VALUES (11, 'a', 'spring'), (12, 'b', 'spring'), (13, 'c', 'spring'), (14, 'd', 'spring'), (15, 'e', 'spring'), (16, 'f', 'spring'), (17, 'g', 'autumn')")
	retailer, advertiser := f.PrincipalToken(t, "retailer"), f.PrincipalToken(t, "advertiser")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "retailer", "SELECT", tableOn("retail", "customers")))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "advertiser", "SELECT", tableOn("ads", "exposures")))
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "retailer", "CREATE_SHARE", whOn()))
	okAs := func(tok string, status int, method, path string, body any) testkit.Response {
		t.Helper()
		r := e.do(t, tok, method, path, body)
		if r.Status != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
		}
		return r
	}
	var cred mgmtapi.RecipientCredential
	okAs(retailer, 201, "POST", "/api/v1/recipients", map[string]any{"name": "agency", "properties": map[string]string{"org": "Agency Inc"}}).JSON(t, &cred)
	agency := cred.Profile.BearerToken
	e.ok(t, 201, "POST", "/api/v1/recipients", map[string]any{"name": "stranger"}) // the admin's, not the retailer's

	okAs(retailer, 201, "POST", "/api/v1/cleanrooms", map[string]any{"name": "overlap"})
	okAs(retailer, 200, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "advertiser"})
	wantErrorHas(t, e.do(t, retailer, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "recipient:stranger"}), 400, "BadRequestException", "no such recipient of yours")
	wantErrorHas(t, e.do(t, retailer, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "recipient:nobody"}), 400, "BadRequestException", "no such recipient")
	okAs(retailer, 200, "POST", "/api/v1/cleanrooms/overlap/members", map[string]any{"principal": "recipient:agency"})
	okAs(retailer, 200, "PUT", "/api/v1/cleanrooms/overlap/tables/customers", map[string]any{"namespace": []string{"retail"}, "table": "customers",
		"join_keys": []string{"email"}, "dimensions": []string{"segment"}, "identifier": "customer_id", "rule": map[string]any{"min_identifiers": 3}})
	okAs(advertiser, 200, "PUT", "/api/v1/cleanrooms/overlap/tables/exposures", map[string]any{"namespace": []string{"ads"}, "table": "exposures",
		"join_keys": []string{"email"}, "dimensions": []string{"campaign"}, "identifier": "user_id", "rule": map[string]any{"min_identifiers": 2}})

	// The reference, with plain SQL over the real tables: gold/spring 4,
	// silver/spring 2 (below 3: suppressed), silver/autumn 1 (suppressed).
	ref := sql("SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) AS n FROM retail.customers c JOIN ads.exposures e ON c.email = e.email GROUP BY 1, 2 ORDER BY 1, 2")
	if got := strings.Join(strings.Fields(string(ref.Body)), " "); got != `{"segment":"gold","campaign":"spring","n":4} {"segment":"silver","campaign":"autumn","n":1} {"segment":"silver","campaign":"spring","n":2}` {
		t.Fatalf("reference: %s", got)
	}
	const overlap = "SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) AS n FROM customers c JOIN exposures e ON c.email = e.email GROUP BY c.segment, e.campaign ORDER BY 1, 2"

	// The HTTP query API with the recipient's token.
	r := okAs(agency, 200, "POST", "/api/v1/query", map[string]any{"sql": overlap, "collaboration": "overlap"})
	if got := strings.TrimSpace(string(r.Body)); got != `{"segment":"gold","campaign":"spring","n":4}` {
		t.Fatalf("overlap as the recipient over HTTP: %s", got)
	}
	wantErrorHas(t, e.do(t, agency, "POST", "/api/v1/query", map[string]any{"sql": "SELECT customer_id FROM customers", "collaboration": "overlap"}), 403, "ForbiddenException", "clean room rule (aggregate outputs)")
	for _, q := range []string{"SELECT * FROM retail.customers", "SELECT count(*) FROM ads.exposures", "SELECT table_schema, table_name FROM information_schema.tables", "SELECT * FROM duckdb_tables()", "SELECT 1"} {
		wantErrorHas(t, e.do(t, agency, "POST", "/api/v1/query", map[string]any{"sql": q}), 403, "ForbiddenException", "may only query in a clean-room collaboration")
	}
	// Audited under its recipient name, as the sharing protocols do.
	var page mgmtapi.AuditPage
	for deadline := time.Now().Add(5 * time.Second); ; {
		e.do(t, e.admin, "GET", "/api/v1/audit?action=sql.query&principal=recipient:agency&limit=50", nil).JSON(t, &page)
		if len(page.Records) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recipient's queries are not audited under recipient:agency: %+v", page.Records)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The management API: its collaboration, log and budget, nothing else.
	var got mgmtapi.CollaborationList
	okAs(agency, 200, "GET", "/api/v1/cleanrooms", nil).JSON(t, &got)
	if len(got.Collaborations) != 1 || got.Collaborations[0].Name != "overlap" {
		t.Fatalf("the recipient lists %+v", got)
	}
	var log mgmtapi.QueryLog
	okAs(agency, 200, "GET", "/api/v1/cleanrooms/overlap/queries", nil).JSON(t, &log)
	if len(log.Queries) < 2 || log.Queries[len(log.Queries)-1].Member != "recipient:agency" || log.Queries[len(log.Queries)-1].Outcome != "success" {
		t.Fatalf("log: %+v", log.Queries)
	}
	for _, rq := range [][2]string{{"GET", "/api/v1/catalogs"}, {"GET", "/api/v1/grants"}, {"GET", "/api/v1/recipients/agency"}, {"GET", "/api/v1/whoami"}} {
		wantErrorHas(t, e.do(t, agency, rq[0], rq[1], nil), 401, "NotAuthorizedException", "recipient token opens only")
	}
	wantErrorHas(t, e.do(t, agency, "PUT", "/api/v1/cleanrooms/overlap/tables/mine", map[string]any{"namespace": []string{"ads"}, "table": "exposures",
		"join_keys": []string{"email"}, "identifier": "user_id", "rule": map[string]any{"min_identifiers": 2}}), 401, "NotAuthorizedException", "recipient token opens only")
	wantErrorHas(t, e.do(t, agency, "POST", "/api/v1/cleanrooms", map[string]any{"name": "mine"}), 401, "NotAuthorizedException", "recipient token opens only")
	// The REST catalog refuses the token (loadTable, listing).
	for _, p := range []string{"/v1/floe/namespaces/retail/tables/customers", "/v1/floe/namespaces"} {
		if r := e.do(t, agency, "GET", p, nil); r.Status != 401 && r.Status != 403 {
			t.Fatalf("GET %s with the recipient's token: %d %s", p, r.Status, r.Body)
		}
	}

	// The SQL endpoint: user recipient:agency, the token as the password.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := url.URL{Scheme: "postgres", User: url.UserPassword("recipient:agency", agency), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{"SELECT * FROM retail.customers", "SELECT * FROM pg_catalog.pg_tables", "SELECT 1"} {
		if _, err := conn.Exec(ctx, q); !isCode(err, "42501") {
			t.Fatalf("%s outside the collaboration: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, "SET floe.collaboration = 'overlap'"); err != nil {
		t.Fatal(err)
	}
	var seg, camp string
	var n int64
	rows, err := conn.Query(ctx, overlap)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(&seg, &camp, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, seg+"/"+camp)
	}
	if rows.Err() != nil || strings.Join(out, ",") != "gold/spring" || n != 4 {
		t.Fatalf("overlap as the recipient over the SQL endpoint: %v %d %v", out, n, rows.Err())
	}
	for _, q := range []string{"SELECT email FROM customers", "SELECT count(*) FROM retail.customers", "DROP TABLE customers"} {
		if _, err := conn.Exec(ctx, q); !isCode(err, "42501") {
			t.Fatalf("%s in the collaboration: %v", q, err)
		}
	}
	// A principal with the recipient's name does not log in with the token,
	// and another user name is refused.
	bad := u
	bad.User = url.UserPassword("agency", agency)
	if c, err := pgx.Connect(ctx, bad.String()); err == nil {
		c.Close(ctx)
		t.Fatal("the recipient's token logged in as user agency")
	}

	// Revoking the token ends the session and refuses the HTTP API.
	okAs(retailer, 200, "POST", "/api/v1/recipients/agency/revoke", map[string]any{"token_id": cred.TokenID})
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := conn.Exec(ctx, "SHOW floe.collaboration")
		if isCode(err, "28000") || conn.IsClosed() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session outlives the revoked token: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := e.do(t, agency, "POST", "/api/v1/query", map[string]any{"sql": overlap, "collaboration": "overlap"}); r.Status != 401 {
		t.Fatalf("the revoked token over HTTP: %d %s", r.Status, r.Body)
	}
}
