package deltasharing_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestEndToEnd serves a partitioned table after two appends: lists, version,
// metadata and a query whose pre-signed URLs read the Parquet files.
func TestEndToEnd(t *testing.T) {
	e := newEnv(t)
	tbl := e.createOrders(t, "orders", nil)
	tbl = e.appendOrders(t, tbl, 0, 30)
	e.appendOrders(t, tbl, 30, 60)
	e.share("retail", "orders_v", "orders", true, "")

	r := e.do(t, tokenAlice, "GET", "/shares", nil)
	must(t, r, 200)
	if !strings.Contains(string(r.body), `"name":"sales"`) {
		t.Fatalf("shares: %s", r.body)
	}
	must(t, e.do(t, tokenAlice, "GET", "/shares/sales", nil), 200)
	r = e.do(t, tokenAlice, "GET", "/shares/sales/schemas", nil)
	must(t, r, 200)
	if !strings.Contains(string(r.body), `{"name":"retail","share":"sales"}`) {
		t.Fatalf("schemas: %s", r.body)
	}
	for _, p := range []string{"/shares/sales/schemas/retail/tables", "/shares/sales/all-tables"} {
		r = e.do(t, tokenAlice, "GET", p, nil)
		must(t, r, 200)
		if !strings.Contains(string(r.body), `"name":"orders_v","schema":"retail","share":"sales"`) || strings.Contains(string(r.body), realNS) {
			t.Fatalf("%s: %s", p, r.body)
		}
	}
	// Version: the snapshot's sequence number (two appends: 2).
	r = e.do(t, tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders_v/version", nil)
	must(t, r, 200)
	if v := r.header.Get("Delta-Table-Version"); v != "2" {
		t.Fatalf("version %q, want 2", v)
	}
	r = e.do(t, tokenAlice, "HEAD", "/shares/sales/schemas/retail/tables/orders_v", nil)
	if r.status != 200 || r.header.Get("Delta-Table-Version") != "2" {
		t.Fatalf("legacy HEAD: %d %v", r.status, r.header)
	}
	// Metadata.
	r = e.do(t, tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders_v/metadata", nil)
	must(t, r, 200)
	lines := r.lines(t)
	if len(lines) != 2 || r.header.Get("Delta-Table-Version") != "2" {
		t.Fatalf("metadata: %s", r.body)
	}
	var md struct {
		ID               string
		Format           struct{ Provider string }
		SchemaString     string
		PartitionColumns []string
	}
	if err := json.Unmarshal(lines[1]["metaData"], &md); err != nil {
		t.Fatal(err)
	}
	wantSchema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"region","type":"string","nullable":true,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"at","type":"timestamp","nullable":true,"metadata":{}}]}`
	if md.ID != "obj-orders_v" || md.Format.Provider != "parquet" || md.SchemaString != wantSchema ||
		!slices.Equal(md.PartitionColumns, []string{"region"}) {
		t.Fatalf("metaData %+v", md)
	}

	// Query: every file, each readable through its URL.
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders_v", map[string]any{})
	must(t, r, 200)
	if r.header.Get("Delta-Table-Version") != "2" {
		t.Fatalf("query version %q", r.header.Get("Delta-Table-Version"))
	}
	if len(files) != 6 { // 2 appends x 3 regions
		t.Fatalf("%d files, want 6", len(files))
	}
	var rows int64
	for _, f := range files {
		u, err := url.Parse(f.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(f.URL, e.f.App.S3URL()+"/") || u.Query().Get("X-Amz-Signature") == "" {
			t.Fatalf("url %s not a presigned URL of %s", f.URL, e.f.App.S3URL())
		}
		if f.PartitionValues["region"] == nil || !slices.Contains(regions, *f.PartitionValues["region"]) {
			t.Fatalf("partitionValues %v", f.PartitionValues)
		}
		var st struct {
			NumRecords int64
			MinValues  map[string]any
			MaxValues  map[string]any
			NullCount  map[string]any
		}
		if err := json.Unmarshal([]byte(f.Stats), &st); err != nil {
			t.Fatal(err)
		}
		if st.NumRecords != 10 || st.MinValues["id"] == nil || st.MaxValues["region"] != *f.PartitionValues["region"] {
			t.Fatalf("stats %s", f.Stats)
		}
		status, body := get(t, f.URL)
		if status != 200 || f.Size != int64(len(body)) {
			t.Fatalf("GET %s: %d, %d bytes (size %d)", f.URL, status, len(body), f.Size)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rows += pf.NumRows()
	}
	if rows != 60 {
		t.Fatalf("%d rows, want 60", rows)
	}
	// Time travel to version 1: the first append's files only.
	r, _, files = e.query(t, tokenAlice, "retail/tables/orders_v", map[string]any{"version": 1})
	must(t, r, 200)
	if len(files) != 3 || r.header.Get("Delta-Table-Version") != "1" {
		t.Fatalf("version 1: %d files, header %q", len(files), r.header.Get("Delta-Table-Version"))
	}
}

// TestTamperedURL: a URL whose key or expiry was changed, or a key of
// another table, is refused by the S3 endpoint.
func TestTamperedURL(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 9)
	other := e.appendOrders(t, e.createOrders(t, "secret", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 200)
	if len(files) < 2 {
		t.Fatalf("%d files", len(files))
	}
	if s, _ := get(t, files[0].URL); s != 200 {
		t.Fatalf("untampered URL: %d", s)
	}
	u0, _ := url.Parse(files[0].URL)
	u1, _ := url.Parse(files[1].URL)
	// Another file's key under the first file's signature.
	swapped := *u0
	swapped.Path, swapped.RawPath = u1.Path, u1.RawPath
	// The expiry extended.
	longer := *u0
	q := longer.Query()
	q.Set("X-Amz-Expires", "604800")
	longer.RawQuery = q.Encode()
	// A file of an unshared table, same bucket.
	snap := other.CurrentSnapshot()
	mf, err := snap.Manifests(e.lk.FS())
	if err != nil {
		t.Fatal(err)
	}
	var secretPath string
	for ent, err := range mf[0].Entries(e.lk.FS(), true) {
		if err != nil {
			t.Fatal(err)
		}
		secretPath = strings.TrimPrefix(ent.DataFile().FilePath(), "s3://")
		break
	}
	foreign := *u0
	foreign.Path, foreign.RawPath = "/"+secretPath, ""
	for name, u := range map[string]string{"other key": swapped.String(), "longer expiry": longer.String(), "unshared table": foreign.String()} {
		if s, body := get(t, u); s != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403: %s", name, s, body)
		}
	}
}

// TestPartitionFilter: a file outside the share's partition filter is
// never listed (nor counted in the metadata).
func TestPartitionFilter(t *testing.T) {
	e := newEnv(t)
	tbl := e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 30)
	e.appendOrders(t, tbl, 30, 60)
	e.share("retail", "eu_orders", "orders", true, "region = 'eu'")
	e.share("retail", "not_eu", "orders", true, "region IN ('us', 'apac') AND NOT region = 'eu'")
	e.share("retail", "nothing", "orders", true, "no_such_column = 1")
	for name, want := range map[string][]string{"eu_orders": {"eu"}, "not_eu": {"us", "apac"}, "nothing": nil} {
		for _, body := range []any{nil, map[string]any{"version": 1}, map[string]any{"jsonPredicateHints": `{"op":"equal","children":[{"op":"column","name":"region","valueType":"string"},{"op":"literal","value":"us","valueType":"string"}]}`}} {
			r, md, files := e.query(t, tokenAlice, "retail/tables/"+name, body)
			must(t, r, 200)
			for _, f := range files {
				if !slices.Contains(want, *f.PartitionValues["region"]) {
					t.Fatalf("%s listed a file of region %s", name, *f.PartitionValues["region"])
				}
			}
			if body == nil && len(files) != 2*len(want) {
				t.Fatalf("%s: %d files, want %d", name, len(files), 2*len(want))
			}
			if _, ok := md["numFiles"]; ok {
				t.Fatalf("%s: metaData tells numFiles of the unfiltered table: %v", name, md)
			}
		}
	}
}

// TestHistoryOff: a table shared without history refuses version and
// timestamp, in query and metadata.
func TestHistoryOff(t *testing.T) {
	e := newEnv(t)
	tbl := e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.appendOrders(t, tbl, 3, 6)
	e.share("retail", "orders", "orders", false, "")
	for _, body := range []any{map[string]any{"version": 1}, map[string]any{"version": 2}, map[string]any{"timestamp": "2020-01-01T00:00:00Z"}} {
		r, _, _ := e.query(t, tokenAlice, "retail/tables/orders", body)
		must(t, r, 400)
		if code, msg := r.errorCode(t); code != "INVALID_PARAMETER_VALUE" || !strings.Contains(msg, "without history") {
			t.Fatalf("%v: %s %s", body, code, msg)
		}
	}
	for _, q := range []string{"?version=1", "?timestamp=2020-01-01T00:00:00Z"} {
		must(t, e.do(t, tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders/metadata"+q, nil), 400)
	}
	must(t, e.do(t, tokenAlice, "GET", "/shares/sales/schemas/retail/tables/orders/version?startingTimestamp=2020-01-01T00:00:00Z", nil), 400)
	// A page token naming an old version is refused the same way.
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders", map[string]any{"maxFiles": 1})
	must(t, r, 200)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	// The current version stays readable.
	r, _, files = e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 200)
	if len(files) != 6 {
		t.Fatalf("%d files", len(files))
	}
}

// TestRowDeletes: a version with position deletes is refused with a
// clear error; the version before the delete is still served.
func TestRowDeletes(t *testing.T) {
	e := newEnv(t)
	tbl := e.createOrders(t, "orders", map[string]string{"write.delete.mode": "merge-on-read", "format-version": "2"})
	tbl = e.appendOrders(t, tbl, 0, 30)
	e.share("retail", "orders", "orders", true, "")
	deleteRows(t, tbl, "id", 4)
	r, _, _ := e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 400)
	if code, msg := r.errorCode(t); code != "UNSUPPORTED_OPERATION" || !strings.Contains(msg, "row-level deletes") || !strings.Contains(msg, "compact") {
		t.Fatalf("%s: %s", code, msg)
	}
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders", map[string]any{"version": 1})
	must(t, r, 200)
	if len(files) != 3 {
		t.Fatalf("%d files", len(files))
	}
}

// TestRevokedBeforeIssue: a token revoked after it authenticated gets no
// URL.
func TestRevokedBeforeIssue(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	e.res.revoked.Store(true)
	r, _, _ := e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 401)
	if strings.Contains(string(r.body), "X-Amz") {
		t.Fatalf("a revoked recipient got URLs: %s", r.body)
	}
}

// TestNamesNeverLeak: unknown and unshared names are 404 without naming
// anything real, a table dropped behind the share too, and bob (no grant)
// sees nothing of alice's share.
func TestNamesNeverLeak(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.appendOrders(t, e.createOrders(t, "unshared", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	e.share("retail", "gone", "dropped_table", true, "")
	for _, c := range []struct{ token, method, path string }{
		{tokenAlice, "GET", "/shares/nope"},
		{tokenAlice, "GET", "/shares/nope/schemas"},
		{tokenAlice, "GET", "/shares/sales/schemas/nope/tables"},
		{tokenAlice, "POST", "/shares/sales/schemas/retail/tables/unshared/query"},
		{tokenAlice, "POST", "/shares/sales/schemas/crm/tables/unshared/query"},
		{tokenAlice, "POST", "/shares/sales/schemas/retail/tables/gone/query"},
		{tokenAlice, "GET", "/shares/sales/schemas/retail/tables/gone/metadata"},
		{tokenBob, "GET", "/shares/sales"},
		{tokenBob, "GET", "/shares/sales/all-tables"},
		{tokenBob, "POST", "/shares/sales/schemas/retail/tables/orders/query"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{}
		}
		r := e.do(t, c.token, c.method, c.path, body)
		if r.status != 404 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		if code, msg := r.errorCode(t); code != "RESOURCE_DOES_NOT_EXIST" || strings.Contains(msg, "dropped_table") ||
			!strings.Contains(c.path, realNS) && strings.Contains(msg, realNS) {
			t.Fatalf("%s %s: %s %s", c.method, c.path, code, msg)
		}
	}
	r := e.do(t, tokenBob, "GET", "/shares", nil)
	must(t, r, 200)
	if strings.Contains(string(r.body), "sales") {
		t.Fatalf("bob sees %s", r.body)
	}
}

// TestQueryPagesAndHints: maxFiles pages through every file exactly once;
// hints and limitHint skip files; too many files without maxFiles is a
// clear 400.
func TestQueryPagesAndHints(t *testing.T) {
	e := newEnv(t)
	tbl := e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 30)
	e.appendOrders(t, tbl, 30, 60)
	e.share("retail", "orders", "orders", true, "")
	seen := map[string]bool{}
	tok := ""
	for page := 0; ; page++ {
		body := map[string]any{"maxFiles": 4}
		if tok != "" {
			body["pageToken"] = tok
		}
		r := e.do(t, tokenAlice, "POST", "/shares/sales/schemas/retail/tables/orders/query", body)
		must(t, r, 200)
		lines := r.lines(t)
		last := lines[len(lines)-1]
		raw, ok := last["endStreamAction"]
		if !ok {
			t.Fatalf("paged query without endStreamAction: %s", r.body)
		}
		for _, l := range lines[2 : len(lines)-1] {
			var f fileLine
			_ = json.Unmarshal(l["file"], &f)
			if seen[f.ID] {
				t.Fatalf("file %s twice", f.ID)
			}
			seen[f.ID] = true
		}
		var ea struct{ NextPageToken string }
		_ = json.Unmarshal(raw, &ea)
		if ea.NextPageToken == "" {
			break
		}
		tok = ea.NextPageToken
		if page > 5 {
			t.Fatal("too many pages")
		}
	}
	if len(seen) != 6 {
		t.Fatalf("%d files over the pages, want 6", len(seen))
	}
	// A token with other filters is refused.
	r := e.do(t, tokenAlice, "POST", "/shares/sales/schemas/retail/tables/orders/query",
		map[string]any{"maxFiles": 4, "pageToken": tok, "predicateHints": []string{"region = 'eu'"}})
	must(t, r, 400)

	for name, c := range map[string]struct {
		body any
		want int
	}{
		"sql hint":       {map[string]any{"predicateHints": []string{"region = 'eu'"}}, 2},
		"json hint":      {map[string]any{"jsonPredicateHints": `{"op":"or","children":[{"op":"equal","children":[{"op":"column","name":"region","valueType":"string"},{"op":"literal","value":"eu","valueType":"string"}]},{"op":"equal","children":[{"op":"column","name":"region","valueType":"string"},{"op":"literal","value":"us","valueType":"string"}]}]}`}, 4},
		"stats hint":     {map[string]any{"jsonPredicateHints": `{"op":"greaterThan","children":[{"op":"column","name":"id","valueType":"long"},{"op":"literal","value":"40","valueType":"long"}]}`}, 3},
		"bad hint":       {map[string]any{"predicateHints": []string{"region = = 'eu'"}}, 6},
		"limit":          {map[string]any{"limitHint": 1}, 1},
		"limit 0":        {map[string]any{"limitHint": 0}, 0},
		"unparsed json":  {map[string]any{"jsonPredicateHints": `{"op":"frobnicate"}`}, 6},
		"literal column": {map[string]any{"jsonPredicateHints": `{"op":"lessThan","children":[{"op":"literal","value":"20","valueType":"int"},{"op":"column","name":"id","valueType":"int"}]}`}, 6},
	} {
		r, _, files := e.query(t, tokenAlice, "retail/tables/orders", c.body)
		must(t, r, 200)
		if len(files) != c.want {
			t.Errorf("%s: %d files, want %d", name, len(files), c.want)
		}
	}
}

// TestTooManyFiles: past the files limit a query without maxFiles is a
// 400 saying how to page.
func TestTooManyFiles(t *testing.T) {
	e := newEnv(t)
	tbl := e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 30)
	e.appendOrders(t, tbl, 30, 60)
	e.share("retail", "orders", "orders", true, "")
	h := newHandlerOn(t, e, 5)
	r := h.query(t, tokenAlice, "/shares/sales/schemas/retail/tables/orders/query", `{}`)
	if r.status != 400 || !strings.Contains(string(r.body), "maxFiles") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = h.query(t, tokenAlice, "/shares/sales/schemas/retail/tables/orders/query", `{"maxFiles":100}`)
	if r.status != 200 || strings.Count(string(r.body), `{"file":`) != 5 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

var _ = strconv.Itoa

// TestURLLifetime: sharing_url_ttl sets each URL's X-Amz-Expires and
// expirationTimestamp; without a resolver nothing is mounted.
func TestURLLifetime(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SharingURLTTL = 2 * time.Minute })
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	before := time.Now()
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 200)
	for _, f := range files {
		u, _ := url.Parse(f.URL)
		if u.Query().Get("X-Amz-Expires") != "120" {
			t.Fatalf("X-Amz-Expires %q", u.Query().Get("X-Amz-Expires"))
		}
		exp := time.UnixMilli(f.ExpirationTimestamp)
		if exp.Before(before.Add(119*time.Second)) || exp.After(time.Now().Add(121*time.Second)) {
			t.Fatalf("expirationTimestamp %v, want about now+2m", exp)
		}
	}
	plain := testkit.Start(t)
	res, err := http.Get(plain.URL + "/delta-sharing/shares")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 {
		t.Fatal("the Delta Sharing server is mounted without a resolver")
	}
}

// TestRevocationReachesURLs: URLs handed out die within a second of the
// recipient's token id being revoked in the store (what the sharing
// service does on revocation): the credential they are signed with
// carries the token id, and Floe's S3 endpoint checks revocations on
// every request.
func TestRevocationReachesURLs(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	r, _, files := e.query(t, tokenAlice, "retail/tables/orders", nil)
	must(t, r, 200)
	if s, _ := get(t, files[0].URL); s != 200 {
		t.Fatalf("before revocation: %d", s)
	}
	if err := e.f.App.Store().RevokeToken(t.Context(), "tok-alice-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for {
		s, _ := get(t, files[0].URL)
		if s == http.StatusForbidden {
			break
		}
		if time.Since(revoked) > time.Second {
			t.Fatalf("URL still served %v after revocation: %d", time.Since(revoked), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEmptyTable: a table without a snapshot is version 0 with no files.
func TestEmptyTable(t *testing.T) {
	e := newEnv(t)
	e.createOrders(t, "empty", nil)
	e.share("retail", "empty", "empty", false, "")
	r, md, files := e.query(t, tokenAlice, "retail/tables/empty", nil)
	must(t, r, 200)
	if r.header.Get("Delta-Table-Version") != "0" || len(files) != 0 || fmt.Sprint(md["partitionColumns"]) != "[region]" {
		t.Fatalf("version %q, %d files, metaData %v", r.header.Get("Delta-Table-Version"), len(files), md)
	}
	r = e.do(t, tokenAlice, "GET", "/shares/sales/schemas/retail/tables/empty/version", nil)
	if r.status != 200 || r.header.Get("Delta-Table-Version") != "0" {
		t.Fatalf("%d %v", r.status, r.header)
	}
}

// TestConcurrentQueries: queries of one table at once (sharing the listing
// cache) all answer every file.
func TestConcurrentQueries(t *testing.T) {
	e := newEnv(t)
	tbl := e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 30)
	e.appendOrders(t, tbl, 30, 60)
	e.share("retail", "orders", "orders", true, "")
	e.share("retail", "eu", "orders", true, "region = 'eu'")
	errs := make(chan string, 40)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				name, want := "orders", 6
				if (g+i)%2 == 0 {
					name, want = "eu", 2
				}
				req, _ := http.NewRequest("POST", e.base+"/shares/sales/schemas/retail/tables/"+name+"/query", strings.NewReader(`{}`))
				req.Header.Set("Authorization", "Bearer "+tokenAlice)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if n := strings.Count(string(b), `{"file":`); res.StatusCode != 200 || n != want {
					errs <- fmt.Sprintf("%s: %d, %d files", name, res.StatusCode, n)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestRenamedColumns: clients read Parquet columns by name, so a file
// written before a column was renamed (or dropped and added again under
// its name) would be read wrong; such a version is refused, and one whose
// files were all written after the change is served.
func TestRenamedColumns(t *testing.T) {
	e := newEnv(t)
	change := func(tbl *table.Table, f func(u *table.UpdateSchema)) *table.Table {
		t.Helper()
		tx := tbl.NewTransaction()
		u := tx.UpdateSchema(true, false)
		f(u)
		if err := u.Commit(); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	renamed := e.appendOrders(t, e.createOrders(t, "renamed", nil), 0, 3)
	change(renamed, func(u *table.UpdateSchema) { u.RenameColumn([]string{"amount"}, "total") })
	readded := e.appendOrders(t, e.createOrders(t, "readded", nil), 0, 3)
	readded = change(readded, func(u *table.UpdateSchema) { u.DeleteColumn([]string{"amount"}) })
	change(readded, func(u *table.UpdateSchema) {
		u.AddColumn([]string{"amount"}, iceberg.PrimitiveTypes.Float64, "", false, nil)
	})
	fresh := change(e.createOrders(t, "fresh", nil), func(u *table.UpdateSchema) { u.RenameColumn([]string{"amount"}, "total") })
	e.appendOrders(t, fresh, 0, 3)
	for _, n := range []string{"renamed", "readded", "fresh"} {
		e.share("retail", n, n, true, "")
	}
	for _, n := range []string{"renamed", "readded"} {
		r, _, _ := e.query(t, tokenAlice, "retail/tables/"+n, nil)
		must(t, r, 400)
		if code, msg := r.errorCode(t); code != "UNSUPPORTED_OPERATION" || !strings.Contains(msg, "amount") || !strings.Contains(msg, "rewrit") {
			t.Fatalf("%s: %s %s", n, code, msg)
		}
	}
	r, _, files := e.query(t, tokenAlice, "retail/tables/fresh", nil)
	must(t, r, 200)
	if len(files) != 3 {
		t.Fatalf("%d files", len(files))
	}
}

// TestURLsKeepTheAllowlist: the URLs handed to a recipient with a network
// allowlist work only from it: Floe's S3 endpoint refuses them from any
// other address (here, loopback outside 10.0.0.0/8), as it refuses the
// recipient's credentials.
func TestURLsKeepTheAllowlist(t *testing.T) {
	e := newEnv(t)
	e.appendOrders(t, e.createOrders(t, "orders", nil), 0, 3)
	e.share("retail", "orders", "orders", true, "")
	for _, c := range []struct {
		cidrs []string
		want  int
	}{{nil, http.StatusOK}, {[]string{"127.0.0.0/8"}, http.StatusOK}, {[]string{"10.0.0.0/8"}, http.StatusForbidden}} {
		e.res.mu.Lock()
		r := e.res.tokens[tokenAlice]
		r.AllowedCIDRs = c.cidrs
		e.res.tokens[tokenAlice] = r
		e.res.mu.Unlock()
		resp, _, files := e.query(t, tokenAlice, "retail/tables/orders", nil)
		must(t, resp, 200)
		if len(files) == 0 {
			t.Fatal("no files")
		}
		if s, body := get(t, files[0].URL); s != c.want {
			t.Fatalf("allowlist %v: GET %d %s, want %d", c.cidrs, s, body, c.want)
		}
	}
}
