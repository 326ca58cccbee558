package check_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/check"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/demo"
	"github.com/floe-lake/floe/internal/testkit"
)

// viewBody is a createView request for a view over crm.accounts.
func viewBody(name string) string {
	return fmt.Sprintf(`{"name":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"n","required":false,"type":"long"}]},
	 "view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["crm"],
	 "representations":[{"type":"sql","sql":"select count(*) as n from crm.accounts","dialect":"spark"}]},"properties":{}}`, name, time.Now().UnixMilli())
}

// healthy starts a Floe with the demo data, a view over it and lifecycle
// tiering on the namespace: what a ready deployment looks like.
func healthy(t *testing.T, opts ...testkit.Option) *testkit.Floe {
	t.Helper()
	f := testkit.Start(t, opts...)
	if f.App.S3URL() == "" {
		// No S3 endpoint, no data files: tables with metadata only.
		f.CreateTable(t, "crm", "accounts")
		f.CreateTable(t, "crm", "activities")
	} else if err := demo.Load(context.Background(), f.URL, f.Token(t), nil); err != nil {
		t.Fatalf("demo: %v", err)
	}
	if r := f.Do(t, "POST", f.P("/namespaces/crm/views"), viewBody("accounts_count")); r.Status != 200 {
		t.Fatalf("create view: %d %s", r.Status, r.Body)
	}
	if r := f.Do(t, "POST", f.P("/namespaces/crm/properties"), `{"updates":{"floe.lifecycle.cold-after":"30d"}}`); r.Status != 200 {
		t.Fatalf("namespace properties: %d %s", r.Status, r.Body)
	}
	return f
}

func run(t *testing.T, f *testkit.Floe, o check.Options) *check.Report {
	t.Helper()
	o.URL = f.URL
	if o.Credential == "" && o.Token == "" {
		o.Credential = f.Cred.ClientID + ":" + f.Cred.Secret
	}
	o.HTTPClient = f.Client()
	o.S3HTTPClient = &http.Client{Timeout: time.Minute}
	rep, err := check.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return rep
}

func ids(rep *check.Report, st check.Status) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Status == st {
			out = append(out, f.ID)
		}
	}
	sort.Strings(out)
	return out
}

func dump(t *testing.T, rep *check.Report) {
	t.Helper()
	for _, f := range rep.Findings {
		t.Logf("%s %-24s %-4s %s", f.Standard, f.ID, f.Status, f.Evidence)
	}
}

// TestHealthyFloePasses: a Floe with the demo data, a view and lifecycle
// passes every check, and every standard is covered.
func TestHealthyFloePasses(t *testing.T) {
	f := healthy(t)
	rep := run(t, f, check.Options{})
	dump(t, rep)
	if !rep.Floe || rep.Prefix != f.Warehouse {
		t.Errorf("floe %v prefix %q", rep.Floe, rep.Prefix)
	}
	stds := map[string]bool{}
	for _, fd := range rep.Findings {
		stds[fd.Standard] = true
		if fd.Status != check.Pass {
			t.Errorf("%s: %s (%s), want pass", fd.ID, fd.Status, fd.Evidence)
		}
	}
	for _, s := range []string{"S1", "S2", "S3", "S4", "S5", "S6", "S7"} {
		if !stds[s] {
			t.Errorf("no finding for %s", s)
		}
	}
	if rep.Failed() {
		t.Error("Failed() on a healthy Floe")
	}
	fu, _ := rep.Find("s2.federation-uri")
	if want := "uri=" + f.URL + " warehouse=" + f.Warehouse; fu.Evidence != want {
		t.Errorf("federation uri evidence %q, want %q", fu.Evidence, want)
	}
}

// smallFiles creates crm.small with n data files of one row each (one
// iceberg-go append into n identity partitions).
func smallFiles(t *testing.T, f *testkit.Floe, n int) {
	t.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "floe", f.URL, rest.WithOAuthToken(f.Token(t)))
	if err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "k", Type: iceberg.PrimitiveTypes.Int32, Required: false})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "k"})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"crm", "small"}, sc, icecat.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	asc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	b := array.NewInt32Builder(memory.DefaultAllocator)
	for i := range n {
		b.Append(int32(i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(asc, []arrow.Array{col}, int64(n))
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, int64(n), nil); err != nil {
		t.Fatal(err)
	}
}

// TestMisconfiguredFloes: each misconfiguration fails exactly its checks,
// with the troubleshooting table's fix.
func TestMisconfiguredFloes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []testkit.Option
		setup func(t *testing.T, f *testkit.Floe) check.Options
		fail  []string
	}{
		{name: "vending off", opts: []testkit.Option{func(c *app.Config) { c.S3Listen = "off" }},
			fail: []string{"s4.vended-credentials"}},
		{name: "encryption off", opts: []testkit.Option{func(c *app.Config) { c.Encryption = false }},
			fail: []string{"s6.encryption"}},
		{name: "federation principal without namespace DESCRIBE", setup: func(t *testing.T, f *testkit.Floe) check.Options {
			// Floe cannot grant SELECT without DESCRIBE on the same table
			// (every privilege implies DESCRIBE on its object): the
			// closest real misconfiguration is SELECT on the table and
			// nothing on the namespace or warehouse, so the table loads but
			// no listing shows it (the GetDatabases failure).
			fed := f.NewPrincipal(t, "glue-federation")
			r := f.Do(t, "POST", "/api/v1/grants", `{"grantee":{"kind":"principal","name":"glue-federation"},"privilege":"SELECT",
				"on":{"kind":"table","namespace":["crm"],"name":"accounts"}}`)
			if r.Status != 201 {
				t.Fatalf("grant: %d %s", r.Status, r.Body)
			}
			return check.Options{FederationCredential: fed.ClientID + ":" + fed.Secret, Tables: []string{"crm.accounts"}}
		}, fail: []string{"s7.describe"}},
		{name: "1000 small files", setup: func(t *testing.T, f *testkit.Floe) check.Options {
			smallFiles(t, f, check.SmallFileFailCount)
			return check.Options{Tables: []string{"crm.small"}}
		}, fail: []string{"s6.small-files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy(t, tc.opts...)
			var o check.Options
			if tc.setup != nil {
				o = tc.setup(t, f)
			}
			rep := run(t, f, o)
			dump(t, rep)
			if got := ids(rep, check.Fail); !slices.Equal(got, tc.fail) {
				t.Errorf("failing checks %v, want %v", got, tc.fail)
			}
			for _, id := range tc.fail {
				fd, _ := rep.Find(id)
				if fd.Fix == "" || fd.Fix != check.Hints[id] {
					t.Errorf("%s: fix %q, want the hint %q", id, fd.Fix, check.Hints[id])
				}
			}
			if w := ids(rep, check.Warn); len(w) > 0 {
				t.Errorf("unexpected warnings %v", w)
			}
			if !rep.Failed() {
				t.Error("Failed() = false")
			}
		})
	}
}

// TestUsageAndConnectionErrors: a bad URL or credential is a usage error,
// a closed port a connection error; neither is a finding.
func TestUsageAndConnectionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    check.Options
		want error
	}{
		{check.Options{URL: "ftp://x"}, check.ErrUsage},
		{check.Options{URL: ""}, check.ErrUsage},
		{check.Options{URL: "http://127.0.0.1:1", Credential: "nocolon"}, check.ErrUsage},
		{check.Options{URL: "http://127.0.0.1:1"}, check.ErrConnect},
	} {
		_, err := check.Run(context.Background(), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want.Error()) {
			t.Errorf("%+v: err %v, want %v", tc.o, err, tc.want)
		}
	}
}

// TestHintsCoverEveryCheck: every check that can warn or fail has a fix.
func TestHintsCoverEveryCheck(t *testing.T) {
	f := healthy(t, func(c *app.Config) { c.S3Listen = "off"; c.Encryption = false })
	rep := run(t, f, check.Options{})
	for _, fd := range rep.Findings {
		if check.Hints[fd.ID] == "" {
			t.Errorf("no hint for %s", fd.ID)
		}
	}
}
