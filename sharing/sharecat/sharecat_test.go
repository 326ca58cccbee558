package sharecat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/spectest"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/vend"
)

// metadataJSON is a v2 table with three snapshots (the current one 3), a
// tag on snapshot 1, a snapshot log, a metadata log and statistics of
// snapshots 1 and 3.
func metadataJSON(loc string) string {
	snap := func(id int64, parent string, seq int) string {
		return fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,"manifest-list":"%s/metadata/snap-%d.avro","summary":{"operation":"append"},"schema-id":0}`,
			id, parent, seq, 1700000000000+int64(seq), loc, id)
	}
	return `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"` + loc + `",` +
		`"last-sequence-number":3,"last-updated-ms":1700000000003,"last-column-id":2,` +
		`"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"region","required":false,"type":"string"}]}],` +
		`"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,` +
		`"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{},` +
		`"current-snapshot-id":3,` +
		`"snapshots":[` + snap(1, "", 1) + `,` + snap(2, `"parent-snapshot-id":1,`, 2) + `,` + snap(3, `"parent-snapshot-id":2,`, 3) + `],` +
		`"refs":{"main":{"snapshot-id":3,"type":"branch"},"v1":{"snapshot-id":1,"type":"tag"}},` +
		`"snapshot-log":[{"snapshot-id":1,"timestamp-ms":1700000000001},{"snapshot-id":2,"timestamp-ms":1700000000002},{"snapshot-id":3,"timestamp-ms":1700000000003}],` +
		`"metadata-log":[{"metadata-file":"` + loc + `/metadata/00000-a.metadata.json","timestamp-ms":1700000000000}],` +
		`"statistics":[{"snapshot-id":1,"statistics-path":"` + loc + `/metadata/s1.puffin","file-size-in-bytes":10,"file-footer-size-in-bytes":5,"blob-metadata":[]},` +
		`{"snapshot-id":3,"statistics-path":"` + loc + `/metadata/s3.puffin","file-size-in-bytes":10,"file-footer-size-in-bytes":5,"blob-metadata":[]}]}`
}

// fakeTables holds table states by warehouse and real identifier.
type fakeTables struct {
	mu     sync.Mutex
	states map[string]*catalog.TableState
	loads  int
	// fs holds the snapshots' (empty) manifest lists and the derived
	// views written for history-off tables.
	fs *lake.BucketFS
}

func (f *fakeTables) put(t testing.TB, wh string, id catalog.Ident, loc string) {
	t.Helper()
	raw := []byte(metadataJSON(loc))
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatalf("fixture metadata: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	if f.fs != nil {
		for _, sn := range md.Snapshots() {
			var list bytes.Buffer
			seq := sn.SequenceNumber
			if err := iceberg.WriteManifestList(2, &list, sn.SnapshotID, sn.ParentSnapshotID, &seq, 0, nil); err != nil {
				t.Fatal(err)
			}
			if err := f.fs.WriteFile(sn.ManifestList, list.Bytes()); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.states == nil {
		f.states = map[string]*catalog.TableState{}
	}
	f.states[wh+"/"+id.String()] = &catalog.TableState{Location: loc + "/metadata/00003-c.metadata.json", Metadata: md, JSON: buf.Bytes()}
}

func (f *fakeTables) LoadTable(_ context.Context, wh string, id catalog.Ident) (*catalog.TableState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	st, ok := f.states[wh+"/"+id.String()]
	if !ok {
		return nil, floe.E(floe.NotFound, "table", "Table does not exist: %s", id)
	}
	return st, nil
}

// fakeMinter mints numbered credentials and remembers the sessions.
type fakeMinter struct {
	mu       sync.Mutex
	sessions []vend.Session
}

func (m *fakeMinter) Mint(_ context.Context, s vend.Session, ttl time.Duration) (vend.Credentials, vend.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.sessions) + 1
	s.ID, s.AccessKeyID, s.Expires = fmt.Sprintf("cred-%d", n), fmt.Sprintf("FLOEKEY%d", n), time.Now().Add(max(ttl, vend.MinTTL))
	m.sessions = append(m.sessions, s)
	return vend.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: "sk", SessionToken: "session", Expires: s.Expires}, s, nil
}

func (m *fakeMinter) minted() []vend.Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]vend.Session(nil), m.sessions...)
}

// fixture is a Handler over a fake resolver with two shares:
//
//   - "sales" granted to alice: "emea.orders" (the real hr.payroll, history
//     off), "emea.customers" (real crm.accounts, history on),
//     "apac.filtered" (real crm.regions, partition filter), the view
//     "emea.v" and "emea.gone" (real hr.dropped, no longer in the catalog);
//   - "ops" granted to bob only: "daily.metrics" (the real ops.metrics).
//
// Also a table the catalog has that is shared with no one: crm.hidden.
type fixture struct {
	h      *Handler
	res    *fakeResolver
	tables *fakeTables
	minter *fakeMinter
	events *eventLog
}

// realNames are the names of real tables and namespaces behind the
// aliases, which no response may contain.
var realNames = []string{"dropped", "payroll", "accounts", "regions", "hidden", `"hr"`, "hr.", "hr/", `"crm"`, "crm.", "crm/", "floe-wh"}

type eventLog struct {
	mu sync.Mutex
	es []audit.Event
}

func (l *eventLog) record(_ context.Context, e audit.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.es = append(l.es, e)
}

func (l *eventLog) all() []audit.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]audit.Event(nil), l.es...)
}

func newFixture(t testing.TB, mod ...func(*Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{"floe-wh": filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	fsys := lake.NewBucketFS(objs)
	f := &fixture{res: newFakeResolver(), tables: &fakeTables{fs: fsys}, minter: &fakeMinter{}, events: &eventLog{}}
	f.res.recipient("alice", "alice-token", time.Time{}, "sales")
	f.res.recipient("bob", "bob-token", time.Time{}, "ops")
	f.res.recipient("carol", "carol-token", time.Now().Add(-time.Minute), "sales")
	f.res.recipient("dave", "dave-token", time.Time{}, "sales")
	f.res.revoke("dave-token")
	f.res.recipient("erin", "erin-token", time.Time{}) // granted nothing
	add := func(share, schema, name, ns, real string, history bool, filter string, view bool) {
		id := catalog.Ident{Namespace: catalog.Namespace{ns}, Name: real}
		f.res.add(sharing.Table{ID: "oid-" + name, Share: share, Schema: schema, Name: name, Warehouse: "floe-wh",
			Ident: id, History: history, PartitionFilter: filter, IsView: view})
		if !view {
			f.tables.put(t, "floe-wh", id, "s3://floe-wh/"+ns+"/"+real+"-0a1b")
		}
	}
	add("sales", "apac", "filtered", "crm", "regions", true, "region = 'apac'", false)
	add("sales", "emea", "customers", "crm", "accounts", true, "", false)
	add("sales", "emea", "orders", "hr", "payroll", false, "", false)
	// A view whose identifier is also a table's (as a buggy resolver might
	// hand out): it must not be served as that table.
	add("sales", "emea", "v", "crm", "accounts", true, "", true)
	add("ops", "daily", "metrics", "ops", "metrics", true, "", false)
	// Shared, then dropped from the catalog.
	f.res.add(sharing.Table{ID: "oid-gone", Share: "sales", Schema: "emea", Name: "gone", Warehouse: "floe-wh",
		Ident: catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "dropped"}, History: true})
	f.tables.put(t, "floe-wh", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "hidden"}, "s3://floe-wh/crm/hidden-9z")
	opts := Options{Resolver: f.res, Tables: f.tables, Audit: f.events.record, Views: fsys,
		Vending: &restcat.Vending{Minter: f.minter, Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", PathStyle: true, TTL: time.Hour}}
	for _, m := range mod {
		m(&opts)
	}
	f.h = New(opts)
	return f
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t testing.TB, token, method, path string, body string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.RemoteAddr = "192.0.2.7:5555"
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

// errorOf decodes an ErrorModel response.
func errorOf(t testing.TB, r resp) restcat.ErrorModel {
	t.Helper()
	var e struct {
		Error restcat.ErrorModel `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("not an ErrorModel (status %d): %s", r.status, r.body)
	}
	if e.Error.Code != r.status {
		t.Fatalf("ErrorModel code %d for status %d", e.Error.Code, r.status)
	}
	return e.Error
}

const cat = "/shares/sales/iceberg/v1"

func TestReadEndpoints(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, method, path string
		status             int
		want               string // a substring of the body
	}{
		{"config", "GET", cat + "/config", 200, `"overrides":{"prefix":"sales","warehouse":"sales"}`},
		{"config with warehouse", "GET", cat + "/config?warehouse=sales", 200, `"prefix":"sales"`},
		{"list namespaces", "GET", cat + "/sales/namespaces", 200, `{"namespaces":[["apac"],["emea"]]}`},
		{"children of a schema", "GET", cat + "/sales/namespaces?parent=emea", 200, `{"namespaces":[]}`},
		{"load namespace", "GET", cat + "/sales/namespaces/emea", 200, `{"namespace":["emea"],"properties":{}}`},
		{"namespace exists", "HEAD", cat + "/sales/namespaces/emea", 204, ""},
		{"list tables", "GET", cat + "/sales/namespaces/emea/tables", 200,
			`{"identifiers":[{"namespace":["emea"],"name":"customers"},{"namespace":["emea"],"name":"gone"},{"namespace":["emea"],"name":"orders"}]}`},
		{"table exists", "HEAD", cat + "/sales/namespaces/emea/tables/orders", 204, ""},
		{"load table", "GET", cat + "/sales/namespaces/emea/tables/customers", 200, `"metadata-location":"s3://floe-wh/crm/accounts-0a1b/metadata/00003-c.metadata.json"`},
		{"load table refs", "GET", cat + "/sales/namespaces/emea/tables/customers?snapshots=refs", 200, `"storage-credentials"`},
		{"credentials", "GET", cat + "/sales/namespaces/emea/tables/customers/credentials", 200, `"prefix":"s3://floe-wh/crm/accounts-0a1b/"`},
		{"list views", "GET", cat + "/sales/namespaces/emea/views", 200, `{"identifiers":[]}`},
		{"metrics", "POST", cat + "/sales/namespaces/emea/tables/orders/metrics", 204, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, "alice-token", tc.method, tc.path, map[bool]string{true: `{"report-type":"scan-report"}`}[tc.method == "POST"])
			if r.status != tc.status || !bytes.Contains(r.body, []byte(tc.want)) {
				t.Fatalf("%s %s: %d %s; want %d with %s", tc.method, tc.path, r.status, r.body, tc.status, tc.want)
			}
			specValid(t, tc.method, tc.path, r)
		})
	}
	// The endpoints of /v1/config are the read operations only.
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	if err := json.Unmarshal(f.do(t, "alice-token", "GET", cat+"/config", "").body, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, e := range cfg.Endpoints {
		if !strings.HasPrefix(e, "GET ") && !strings.HasPrefix(e, "HEAD ") && !strings.HasSuffix(e, "/metrics") {
			t.Errorf("config advertises a write: %s", e)
		}
	}
	if len(cfg.Endpoints) < 8 {
		t.Errorf("config advertises %d endpoints: %v", len(cfg.Endpoints), cfg.Endpoints)
	}
}

// loadResult is a LoadTableResult.
type loadResult struct {
	MetadataLocation   string            `json:"metadata-location"`
	Metadata           json.RawMessage   `json:"metadata"`
	Config             map[string]string `json:"config"`
	StorageCredentials []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

func (f *fixture) load(t testing.TB, token, path string) loadResult {
	t.Helper()
	r := f.do(t, token, "GET", path, "")
	if r.status != 200 {
		t.Fatalf("load %s: %d %s", path, r.status, r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("a response with credentials is cacheable: %q", r.header.Get("Cache-Control"))
	}
	var lr loadResult
	if err := json.Unmarshal(r.body, &lr); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return lr
}

// TestHistoryOff: a table shared without history is served with its
// current snapshot only, and the result is valid metadata.
func TestHistoryOff(t *testing.T) {
	f := newFixture(t)
	for range 2 { // the second from the cache
		lr := f.load(t, "alice-token", cat+"/sales/namespaces/emea/tables/orders")
		md, err := table.ParseMetadataBytes(lr.Metadata)
		if err != nil {
			t.Fatalf("history-off metadata does not parse: %v\n%s", err, lr.Metadata)
		}
		if n := len(md.Snapshots()); n != 1 || md.CurrentSnapshot() == nil || md.CurrentSnapshot().SnapshotID != 3 {
			t.Fatalf("snapshots %d, current %v", n, md.CurrentSnapshot())
		}
		refs := 0
		for name, ref := range md.Refs() {
			refs++
			if name != "main" || ref.SnapshotID != 3 {
				t.Errorf("ref %s -> %d kept", name, ref.SnapshotID)
			}
		}
		if refs != 1 {
			t.Errorf("%d refs", refs)
		}
		var raw struct {
			SnapshotLog []map[string]any `json:"snapshot-log"`
			MetadataLog []map[string]any `json:"metadata-log"`
			Statistics  []map[string]any `json:"statistics"`
		}
		if err := json.Unmarshal(lr.Metadata, &raw); err != nil {
			t.Fatal(err)
		}
		// Statistics files go too: the recipient's credential could not
		// read them (they are not files of the derived snapshot).
		if len(raw.SnapshotLog) != 1 || len(raw.MetadataLog) != 0 || len(raw.Statistics) != 0 {
			t.Fatalf("history left: %+v", raw)
		}
		if !strings.Contains(lr.MetadataLocation, "/metadata/floe-share-3-") || !strings.Contains(string(lr.Metadata), "/metadata/floe-share-3-") {
			t.Fatalf("not a derived snapshot: %s %s", lr.MetadataLocation, lr.Metadata)
		}
	}
	// With history, all three snapshots.
	lr := f.load(t, "alice-token", cat+"/sales/namespaces/emea/tables/customers")
	md, err := table.ParseMetadataBytes(lr.Metadata)
	if err != nil || len(md.Snapshots()) != 3 {
		t.Fatalf("history-on table: %v, %v", err, md)
	}
}

// TestVendedCredential: loadTable vends a read-only credential for the
// table (read-listed: the table is shared without history, so its derived
// snapshot's files), for the recipient's token, named by the alias, audited
// with recipient, share, table and token id; a second load within a minute
// reuses it; the credentials endpoint mints a new one.
func TestVendedCredential(t *testing.T) {
	f := newFixture(t)
	path := cat + "/sales/namespaces/emea/tables/orders"
	lr := f.load(t, "alice-token", path)
	if len(lr.StorageCredentials) != 1 || lr.StorageCredentials[0].Prefix != "s3://floe-wh/hr/payroll-0a1b/" {
		t.Fatalf("storage credentials %+v", lr.StorageCredentials)
	}
	for _, cfg := range []map[string]string{lr.Config, lr.StorageCredentials[0].Config} {
		if cfg["s3.access-key-id"] != "FLOEKEY1" || cfg["s3.endpoint"] != "http://127.0.0.1:9000" || cfg["s3.path-style-access"] != "true" {
			t.Fatalf("config %v", cfg)
		}
	}
	if got := lr.Config["client.refresh-credentials-endpoint"]; got != "v1/sales/namespaces/emea/tables/orders/credentials" {
		t.Fatalf("refresh endpoint %q", got)
	}
	ss := f.minter.minted()
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[0]
	// emea.orders is shared without history: its derived snapshot's files
	// only (no listing).
	if s.TokenID != "tid-alice" || s.Principal != "recipient:alice" || s.Table != "sales.emea.orders" ||
		len(s.Grants) != 1 || s.Grants[0].Access != vend.ReadListed || s.Grants[0].Bucket != "floe-wh" ||
		!strings.HasPrefix(s.Grants[0].Prefix, "hr/payroll-0a1b/metadata/floe-share-3-") {
		t.Fatalf("session %+v", s)
	}
	if lr2 := f.load(t, "alice-token", path); lr2.Config["s3.access-key-id"] != "FLOEKEY1" || len(f.minter.minted()) != 1 {
		t.Fatalf("not reused: %v", lr2.Config["s3.access-key-id"])
	}
	r := f.do(t, "alice-token", "GET", path+"/credentials", "")
	if r.status != 200 || !bytes.Contains(r.body, []byte(`FLOEKEY2`)) {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	var vends, loads int
	for _, e := range f.events.all() {
		switch e.Action {
		case "storage.credentials.vend":
			vends++
			d := e.Detail
			if e.Principal != "recipient:alice" || e.Resource != "table:sales.emea.orders" || d["recipient"] != "alice" ||
				d["share"] != "sales" || d["table"] != "sales.emea.orders" || d["token_id"] != "tid-alice" || d["access"] != "read-listed" {
				t.Errorf("vend event %+v", e)
			}
		case "share.catalog.loadTable":
			loads++
			if e.Principal != "recipient:alice" || e.Detail["token_id"] != "tid-alice" || e.Resource != "share:sales/emea.orders" ||
				e.Outcome != audit.OutcomeSuccess || e.Detail["credential_id"] == nil {
				t.Errorf("request event %+v", e)
			}
		}
	}
	if vends != 2 || loads != 2 {
		t.Fatalf("%d vend events, %d loadTable events", vends, loads)
	}
	for _, e := range f.events.all() {
		if b, _ := json.Marshal(e); bytes.Contains(b, []byte("alice-token")) {
			t.Fatalf("an audit event holds the token: %s", b)
		}
	}
}

// TestVendingUntilTokenExpiry: a credential never outlives the recipient's
// token by more than the minimum credential lifetime.
func TestVendingUntilTokenExpiry(t *testing.T) {
	f := newFixture(t)
	f.res.recipient("frank", "frank-token", time.Now().Add(20*time.Minute), "sales")
	f.load(t, "frank-token", cat+"/sales/namespaces/emea/tables/orders")
	ss := f.minter.minted()
	if len(ss) != 1 || time.Until(ss[0].Expires) > 21*time.Minute {
		t.Fatalf("credential expires %v", ss[0].Expires)
	}
}

// TestAdversarial: every way a recipient might reach what is not shared to
// it, or change anything, is refused with the right ErrorModel, never a
// 5xx, and no response names a real table or namespace.
func TestAdversarial(t *testing.T) {
	f := newFixture(t)
	tbl := cat + "/sales/namespaces/emea/tables/orders"
	const (
		noTable = "NoSuchTableException"
		noNS    = "NoSuchNamespaceException"
		noWH    = "NoSuchWarehouseException"
		forbid  = "ForbiddenException"
		unauth  = "NotAuthorizedException"
		bad     = "BadRequestException"
	)
	tests := []struct {
		name, token, method, path, body string
		status                          int
		typ                             string
	}{
		// Names.
		{"unshared table by real name", "alice-token", "GET", cat + "/sales/namespaces/crm/tables/hidden", "", 404, noTable},
		{"shared table by real name", "alice-token", "GET", cat + "/sales/namespaces/hr/tables/payroll", "", 404, noTable},
		{"real name exists?", "alice-token", "HEAD", cat + "/sales/namespaces/crm/tables/accounts", "", 404, ""},
		{"real namespace", "alice-token", "GET", cat + "/sales/namespaces/hr", "", 404, noNS},
		{"real namespace tables", "alice-token", "GET", cat + "/sales/namespaces/crm/tables", "", 404, noNS},
		{"shared table dropped since", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/gone", "", 404, noTable},
		{"shared table dropped since, credentials", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/gone/credentials", "", 404, noTable},
		{"unknown table", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/nope", "", 404, noTable},
		{"view as a table", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/v", "", 404, noTable},
		{"view", "alice-token", "GET", cat + "/sales/namespaces/emea/views/v", "", 404, "NoSuchViewException"},
		{"alias of another share", "alice-token", "GET", "/shares/ops/iceberg/v1/ops/namespaces/daily/tables/metrics", "", 404, noTable},
		{"alias of another share in this prefix", "alice-token", "GET", cat + "/sales/namespaces/daily/tables/metrics", "", 404, noTable},
		{"another share's config", "alice-token", "GET", "/shares/ops/iceberg/v1/config", "", 404, noWH},
		{"another share's namespaces", "alice-token", "GET", "/shares/ops/iceberg/v1/ops/namespaces", "", 404, noWH},
		{"unknown share", "alice-token", "GET", "/shares/nope/iceberg/v1/nope/namespaces/emea/tables/orders", "", 404, noTable},
		{"prefix of another share", "alice-token", "GET", cat + "/ops/namespaces/daily/tables/metrics", "", 404, noTable},
		{"other warehouse in config", "alice-token", "GET", cat + "/config?warehouse=floe-wh", "", 404, noWH},
		{"nested namespace", "alice-token", "GET", cat + "/sales/namespaces/emea%1Forders/tables/orders", "", 404, noTable},
		{"encoded slash", "alice-token", "GET", cat + "/sales/namespaces/emea%2F..%2Fhr/tables/payroll", "", 404, noTable},
		{"encoded dot-dot table", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/%2E%2E", "", 404, noTable},
		{"encoded NUL", "alice-token", "GET", cat + "/sales/namespaces/emea/tables/orders%00", "", 404, noTable},
		{"dotted namespace", "alice-token", "GET", cat + "/sales/namespaces/crm.hidden", "", 404, noNS},
		{"parent that is a real namespace", "alice-token", "GET", cat + "/sales/namespaces?parent=crm", "", 404, noNS},
		{"credentials of an unshared table", "alice-token", "GET", cat + "/sales/namespaces/crm/tables/hidden/credentials", "", 404, noTable},
		{"sign a request", "alice-token", "POST", tbl + "/sign", `{}`, 403, forbid},
		{"partition filter", "alice-token", "GET", cat + "/sales/namespaces/apac/tables/filtered", "", 403, forbid},
		{"partition filter credentials", "alice-token", "GET", cat + "/sales/namespaces/apac/tables/filtered/credentials", "", 403, forbid},
		{"bad snapshots mode", "alice-token", "GET", tbl + "?snapshots=everything", "", 400, bad},
		{"bad pageSize", "alice-token", "GET", cat + "/sales/namespaces?pageSize=-1", "", 400, bad},
		{"bad pageToken", "alice-token", "GET", cat + "/sales/namespaces?pageToken=bad!token", "", 400, bad},
		// Tokens.
		{"no token", "", "GET", tbl, "", 401, unauth},
		{"unknown token", "guess", "GET", tbl, "", 401, unauth},
		{"token of another share", "bob-token", "GET", tbl, "", 404, noTable},
		{"token of another share, config", "bob-token", "GET", cat + "/config", "", 404, noWH},
		{"token granted nothing", "erin-token", "GET", cat + "/sales/namespaces", "", 404, noWH},
		{"expired token", "carol-token", "GET", tbl, "", 401, unauth},
		{"revoked token", "dave-token", "GET", tbl, "", 401, unauth},
		{"revoked token, write", "dave-token", "DELETE", tbl, "", 401, unauth},
		// Writes of every kind.
		{"create namespace", "alice-token", "POST", cat + "/sales/namespaces", `{"namespace":["x"]}`, 403, forbid},
		{"drop namespace", "alice-token", "DELETE", cat + "/sales/namespaces/emea", "", 403, forbid},
		{"namespace properties", "alice-token", "POST", cat + "/sales/namespaces/emea/properties", `{"updates":{"a":"b"}}`, 403, forbid},
		{"create table", "alice-token", "POST", cat + "/sales/namespaces/emea/tables", `{"name":"t","schema":{}}`, 403, forbid},
		{"register table", "alice-token", "POST", cat + "/sales/namespaces/emea/register", `{"name":"t","metadata-location":"s3://x/y"}`, 403, forbid},
		{"commit table", "alice-token", "POST", tbl, `{"requirements":[],"updates":[]}`, 403, forbid},
		{"drop table", "alice-token", "DELETE", tbl + "?purgeRequested=true", "", 403, forbid},
		{"unregister", "alice-token", "POST", tbl + "/unregister", "", 403, forbid},
		{"rename table", "alice-token", "POST", cat + "/sales/tables/rename", `{}`, 403, forbid},
		{"transaction", "alice-token", "POST", cat + "/sales/transactions/commit", `{"table-changes":[]}`, 403, forbid},
		{"create view", "alice-token", "POST", cat + "/sales/namespaces/emea/views", `{}`, 403, forbid},
		{"replace view", "alice-token", "POST", cat + "/sales/namespaces/emea/views/v", `{}`, 403, forbid},
		{"drop view", "alice-token", "DELETE", cat + "/sales/namespaces/emea/views/v", "", 403, forbid},
		{"rename view", "alice-token", "POST", cat + "/sales/views/rename", `{}`, 403, forbid},
		{"register view", "alice-token", "POST", cat + "/sales/namespaces/emea/register-view", `{}`, 403, forbid},
		{"write to an unshared table", "alice-token", "POST", cat + "/sales/namespaces/crm/tables/hidden", `{}`, 403, forbid},
		{"write to another share", "alice-token", "DELETE", "/shares/ops/iceberg/v1/ops/namespaces/daily/tables/metrics", "", 403, forbid},
		// Routes that do not exist.
		{"dot-dot in the path", "alice-token", "GET", "/shares/sales/iceberg/v1/floe-wh/namespaces/hr/tables/payroll/../../crm", "", 404, "NotFoundException"},
		{"dot-dot out of the share", "alice-token", "GET", "/shares/sales/iceberg/../../ops/iceberg/v1/ops/namespaces/daily/tables/metrics", "", 404, noTable},
		{"no iceberg", "alice-token", "GET", "/shares/sales/v1/config", "", 404, "NotFoundException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.token, tc.method, tc.path, tc.body)
			if r.status == http.StatusTemporaryRedirect && strings.Contains(tc.path, "..") {
				// The mux cleans the path; the client follows to the clean path.
				loc := r.header.Get("Location")
				if strings.Contains(loc, "..") || !strings.HasPrefix(loc, "/shares/") {
					t.Fatalf("redirect to %q", loc)
				}
				r = f.do(t, tc.token, tc.method, loc, tc.body)
			}
			if r.status >= 500 || r.status != tc.status {
				t.Fatalf("%s %s: %d %s; want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.typ)
			}
			if tc.typ != "" && tc.method != "HEAD" {
				if e := errorOf(t, r); e.Type != tc.typ {
					t.Fatalf("%s %s: %s %q; want %s", tc.method, tc.path, e.Type, e.Message, tc.typ)
				}
			}
			if tc.typ == forbid && tc.method != "GET" && !bytes.Contains(r.body, []byte("share catalogs are read-only")) {
				t.Fatalf("write refusal says %s", r.body)
			}
			noRealNames(t, r.body, tc.path)
			specValid(t, tc.method, tc.path, r)
		})
	}
	// No existence oracle: a table not shared and one that does not exist
	// get the same answer, byte for byte, up to the name sent.
	a := f.do(t, "alice-token", "GET", cat+"/sales/namespaces/emea/tables/hidden", "")
	b := f.do(t, "alice-token", "GET", cat+"/sales/namespaces/emea/tables/nosuch", "")
	if a.status != b.status || !bytes.Equal(bytes.ReplaceAll(a.body, []byte("hidden"), []byte("nosuch")), b.body) {
		t.Fatalf("oracle: %d %s vs %d %s", a.status, a.body, b.status, b.body)
	}
	c := f.do(t, "alice-token", "GET", "/shares/ops/iceberg/v1/ops/namespaces/emea/tables/nosuch", "")
	if c.status != b.status || !bytes.Equal(c.body, b.body) {
		t.Fatalf("another share's table: %d %s vs %d %s", c.status, c.body, b.status, b.body)
	}
	if len(f.minter.minted()) != 0 {
		t.Fatalf("a refused request vended %d credentials", len(f.minter.minted()))
	}
}

// specValid checks an answer against the Iceberg REST OpenAPI spec, at the
// path the spec names (the catalog URI's path taken off); paths the spec
// has no operation for are not checked.
func specValid(t testing.TB, method, path string, r resp) {
	t.Helper()
	spec := loadSpec(t)
	rest := strings.TrimPrefix(path, "/shares/")
	i := strings.Index(rest, "/iceberg/")
	if i < 0 {
		return
	}
	uri := rest[i+len("/iceberg"):]
	err := spec.Validate(context.Background(), method, uri, http.Header{}, nil, r.status, r.header, r.body, false)
	if err != nil && !strings.Contains(err.Error(), "no such operation in the spec") {
		t.Fatalf("%s %s: spec violation: %v", method, path, err)
	}
}

var (
	specOnce sync.Once
	specDoc  *spectest.Spec
	specErr  error
)

func loadSpec(t testing.TB) *spectest.Spec {
	t.Helper()
	specOnce.Do(func() { specDoc, specErr = spectest.Load() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	return specDoc
}

// noRealNames fails if body names a real table or namespace that the
// request did not name itself.
func noRealNames(t testing.TB, body []byte, sent string) {
	t.Helper()
	s, _ := url.PathUnescape(sent)
	for _, n := range realNames {
		core := strings.Trim(n, `"./`)
		if bytes.Contains(body, []byte(n)) && !strings.Contains(sent, core) && !strings.Contains(s, core) {
			t.Fatalf("response to %s reveals %q: %s", sent, n, body)
		}
	}
}

// TestNoRealNamesInLoads: the responses to every read of a shared table
// name only aliases and storage locations.
func TestNoRealNamesInLoads(t *testing.T) {
	f := newFixture(t)
	// Table locations are storage paths that may hold the real name: only
	// the location (and the metadata that names it) may.
	for _, p := range []string{cat + "/sales/namespaces", cat + "/sales/namespaces/emea/tables", cat + "/config",
		cat + "/sales/namespaces/emea/tables/orders/credentials", cat + "/sales/namespaces/emea/tables/orders",
		cat + "/sales/namespaces/emea/tables/customers"} {
		r := f.do(t, "alice-token", "GET", p, "")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		body := r.body
		for _, loc := range []string{"s3://floe-wh/hr/payroll-0a1b", "s3://floe-wh/crm/accounts-0a1b"} {
			body = bytes.ReplaceAll(body, []byte(loc), nil)
		}
		noRealNames(t, body, p)
	}
}

// TestRevokedAfterLoad: a token revoked after a load is refused at the
// next request, and the cached credential is not handed out again.
func TestRevokedAfterLoad(t *testing.T) {
	f := newFixture(t)
	path := cat + "/sales/namespaces/emea/tables/orders"
	f.load(t, "alice-token", path)
	f.res.stale = true
	f.res.revoke("alice-token")
	if r := f.do(t, "alice-token", "GET", path, ""); r.status != 401 {
		t.Fatalf("after revocation: %d %s", r.status, r.body)
	}
}

// TestIPAllowlist: a recipient refused by its allowlist gets 403.
func TestIPAllowlist(t *testing.T) {
	f := newFixture(t)
	f.res.denied[mustAddr("192.0.2.7")] = true
	r := f.do(t, "alice-token", "GET", cat+"/config", "")
	if r.status != 403 || errorOf(t, r).Type != "ForbiddenException" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestTokenExchange(t *testing.T) {
	f := newFixture(t)
	post := func(form url.Values) resp {
		req := httptest.NewRequest("POST", cat+"/oauth/tokens", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	}
	cc := func(id, secret string) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	}
	tests := []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"ok", cc("alice", "alice-token"), 200, ""},
		{"wrong secret", cc("alice", "nope"), 401, "invalid_client"},
		{"another recipient's name", cc("bob", "alice-token"), 401, "invalid_client"},
		{"revoked", cc("dave", "dave-token"), 401, "invalid_client"},
		{"expired", cc("carol", "carol-token"), 401, "invalid_client"},
		{"no secret", cc("alice", ""), 401, "invalid_client"},
		{"password grant", url.Values{"grant_type": {"password"}, "username": {"alice"}, "password": {"alice-token"}}, 400, "unsupported_grant_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(tc.form)
			var out map[string]any
			if err := json.Unmarshal(r.body, &out); err != nil || r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if tc.code != "" && out["error"] != tc.code {
				t.Fatalf("error %v", out["error"])
			}
			if tc.code == "" {
				if out["access_token"] != "alice-token" || out["token_type"] != "bearer" {
					t.Fatalf("token response %v", out)
				}
				// The exchanged token works.
				if g := f.do(t, out["access_token"].(string), "GET", cat+"/config", ""); g.status != 200 {
					t.Fatalf("config with the exchanged token: %d", g.status)
				}
			}
			if tc.name != "ok" && bytes.Contains(r.body, []byte("-token")) {
				t.Fatalf("refusal echoes a token: %s", r.body)
			}
		})
	}
	// The expiry travels with the token.
	f.res.recipient("gina", "gina-token", time.Now().Add(time.Hour), "sales")
	var out struct {
		ExpiresIn int64 `json:"expires_in"`
	}
	if err := json.Unmarshal(post(cc("gina", "gina-token")).body, &out); err != nil || out.ExpiresIn < 3590 || out.ExpiresIn > 3600 {
		t.Fatalf("expires_in %d, %v", out.ExpiresIn, err)
	}
}

// TestBodyLimit: a body over MaxBodyBytes is refused with 400.
func TestBodyLimit(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = 1024 })
	path := cat + "/sales/namespaces/emea/tables/orders/metrics"
	if r := f.do(t, "alice-token", "POST", path, strings.Repeat("x", 1024)); r.status != 204 {
		t.Fatalf("at the limit: %d %s", r.status, r.body)
	}
	r := f.do(t, "alice-token", "POST", path, strings.Repeat("x", 1025))
	if r.status != 400 || errorOf(t, r).Type != "BadRequestException" {
		t.Fatalf("over the limit: %d %s", r.status, r.body)
	}
	form := "grant_type=client_credentials&client_id=alice&client_secret=alice-token&pad=" + strings.Repeat("x", 1024)
	req := httptest.NewRequest("POST", cat+"/oauth/tokens", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != 400 {
		t.Fatalf("token request over the limit: %d %s", w.Code, w.Body)
	}
}

// TestPaging: listings come in pages of at most MaxPageSize, pageSize
// asks for fewer, and the pages together are the whole listing.
func TestPaging(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxPageSize = 3 })
	for i := range 7 {
		f.res.add(sharing.Table{Share: "sales", Schema: fmt.Sprintf("s%d", i), Name: "t", Warehouse: "floe-wh",
			Ident: catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"}, History: true})
	}
	list := func(size string) ([]string, []int) {
		var names []string
		var sizes []int
		tok := ""
		for range 20 {
			q := url.Values{}
			if size != "" {
				q.Set("pageSize", size)
			}
			if tok != "" {
				q.Set("pageToken", tok)
			}
			r := f.do(t, "alice-token", "GET", cat+"/sales/namespaces?"+q.Encode(), "")
			var out struct {
				Namespaces [][]string `json:"namespaces"`
				Next       string     `json:"next-page-token"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &out) != nil {
				t.Fatalf("%d %s", r.status, r.body)
			}
			sizes = append(sizes, len(out.Namespaces))
			for _, n := range out.Namespaces {
				names = append(names, n[0])
			}
			if tok = out.Next; tok == "" {
				return names, sizes
			}
		}
		t.Fatal("paging does not end")
		return nil, nil
	}
	want := "apac,emea,s0,s1,s2,s3,s4,s5,s6"
	for _, tc := range []struct {
		size  string
		sizes string
	}{{"", "[3 3 3]"}, {"2", "[2 2 2 2 1]"}, {"1000", "[3 3 3]"}} {
		names, sizes := list(tc.size)
		if strings.Join(names, ",") != want || fmt.Sprint(sizes) != tc.sizes {
			t.Fatalf("pageSize %q: %v in pages %v", tc.size, names, sizes)
		}
	}
}

// TestCacheBounds: the credential, trimmed-metadata and derived-snapshot
// caches never hold more than their limits (two derived snapshots, of the
// history-off table and of the filtered one, against a limit of one).
func TestCacheBounds(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.MaxCachedCredentials = 2
		o.MaxCachedMetadata = 1
		o.FileFilter = func(string, table.Metadata) (FileDecider, error) { return keepAll{}, nil }
	})
	for i := range 5 {
		name := fmt.Sprintf("r%d", i)
		f.res.recipient(name, name+"-token", time.Time{}, "sales")
		f.load(t, name+"-token", cat+"/sales/namespaces/emea/tables/orders")
		f.load(t, name+"-token", cat+"/sales/namespaces/emea/tables/customers")
		f.load(t, name+"-token", cat+"/sales/namespaces/apac/tables/filtered")
		if n := f.h.creds.len(); n > 2 || n == 0 {
			t.Fatalf("%d cached credentials", n)
		}
		if n := f.h.trim.len(); n != 1 {
			t.Fatalf("%d cached metadata", n)
		}
		if n := f.h.views.len(); n != 1 {
			t.Fatalf("%d cached derived snapshots", n)
		}
	}
	if n := len(f.minter.minted()); n != 15 {
		t.Fatalf("%d credentials minted for 15 distinct loads", n)
	}
}

// keepAll is a FileDecider that keeps every file.
type keepAll struct{}

func (keepAll) Decide(iceberg.DataFile) int { return 1 }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestHistoryOffNeedsViews: without a store for derived snapshots (a server
// on external S3, whose STS credentials cannot express one), a table shared
// without history is refused rather than served with a credential that
// could read its older files.
func TestHistoryOffNeedsViews(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Views = nil })
	r := f.do(t, "alice-token", "GET", cat+"/sales/namespaces/emea/tables/orders", "")
	if r.status != http.StatusNotAcceptable && r.status != http.StatusBadRequest && r.status != http.StatusForbidden && r.status != http.StatusNotImplemented {
		t.Fatalf("history-off without views: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), "shared without history") || len(f.minter.minted()) != 0 {
		t.Fatalf("history-off without views: %s, %d credentials", r.body, len(f.minter.minted()))
	}
	if lr := f.load(t, "alice-token", cat+"/sales/namespaces/emea/tables/customers"); len(lr.StorageCredentials) != 1 {
		t.Fatalf("a history-on table is still served: %+v", lr)
	}
}
