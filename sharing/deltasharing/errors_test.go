package deltasharing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// TestBadInput: malformed requests, unknown names and wrong tokens get the
// protocol's 4xx errors, never a 5xx.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	e.res.mu.Lock()
	e.res.tables["sales"] = append(e.res.tables["sales"], sharing.Table{ID: "v", Share: "sales", Schema: "retail", Name: "a_view",
		Warehouse: e.f.Warehouse, IsView: true})
	e.res.mu.Unlock()
	q := "/shares/sales/schemas/retail/tables/orders/query"
	deep := strings.Repeat(`{"op":"not","children":[`, 200) + `{"op":"isNull","children":[{"op":"column","name":"id"}]}` + strings.Repeat(`]}`, 200)
	wide := `{"op":"and","children":[` + strings.Repeat(`{"op":"isNull","children":[{"op":"column","name":"id"}]},`, 3000) +
		`{"op":"isNull","children":[{"op":"column","name":"id"}]}]}`
	for _, c := range []struct {
		name, token, method, path string
		body                      any
		hdr                       []string
		status                    int
		code                      string
	}{
		{"no token", "", "GET", "/shares", nil, nil, 401, "UNAUTHENTICATED"},
		{"bad token", "nope", "GET", "/shares", nil, nil, 401, "UNAUTHENTICATED"},
		{"basic auth", "", "GET", "/shares", nil, []string{"Authorization", "Basic YTpi"}, 401, "UNAUTHENTICATED"},
		{"maxResults text", tokenAlice, "GET", "/shares?maxResults=ten", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"maxResults negative", tokenAlice, "GET", "/shares?maxResults=-1", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"pageToken junk", tokenAlice, "GET", "/shares?pageToken=not-a-token", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"pageToken other list", tokenAlice, "GET", "/shares/sales/schemas?pageToken=eyJzIjoic2hhcmVzIiwiYSI6IiJ9", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"unknown endpoint", tokenAlice, "GET", "/nope", nil, nil, 404, "RESOURCE_DOES_NOT_EXIST"},
		{"wrong method", tokenAlice, "GET", q, nil, nil, 405, "MALFORMED_REQUEST"},
		{"long name", tokenAlice, "GET", "/shares/" + strings.Repeat("x", 300), nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"control name", tokenAlice, "GET", "/shares/a%01b", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"not json", tokenAlice, "POST", q, "{not json", nil, 400, "MALFORMED_REQUEST"},
		{"two values", tokenAlice, "POST", q, "{} {}", nil, 400, "MALFORMED_REQUEST"},
		{"version string", tokenAlice, "POST", q, `{"version":"x"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"version negative", tokenAlice, "POST", q, `{"version":-1}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"version missing", tokenAlice, "POST", q, `{"version":99}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"version and timestamp", tokenAlice, "POST", q, `{"version":1,"timestamp":"2026-01-01T00:00:00Z"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"bad timestamp", tokenAlice, "POST", q, `{"timestamp":"yesterday"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"early timestamp", tokenAlice, "POST", q, `{"timestamp":"2000-01-01T00:00:00Z"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"future timestamp", tokenAlice, "POST", q, `{"timestamp":"2999-01-01T00:00:00Z"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"limitHint negative", tokenAlice, "POST", q, `{"limitHint":-5}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"maxFiles zero", tokenAlice, "POST", q, `{"maxFiles":0}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"bad pageToken", tokenAlice, "POST", q, `{"maxFiles":1,"pageToken":"zzz"}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"hints not strings", tokenAlice, "POST", q, `{"predicateHints":[1,2]}`, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"deep json predicate", tokenAlice, "POST", q, map[string]any{"jsonPredicateHints": deep}, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"wide json predicate", tokenAlice, "POST", q, map[string]any{"jsonPredicateHints": wide}, nil, 400, "INVALID_PARAMETER_VALUE"},
		{"huge body", tokenAlice, "POST", q, `{"predicateHints":["` + strings.Repeat("a", 2<<20) + `"]}`, nil, 413, "MALFORMED_REQUEST"},
		{"startingVersion", tokenAlice, "POST", q, `{"startingVersion":1}`, nil, 400, "UNSUPPORTED_OPERATION"},
		{"delta only", tokenAlice, "POST", q, `{}`, []string{"delta-sharing-capabilities", "responseformat=delta"}, 400, "UNSUPPORTED_OPERATION"},
		{"changes", tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders/changes?startingVersion=0", nil, nil, 400, "UNSUPPORTED_OPERATION"},
		{"view query", tokenAlice, "POST", "/shares/sales/schemas/retail/tables/a_view/query", `{}`, nil, 400, "UNSUPPORTED_OPERATION"},
		{"metadata bad version", tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders/metadata?version=x", nil, nil, 400, "INVALID_PARAMETER_VALUE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, c.token, c.method, c.path, c.body, c.hdr...)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if code, msg := r.errorCode(t); code != c.code || msg == "" {
				t.Fatalf("error %s %q, want %s", code, msg, c.code)
			}
		})
	}
	// Both formats accepted: parquet, echoed.
	r := e.do(t, tokenAlice, "POST", q, `{}`, "delta-sharing-capabilities", "responseformat=delta,parquet;readerfeatures=deletionvectors")
	if r.status != 200 || r.header.Get("Delta-Sharing-Capabilities") != "responseformat=parquet" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	// includeendstreamaction: echoed, and the last line is an endStreamAction.
	r = e.do(t, tokenAlice, "POST", q, `{}`, "delta-sharing-capabilities", "responseformat=parquet;includeendstreamaction=true")
	if r.status != 200 || r.header.Get("Delta-Sharing-Capabilities") != "responseformat=parquet;includeendstreamaction=true" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	if lines := r.lines(t); lines[len(lines)-1]["endStreamAction"] == nil {
		t.Fatalf("no endStreamAction: %s", r.body)
	}
}

// TestListPaging walks shares and tables one item a page.
func TestListPaging(t *testing.T) {
	e := newEnv(t)
	e.res.grants["alice"] = []string{"sales", "a", "b", "c"}
	for _, n := range []string{"t1", "t2", "t3"} {
		for _, s := range []string{"s1", "s2"} {
			e.share(s, n, n, true, "")
		}
	}
	walk := func(path string) []string {
		var names []string
		tok := ""
		for i := 0; i < 20; i++ {
			p := path + "?maxResults=1"
			if tok != "" {
				p += "&pageToken=" + tok
			}
			r := e.do(t, tokenAlice, "GET", p, nil)
			must(t, r, 200)
			var l struct {
				Items         []struct{ Name, Schema string }
				NextPageToken string
			}
			if err := json.Unmarshal(r.body, &l); err != nil {
				t.Fatal(err)
			}
			if len(l.Items) > 1 {
				t.Fatalf("page of %d", len(l.Items))
			}
			for _, it := range l.Items {
				names = append(names, it.Schema+"/"+it.Name)
			}
			if l.NextPageToken == "" {
				return names
			}
			tok = l.NextPageToken
		}
		t.Fatal("no end")
		return nil
	}
	if got := strings.Join(walk("/shares"), ","); got != "/a,/b,/c,/sales" {
		t.Fatalf("shares: %s", got)
	}
	if got := strings.Join(walk("/shares/sales/all-tables"), ","); got != "s1/t1,s1/t2,s1/t3,s2/t1,s2/t2,s2/t3" {
		t.Fatalf("all-tables: %s", got)
	}
	if got := strings.Join(walk("/shares/sales/schemas/s2/tables"), ","); got != "s2/t1,s2/t2,s2/t3" {
		t.Fatalf("tables: %s", got)
	}
	if got := strings.Join(walk("/shares/sales/schemas"), ","); got != "/s1,/s2" {
		t.Fatalf("schemas: %s", got)
	}
	// maxResults beyond the cap is served capped, 0 gives no item.
	r := e.do(t, tokenAlice, "GET", "/shares?maxResults=0", nil)
	must(t, r, 200)
	if !strings.Contains(string(r.body), `"items":[]`) && !strings.Contains(string(r.body), `"items":null`) {
		t.Fatalf("%s", r.body)
	}
}

// TestAudit: every request and every URL issuance is an audit event with
// the recipient, its token id, the share and the object.
func TestAudit(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 6)
	e.share("retail", "orders", "orders", true, "")
	var mu sync.Mutex
	var events []audit.Event
	h := deltasharing.New(deltasharing.Options{Resolver: e.res, Tables: e.f.App.Catalog(), FS: lake.NewBucketFS(e.f.App.Objects()),
		Minter: e.f.App.Minter(), Endpoint: e.f.App.S3URL, PathStyle: true, Region: "us-east-1",
		Audit: func(_ context.Context, ev audit.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }})
	for _, c := range []struct{ token, method, path, body string }{
		{tokenAlice, "POST", "/shares/sales/schemas/retail/tables/orders/query", "{}"},
		{"bad", "GET", "/shares", ""},
		{tokenAlice, "GET", "/shares/sales/schemas/retail/tables/nope/metadata", ""},
	} {
		req := httptest.NewRequestWithContext(t.Context(), c.method, deltasharing.Prefix+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 4 {
		t.Fatalf("%d events: %+v", len(events), events)
	}
	urls, q := events[0], events[1]
	if urls.Action != "deltasharing.urls.issue" || urls.Principal != "recipient:alice" || urls.Detail["count"] != 3 ||
		urls.Detail["credential_id"] == "" || urls.Detail["token_id"] != "tok-alice-1" || urls.Detail["expires"] == "" ||
		urls.Detail["object_id"] != "obj-orders" || urls.Resource != "table:"+e.f.Warehouse+".crm.orders" {
		t.Fatalf("urls event %+v", urls)
	}
	if q.Action != "deltasharing.table.query" || q.Outcome != audit.OutcomeSuccess || q.Detail["recipient_id"] != "r-alice" ||
		q.Detail["share"] != "sales" || q.Detail["object_id"] != "obj-orders" || q.Detail["token_id"] != "tok-alice-1" ||
		q.Detail["files"] != 3 {
		t.Fatalf("query event %+v", q)
	}
	if ev := events[2]; ev.Outcome != audit.OutcomeDenied || ev.Principal != "" || ev.Detail["status"] != http.StatusUnauthorized {
		t.Fatalf("denied event %+v", ev)
	}
	if ev := events[3]; ev.Outcome != audit.OutcomeFailure || ev.Detail["error"] != "RESOURCE_DOES_NOT_EXIST" {
		t.Fatalf("failed event %+v", ev)
	}
}

// notFoundTables is a Tables of no table.
type notFoundTables struct{}

func (notFoundTables) LoadTable(context.Context, string, catalog.Ident) (*catalog.TableState, error) {
	return nil, floe.E(floe.NotFound, "table", "no such table")
}

// FuzzHandler: whatever a recipient sends (path, method, body, headers),
// the answer is never a 5xx.
func FuzzHandler(f *testing.F) {
	res := newFake()
	res.tokens[tokenAlice] = sharing.Recipient{ID: "r", Name: "alice", TokenID: "t"}
	res.grants["alice"] = []string{"sales"}
	res.tables["sales"] = []sharing.Table{{ID: "o", Share: "sales", Schema: "s", Name: "t", Warehouse: "floe",
		Ident: catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "t"}}}
	h := deltasharing.New(deltasharing.Options{Resolver: res, Tables: notFoundTables{}})
	f.Add("POST", "/shares/sales/schemas/s/tables/t/query", `{"version":1}`, "responseformat=delta")
	f.Add("GET", "/shares?maxResults=2&pageToken=abc", "", "")
	f.Add("HEAD", "/shares/sales/schemas/s/tables/t", "", "")
	f.Add("GET", "/shares/sales/schemas/s/tables/t/metadata?version=-1&timestamp=x", "", "includeendstreamaction=true")
	f.Fuzz(func(t *testing.T, method, path, body, caps string) {
		u, err := url.Parse("http://x" + deltasharing.Prefix + path)
		if err != nil || (method != "GET" && method != "POST" && method != "HEAD" && method != "PUT") {
			return
		}
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		req.URL = u
		req.Header.Set("Authorization", "Bearer "+tokenAlice)
		req.Header.Set("Delta-Sharing-Capabilities", caps)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		}
	})
}
