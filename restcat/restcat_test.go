package restcat_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

const schemaJSON = `{"type":"struct","schema-id":0,"fields":[
 {"id":3,"name":"id","required":true,"type":"long"},
 {"id":4,"name":"ts","required":false,"type":"timestamptz"},
 {"id":5,"name":"category","required":false,"type":"string"}]}`

func createTableBody(name string, extra string) string {
	return fmt.Sprintf(`{"name":%q,"schema":%s,"partition-spec":{"spec-id":0,"fields":[{"source-id":5,"field-id":1000,"name":"category","transform":"identity"}]}%s}`, name, schemaJSON, extra)
}

// errType extracts error.type from an ErrorModel body.
func errType(t *testing.T, r testkit.Response) (string, string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	r.JSON(t, &e)
	if e.Error.Code != r.Status {
		t.Errorf("error code %d != status %d", e.Error.Code, r.Status)
	}
	return e.Error.Type, e.Error.Message
}

func wantErr(t *testing.T, r testkit.Response, status int, typ, msgPart string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (body %s)", r.Status, status, r.Body)
	}
	gotT, gotM := errType(t, r)
	if gotT != typ {
		t.Errorf("type %q, want %q (message %q)", gotT, typ, gotM)
	}
	if !strings.Contains(gotM, msgPart) {
		t.Errorf("message %q does not contain %q", gotM, msgPart)
	}
}

func mustStatus(t *testing.T, r testkit.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (body %s)", r.Status, status, r.Body)
	}
}

func TestConfig(t *testing.T) {
	f := testkit.Start(t)
	r := f.Do(t, "GET", "/v1/config", nil)
	mustStatus(t, r, 200)
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
		Defaults  map[string]string `json:"defaults"`
		Endpoints []string          `json:"endpoints"`
		Lifetime  string            `json:"idempotency-key-lifetime"`
	}
	r.JSON(t, &cfg)
	if cfg.Overrides["prefix"] != f.Warehouse {
		t.Errorf("prefix override = %q, want %q", cfg.Overrides["prefix"], f.Warehouse)
	}
	if cfg.Defaults["s3.endpoint"] != f.App.S3URL() || cfg.Defaults["s3.path-style-access"] != "true" || cfg.Defaults["s3.access-key-id"] != "" {
		t.Errorf("defaults %v: want the S3 endpoint and no keys", cfg.Defaults)
	}
	if len(cfg.Endpoints) != 33 || cfg.Lifetime != "PT30M" {
		t.Errorf("endpoints %d (want 33), lifetime %q", len(cfg.Endpoints), cfg.Lifetime)
	}
	for _, e := range []string{"POST /v1/{prefix}/transactions/commit", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign", "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister"} {
		found := false
		for _, got := range cfg.Endpoints {
			found = found || got == e
		}
		if !found {
			t.Errorf("endpoint %q not advertised", e)
		}
	}
	mustStatus(t, f.Do(t, "GET", "/v1/config?warehouse="+f.Warehouse, nil), 200)
	wantErr(t, f.Do(t, "GET", "/v1/config?warehouse=nope", nil), 404, "NoSuchWarehouseException", "Warehouse does not exist: nope")
	wantErr(t, f.Do(t, "GET", "/v1/nope/namespaces", nil), 404, "NoSuchWarehouseException", "nope")
}

func TestAuthentication(t *testing.T) {
	f := testkit.Start(t)
	tests := []struct {
		name, token string
	}{
		{"missing", ""},
		{"garbage", "not-a-jwt"},
		{"tampered", f.Token(t) + "x"},
		{"alg none", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4In0."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.DoAs(t, tt.token, "GET", f.P("/namespaces"), nil)
			wantErr(t, r, 401, "NotAuthorizedException", "token")
		})
	}
	form := func(v url.Values, basic ...string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", f.URL+"/v1/oauth/tokens", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if len(basic) == 2 {
			req.SetBasicAuth(basic[0], basic[1])
		}
		resp, err := f.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	oauthCases := []struct {
		name   string
		v      url.Values
		basic  []string
		status int
		code   string
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"test-admin"}, "client_secret": {"nope"}}, nil, 401, "invalid_client"},
		{"unknown client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"ghost"}, "client_secret": {"x"}}, nil, 401, "invalid_client"},
		{"unsupported grant", url.Values{"grant_type": {"password"}}, nil, 400, "unsupported_grant_type"},
		{"no grant", url.Values{}, nil, 400, "invalid_request"},
		{"bad scope", url.Values{"grant_type": {"client_credentials"}, "client_id": {"test-admin"}, "client_secret": {"test-admin-secret"}, "scope": {"root"}}, nil, 400, "invalid_scope"},
		{"basic ok", url.Values{"grant_type": {"client_credentials"}}, []string{"test-admin", "test-admin-secret"}, 200, ""},
		{"post ok", url.Values{"grant_type": {"client_credentials"}, "client_id": {"test-admin"}, "client_secret": {"test-admin-secret"}, "scope": {"catalog"}}, nil, 200, ""},
		{"refresh", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {f.Token(t)}, "subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}, nil, 200, ""},
		{"refresh bad token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {"x.y.z"}, "subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}, nil, 400, "invalid_grant"},
	}
	for _, tt := range oauthCases {
		t.Run(tt.name, func(t *testing.T) {
			status, body := form(tt.v, tt.basic...)
			if status != tt.status {
				t.Fatalf("status %d, want %d (%v)", status, tt.status, body)
			}
			if tt.code != "" && body["error"] != tt.code {
				t.Errorf("error %v, want %s", body["error"], tt.code)
			}
			if tt.code == "" && (body["token_type"] != "bearer" || body["access_token"] == "" || body["expires_in"] == nil) {
				t.Errorf("bad token response %v", body)
			}
		})
	}
}

func TestNamespaces(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["sales"],"properties":{"owner":"ana","tier":"gold"}}`), 200)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["sales"]}`), 409, "AlreadyExistsException", "Namespace already exists: sales")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["nope","child"]}`), 400, "BadRequestException", "Namespace does not exist: nope")
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["sales","emea"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["sales","emea","de"]}`), 200)

	r := f.Do(t, "GET", f.P("/namespaces/sales"), nil)
	mustStatus(t, r, 200)
	var ns struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	r.JSON(t, &ns)
	if ns.Properties["owner"] != "ana" {
		t.Errorf("properties %v", ns.Properties)
	}
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/sales%1Femea"), nil), 204)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/ghost"), nil), 404)

	// parent filter returns direct children only
	var list struct {
		Namespaces [][]string `json:"namespaces"`
	}
	f.Do(t, "GET", f.P("/namespaces?parent=sales"), nil).JSON(t, &list)
	if len(list.Namespaces) != 1 || strings.Join(list.Namespaces[0], ".") != "sales.emea" {
		t.Errorf("children of sales: %v", list.Namespaces)
	}
	wantErr(t, f.Do(t, "GET", f.P("/namespaces?parent=ghost"), nil), 404, "NoSuchNamespaceException", "ghost")

	// properties: updated, removed, missing; overlap is 422
	r = f.Do(t, "POST", f.P("/namespaces/sales/properties"), `{"removals":["tier","nothere"],"updates":{"owner":"bo","region":"eu"}}`)
	mustStatus(t, r, 200)
	var pr struct{ Updated, Removed, Missing []string }
	r.JSON(t, &pr)
	if strings.Join(pr.Updated, ",") != "owner,region" || strings.Join(pr.Removed, ",") != "tier" || strings.Join(pr.Missing, ",") != "nothere" {
		t.Errorf("properties update %+v", pr)
	}
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/sales/properties"), `{"removals":["a"],"updates":{"a":"1"}}`), 422, "UnprocessableEntityException", "a")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/ghost/properties"), `{"updates":{"a":"1"}}`), 404, "NoSuchNamespaceException", "ghost")

	// drop: not empty, missing, ok
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/sales"), nil), 409, "NamespaceNotEmptyException", "is not empty")
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/sales%1Femea%1Fde"), nil), 204)
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/sales%1Femea%1Fde"), nil), 404, "NoSuchNamespaceException", "Namespace does not exist: sales.emea.de")
}

func TestBadInput(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.MaxBodyBytes = 4096 })
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ok"]}`), 200)
	big := `{"namespace":["big"],"properties":{"x":"` + strings.Repeat("a", 8000) + `"}}`
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed json", "POST", "/namespaces", `{"namespace":`, 400},
		{"wrong type", "POST", "/namespaces", `{"namespace":"flat"}`, 400},
		{"missing field", "POST", "/namespaces", `{}`, 400},
		{"empty level", "POST", "/namespaces", `{"namespace":[""]}`, 400},
		{"slash in name", "POST", "/namespaces", `{"namespace":["a/b"]}`, 400},
		{"control char", "POST", "/namespaces", `{"namespace":["a\u0001"]}`, 400},
		{"oversized body", "POST", "/namespaces", big, 400},
		{"empty body", "POST", "/namespaces", ``, 400},
		{"bad page size", "GET", "/namespaces?pageSize=0", "", 400},
		{"bad page token", "GET", "/namespaces?pageToken=!!!", "", 400},
		{"unknown update action", "POST", "/namespaces/ok/tables/t", `{"requirements":[],"updates":[{"action":"frobnicate"}]}`, 400},
		{"unknown requirement", "POST", "/namespaces/ok/tables/t", `{"requirements":[{"type":"assert-magic"}],"updates":[]}`, 400},
		{"commit without updates", "POST", "/namespaces/ok/tables/t", `{"requirements":[]}`, 400},
		{"create table without schema", "POST", "/namespaces/ok/tables", `{"name":"t"}`, 400},
		{"create table bad schema", "POST", "/namespaces/ok/tables", `{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"x","type":"no-such-type","required":false}]}}`, 400},
		{"location outside warehouse", "POST", "/namespaces/ok/tables", `{"name":"t","location":"file:///etc","schema":` + schemaJSON + `}`, 400},
		{"register outside warehouse", "POST", "/namespaces/ok/register", `{"name":"t","metadata-location":"/etc/passwd"}`, 400},
		{"bad snapshots mode", "GET", "/namespaces/ok/tables/t?snapshots=some", "", 400},
		{"bad purge flag", "DELETE", "/namespaces/ok/tables/t?purgeRequested=maybe", "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" || tt.method == "POST" {
				body = tt.body
			}
			r := f.Do(t, tt.method, f.P(tt.path), body)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			typ, msg := errType(t, r)
			if typ == "" || msg == "" {
				t.Errorf("empty error model: %s", r.Body)
			}
		})
	}
	// nothing was written by any of them
	var list struct {
		Identifiers []any `json:"identifiers"`
	}
	f.Do(t, "GET", f.P("/namespaces/ok/tables"), nil).JSON(t, &list)
	if len(list.Identifiers) != 0 {
		t.Errorf("tables created by bad requests: %v", list.Identifiers)
	}
	var nss struct {
		Namespaces [][]string `json:"namespaces"`
	}
	f.Do(t, "GET", f.P("/namespaces"), nil).JSON(t, &nss)
	if len(nss.Namespaces) != 1 {
		t.Errorf("namespaces after bad requests: %v", nss.Namespaces)
	}
}

func TestPagination(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["p"]}`), 200)
	for i := 0; i < 23; i++ {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/p/tables"), createTableBody(fmt.Sprintf("t%02d", i), "")), 200)
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), fmt.Sprintf(`{"namespace":["n%02d"]}`, i)), 200)
	}
	// all at once without pageToken
	var all struct {
		Identifiers []struct{ Name string } `json:"identifiers"`
		Next        *string                 `json:"next-page-token"`
	}
	f.Do(t, "GET", f.P("/namespaces/p/tables"), nil).JSON(t, &all)
	if len(all.Identifiers) != 23 || all.Next != nil {
		t.Fatalf("unpaged listing: %d, next %v", len(all.Identifiers), all.Next)
	}
	for _, path := range []string{"/namespaces/p/tables", "/namespaces"} {
		var seen []string
		token := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			q := "?pageSize=10&pageToken=" + url.QueryEscape(token)
			r := f.Do(t, "GET", f.P(path+q), nil)
			mustStatus(t, r, 200)
			var page struct {
				Identifiers []struct{ Name string } `json:"identifiers"`
				Namespaces  [][]string              `json:"namespaces"`
				Next        *string                 `json:"next-page-token"`
			}
			r.JSON(t, &page)
			for _, id := range page.Identifiers {
				seen = append(seen, id.Name)
			}
			for _, ns := range page.Namespaces {
				seen = append(seen, strings.Join(ns, "."))
			}
			if page.Next == nil {
				break
			}
			token = *page.Next
		}
		want := 23
		if path == "/namespaces" {
			want = 24
		}
		if len(seen) != want {
			t.Errorf("%s: paged through %d items, want %d: %v", path, len(seen), want, seen)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] <= seen[i-1] {
				t.Errorf("%s: not strictly ordered at %d: %v", path, i, seen)
			}
		}
	}
}

func TestTables(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["db"]}`), 200)
	r := f.Do(t, "POST", f.P("/namespaces/db/tables"), createTableBody("events", `,"properties":{"owner":"ana"}`))
	mustStatus(t, r, 200)
	var created struct {
		MetadataLocation string          `json:"metadata-location"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	r.JSON(t, &created)
	var md struct {
		UUID     string `json:"table-uuid"`
		Location string `json:"location"`
		Schemas  []struct {
			Fields []struct{ ID int } `json:"fields"`
		} `json:"schemas"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(created.Metadata, &md); err != nil {
		t.Fatal(err)
	}
	if md.Schemas[0].Fields[0].ID != 1 || md.Properties["owner"] != "ana" {
		t.Errorf("fresh ids/properties not applied: %s", created.Metadata)
	}
	if !strings.HasPrefix(md.Location, "s3://floe/db/events-") || !strings.Contains(created.MetadataLocation, "/metadata/00000-") {
		t.Errorf("location %s, metadata-location %s", md.Location, created.MetadataLocation)
	}
	if r.Header.Get("ETag") == "" {
		t.Error("no ETag on create")
	}
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/db/tables"), createTableBody("events", "")), 409, "AlreadyExistsException", "Table already exists: db.events")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/ghost/tables"), createTableBody("x", "")), 404, "NoSuchNamespaceException", "ghost")

	// load, ETag and If-None-Match
	r = f.Do(t, "GET", f.P("/namespaces/db/tables/events"), nil)
	mustStatus(t, r, 200)
	tag := r.Header.Get("ETag")
	mustStatus(t, f.Do(t, "GET", f.P("/namespaces/db/tables/events"), nil, "If-None-Match", tag), 304)
	refs := f.Do(t, "GET", f.P("/namespaces/db/tables/events?snapshots=refs"), nil)
	mustStatus(t, refs, 200)
	if refs.Header.Get("ETag") == tag {
		t.Error("snapshots=refs must have its own ETag")
	}
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/db/tables/events"), nil), 204)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/db/tables/ghost"), nil), 404)
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/db/tables/ghost"), nil), 404, "NoSuchTableException", "Table does not exist: db.ghost")
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/nons/tables/ghost"), nil), 404, "NoSuchTableException", "Table does not exist: nons.ghost")

	// commit: a requirement fails with 409 and writes nothing
	meta := filepath.Join(f.LocalPath(md.Location), "metadata")
	before, _ := os.ReadDir(meta)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/db/tables/events"), `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`),
		409, "CommitFailedException", "Requirement failed: UUID")
	after, _ := os.ReadDir(meta)
	if len(after) != len(before) {
		t.Errorf("failed commit left files: %d -> %d", len(before), len(after))
	}
	// a good commit moves the ETag and the pointer
	r = f.Do(t, "POST", f.P("/namespaces/db/tables/events"), fmt.Sprintf(`{"requirements":[{"type":"assert-table-uuid","uuid":%q}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, md.UUID))
	mustStatus(t, r, 200)
	var committed struct {
		MetadataLocation string `json:"metadata-location"`
	}
	r.JSON(t, &committed)
	if !strings.Contains(committed.MetadataLocation, "/00001-") {
		t.Errorf("new metadata location %s", committed.MetadataLocation)
	}
	mustStatus(t, f.Do(t, "GET", f.P("/namespaces/db/tables/events"), nil, "If-None-Match", tag), 200)

	// metrics
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/db/tables/events/metrics"), `{"report-type":"scan-report","table-name":"db.events","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`), 204)

	// rename, including collisions
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/db/tables"), createTableBody("other", "")), 200)
	wantErr(t, f.Do(t, "POST", f.P("/tables/rename"), `{"source":{"namespace":["db"],"name":"events"},"destination":{"namespace":["db"],"name":"other"}}`), 409, "AlreadyExistsException", "db.other")
	wantErr(t, f.Do(t, "POST", f.P("/tables/rename"), `{"source":{"namespace":["db"],"name":"ghost"},"destination":{"namespace":["db"],"name":"x"}}`), 404, "NoSuchTableException", "db.ghost")
	wantErr(t, f.Do(t, "POST", f.P("/tables/rename"), `{"source":{"namespace":["db"],"name":"events"},"destination":{"namespace":["nons"],"name":"x"}}`), 404, "NoSuchNamespaceException", "nons")
	mustStatus(t, f.Do(t, "POST", f.P("/tables/rename"), `{"source":{"namespace":["db"],"name":"events"},"destination":{"namespace":["db"],"name":"events2"}}`), 204)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/db/tables/events"), nil), 404)

	// unregister then register the same metadata file
	r = f.Do(t, "POST", f.P("/namespaces/db/tables/events2/unregister"), nil)
	mustStatus(t, r, 200)
	var unreg struct {
		MetadataLocation string `json:"metadata-location"`
	}
	r.JSON(t, &unreg)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/db/tables/events2"), nil), 404)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/db/register"), map[string]any{"name": "events3", "metadata-location": unreg.MetadataLocation}), 200)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/db/register"), map[string]any{"name": "events3", "metadata-location": unreg.MetadataLocation}), 409, "AlreadyExistsException", "events3")
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/db/register"), map[string]any{"name": "events3", "metadata-location": unreg.MetadataLocation, "overwrite": true}), 200)

	// missing metadata file on load
	if err := os.Remove(f.LocalPath(unreg.MetadataLocation)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/db/tables/events3?snapshots=all"), nil, "X-Request-Id", "fresh"), 404, "NotFoundException", "Failed to open input stream for file")

	// drop with purge removes the files; without purge keeps them
	var other struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
	}
	f.Do(t, "GET", f.P("/namespaces/db/tables/other"), nil).JSON(t, &other)
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/db/tables/other?purgeRequested=true"), nil), 204)
	if _, err := os.Stat(f.LocalPath(other.Metadata.Location)); !os.IsNotExist(err) {
		t.Errorf("purge left %s: %v", other.Metadata.Location, err)
	}
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/db/tables/other"), nil), 404, "NoSuchTableException", "db.other")
}

func TestIdempotencyKey(t *testing.T) {
	f := testkit.Start(t)
	key := "01890a5d-ac96-774b-bcce-b302099a8057"
	first := f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["idem"]}`, "Idempotency-Key", key)
	mustStatus(t, first, 200)
	again := f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["idem"]}`, "Idempotency-Key", key)
	mustStatus(t, again, 200)
	if !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("replay differs: %s vs %s", first.Body, again.Body)
	}
	// without the key the duplicate is a conflict
	wantErr(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["idem"]}`), 409, "AlreadyExistsException", "idem")
	// a different key executes again
	wantErr(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["idem"]}`, "Idempotency-Key", "01890a5d-ac96-774b-bcce-b302099a8058"), 409, "AlreadyExistsException", "idem")
	// drop replays its 204
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/idem"), nil, "Idempotency-Key", "01890a5d-ac96-774b-bcce-b302099a8059"), 204)
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/idem"), nil, "Idempotency-Key", "01890a5d-ac96-774b-bcce-b302099a8059"), 204)
}
