package mgmtapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

func init() {
	openapi3filter.RegisterBodyDecoder("application/vnd.apache.arrow.stream", openapi3filter.FileBodyDecoder)
}

// TestQuery: POST /api/v1/query runs SQL as the caller with the SQL
// endpoint's policies and streams NDJSON, CSV or Arrow; errors carry the
// SQLSTATE; the statement's audit event has the request's id.
func TestQuery(t *testing.T) {
	e := newEnv(t)
	f := e.f
	e.ok(t, 200, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"q"}})
	r := e.do(t, e.admin, "POST", "/api/v1/tables/"+f.Warehouse+"/q/people/ingest?format=csv",
		"id,name,region\n1,ann,eu\n2,bob,us\n3,cy,eu\n", "Content-Type", "text/csv")
	wantStatus(t, r, 201)

	// NDJSON with a parameter.
	r = e.do(t, e.admin, "POST", "/api/v1/query", map[string]any{"sql": "SELECT id, name FROM q.people WHERE id >= $1 ORDER BY id", "parameters": []any{2}},
		"X-Request-Id", "req-query-1")
	wantStatus(t, r, 200)
	if got, want := string(r.Body), "{\"id\":2,\"name\":\"bob\"}\n{\"id\":3,\"name\":\"cy\"}\n"; got != want {
		t.Errorf("ndjson %q, want %q", got, want)
	}
	// CSV by Accept, SQL as text.
	r = e.do(t, e.admin, "POST", "/api/v1/query", "SELECT name, region FROM q.people ORDER BY id", "Content-Type", "text/plain", "Accept", "text/csv")
	wantStatus(t, r, 200)
	if got, want := string(r.Body), "\"name\",\"region\"\r\nann,eu\r\nbob,us\r\ncy,eu\r\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
	// Arrow by query parameter.
	r = e.do(t, e.admin, "POST", "/api/v1/query?format=arrow", "SELECT count(*) AS n FROM q.people", "Content-Type", "text/plain")
	wantStatus(t, r, 200)
	rd, err := ipc.NewReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if !rd.Next() || rd.RecordBatch().Column(0).(*array.Int64).Value(0) != 3 {
		t.Errorf("arrow count: %v", rd.Err())
	}
	rd.Release()

	// Errors before the first row, with the SQLSTATE.
	tests := []struct {
		name, sql string
		status    int
		msg       string
	}{
		{"syntax", "SELEC 1", 400, "SQLSTATE 42601"},
		{"missing table", "SELECT * FROM q.nope", 404, "SQLSTATE 42P01"},
		{"table function", "SELECT * FROM read_parquet('/etc/passwd')", 403, "SQLSTATE 42501"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, e.admin, "POST", "/api/v1/query", tt.sql, "Content-Type", "text/plain")
			wantStatus(t, r, tt.status)
			if msg, _, _ := errorOf(t, r); !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q, want %q", msg, tt.msg)
			}
		})
	}
	wantStatus(t, e.do(t, e.admin, "POST", "/api/v1/query", map[string]any{"sql": "SELECT $1::int"}), 400)
	wantStatus(t, e.do(t, "", "POST", "/api/v1/query", "SELECT 1", "Content-Type", "text/plain"), 401)

	// A principal without SELECT is refused with the missing privilege; a
	// filtered one sees only its rows and columns.
	analyst := f.PrincipalToken(t, "analyst")
	r = e.do(t, analyst, "POST", "/api/v1/query", "SELECT * FROM q.people", "Content-Type", "text/plain")
	wantStatus(t, r, 403)
	if msg, _, _ := errorOf(t, r); !strings.Contains(msg, `principal "analyst" lacks SELECT on table "q.people"`) {
		t.Errorf("denial %q", msg)
	}
	ctx := context.Background()
	if _, err := f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("analyst"), Privilege: authz.Select,
		On:     authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"q"}, Name: "people"}),
		Filter: &authz.DataFilter{RowFilter: "region = 'eu'", ExcludeColumns: []string{"name"}}}); err != nil {
		t.Fatal(err)
	}
	r = e.do(t, analyst, "POST", "/api/v1/query", "SELECT * FROM q.people ORDER BY id", "Content-Type", "text/plain")
	wantStatus(t, r, 200)
	if got, want := string(r.Body), "{\"id\":1,\"region\":\"eu\"}\n{\"id\":3,\"region\":\"eu\"}\n"; got != want {
		t.Errorf("filtered rows %q, want %q", got, want)
	}

	// The row count trailer.
	req, _ := http.NewRequest("POST", f.URL+"/api/v1/query?format=csv", strings.NewReader("SELECT id FROM q.people"))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := resp.Trailer.Get("Floe-Rows"); n != "3" {
		t.Errorf("Floe-Rows trailer %q", n)
	}

	// The statement's audit event carries the HTTP request id.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs, err := f.App.Store().AuditRecords(ctx, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range rs {
			var d map[string]any
			_ = json.Unmarshal(rec.Detail, &d)
			if rec.Action == "sql.query" && rec.RequestID == "req-query-1" && rec.Principal == "admin" && d["rows"] == float64(2) {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sql.query audit event with the request's id")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
