package restcat_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/vend"
)

// planKeys returns the object keys of table files in bucket floe by name.
func planKeys(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		k, ok := strings.CutPrefix(p, "s3://floe/")
		if !ok {
			t.Fatalf("file %s not in bucket floe", p)
		}
		out[k[strings.LastIndex(k, "/")+1:]] = k
	}
	return out
}

// TestPlanPolicy: a principal whose SELECT carries a row filter that the
// files' partition values (or exact statistics) decide plans only the
// files whose rows all pass; one whose filter cannot be decided per file,
// or whose grant restricts columns, is refused with the SQL endpoint; an
// unfiltered reader still plans every file. The filtered plan's
// credential reads exactly its files: another data file of the table, its
// metadata, a listing, a write and a file of another table are AccessDenied.
func TestPlanPolicy(t *testing.T) {
	p := startPlanning(t, 2, 0)
	f := p.f
	ctx := context.Background()
	events := authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: "events"})
	sel := func(name string, filter *authz.DataFilter) string {
		tok := principal(t, f, name)
		grant(t, f, authz.Grant{Grantee: authz.Principal(name), Privilege: authz.Select, On: events, Filter: filter})
		return tok
	}
	eu := sel("eu", &authz.DataFilter{RowFilter: "region = 'r1'"})
	big := sel("big", &authz.DataFilter{RowFilter: "id >= 500"})
	undecided := sel("undecided", &authz.DataFilter{RowFilter: "id > 205"})
	outside := sel("outside", &authz.DataFilter{RowFilter: "lower(region) = 'r1'"})
	columns := sel("columns", &authz.DataFilter{RowFilter: "region = 'r1'", ExcludeColumns: []string{"id"}})
	reader := sel("reader", nil)

	// The table's objects exist, so that reads are judged on access alone.
	var load loadResult
	r := f.Do(t, "GET", f.P(p.path), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &load)
	admin := s3For(t, load.Config)
	_, all := p.planAll(t, f.Token(t), p.path, `{}`)
	if len(all) != 10 {
		t.Fatalf("admin plans %v", all)
	}
	first, _ := p.planAll(t, f.Token(t), p.path, `{}`)
	var paths []string
	for _, tk := range first.Tasks {
		paths = append(paths, tk.DataFile.FilePath)
	}
	dataDir := paths[0][:strings.LastIndex(paths[0], "/")+1]
	for _, name := range all {
		paths = append(paths, dataDir+name)
	}
	keys := planKeys(t, paths...)
	metaKey := strings.TrimPrefix(load.MetadataLocation, "s3://floe/")
	for _, k := range keys {
		if err := put(ctx, admin, k, "data of "+k); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	var other loadResult
	r = f.Do(t, "GET", f.P(p.path2), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &other)
	otherKey := strings.TrimPrefix(other.Metadata.Location, "s3://floe/") + "/data/f-1.parquet"
	if err := put(ctx, s3For(t, other.Config), otherKey, "other"); err != nil {
		t.Fatal(err)
	}

	t.Run("identity partition", func(t *testing.T) {
		first, files := p.planAll(t, eu, p.path, `{}`)
		if want := fileNames(1, 4, 7); !slices.Equal(files, want) {
			t.Fatalf("eu plans %v, want %v", files, want)
		}
		if len(first.PlanTasks) != 1 || len(first.Creds) != 1 {
			t.Fatalf("plan tasks %d, credentials %d", len(first.PlanTasks), len(first.Creds))
		}
		c := s3For(t, first.Creds[0].Config)
		get := func(key string) error {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(key)})
			if err == nil {
				_, _ = io.Copy(io.Discard, out.Body)
				out.Body.Close()
			}
			return err
		}
		for _, n := range []string{"f-1.parquet", "f-4.parquet", "f-7.parquet"} { // f-7 is on the second page
			if err := get(keys[n]); err != nil {
				t.Errorf("GET %s: %v", n, err)
			}
			if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("floe"), Key: aws.String(keys[n])}); err != nil {
				t.Errorf("HEAD %s: %v", n, err)
			}
		}
		for name, key := range map[string]string{"another data file": keys["f-0.parquet"], "a data file of r1's neighbour": keys["f-2.parquet"],
			"the metadata file": metaKey, "a file of another table": otherKey} {
			if err := get(key); s3Code(err) != "AccessDenied" {
				t.Errorf("GET %s (%s): %v, want AccessDenied", name, key, err)
			}
		}
		if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("floe"), Prefix: aws.String(dataDir[len("s3://floe/"):])}); s3Code(err) != "AccessDenied" {
			t.Errorf("list: %v, want AccessDenied", err)
		}
		if err := put(ctx, c, keys["f-1.parquet"], "x"); s3Code(err) != "AccessDenied" {
			t.Errorf("put: %v, want AccessDenied", err)
		}
		// The client's own filter narrows the plan and its credential.
		first, files = p.planAll(t, eu, p.path, `{"filter":{"type":"gt","term":"id","value":150}}`)
		if want := fileNames(4, 7); !slices.Equal(files, want) {
			t.Fatalf("eu plans %v with id > 150, want %v", files, want)
		}
		c = s3For(t, first.Creds[0].Config)
		if err := get(keys["f-1.parquet"]); s3Code(err) != "AccessDenied" {
			t.Errorf("GET of a file left out by the client's filter: %v, want AccessDenied", err)
		}
		// Fetching the result again hands a credential for the same files.
		r := f.DoAs(t, eu, "GET", f.P(p.path+"/plan/"+first.PlanID), nil)
		mustStatus(t, r, 200)
		var again planResponse
		r.JSON(t, &again)
		if len(again.Creds) != 1 {
			t.Fatalf("fetchPlanningResult: %s", r.Body)
		}
		if err := get(keys["f-4.parquet"]); err != nil {
			t.Errorf("GET f-4: %v", err)
		}
	})

	t.Run("statistics", func(t *testing.T) {
		_, files := p.planAll(t, big, p.path, `{}`)
		if want := fileNames(5, 6, 7, 8, 9); !slices.Equal(files, want) {
			t.Fatalf("big plans %v, want %v", files, want)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for name, c := range map[string]struct{ tok, msg string }{
			"partly passing file":    {undecided, "cannot be decided on every file"},
			"filter outside subset":  {outside, "function lower"},
			"column restriction":     {columns, "restricts columns"},
			"partly passing, paging": {undecided, "SQL endpoint at " + f.App.SQLAddr()},
		} {
			t.Run(name, func(t *testing.T) {
				r := f.DoAs(t, c.tok, "POST", f.P(p.path+"/plan"), `{}`)
				wantErr(t, r, 403, "ForbiddenException", c.msg)
				wantErr(t, r, 403, "ForbiddenException", `may read table "plan.events" only through a data filter`)
			})
		}
		// A client filter that keeps only decidable files plans.
		if _, files := p.planAll(t, undecided, p.path, `{"filter":{"type":"gt-eq","term":"id","value":300}}`); !slices.Equal(files, fileNames(3, 4, 5, 6, 7, 8, 9)) {
			t.Errorf("undecided with id >= 300 plans %v", files)
		}
	})

	t.Run("unfiltered", func(t *testing.T) {
		first, files := p.planAll(t, reader, p.path, `{}`)
		if !slices.Equal(files, fileNames(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)) {
			t.Fatalf("reader plans %v", files)
		}
		if len(first.Creds) != 1 {
			t.Fatalf("credentials %d", len(first.Creds))
		}
		c := s3For(t, first.Creds[0].Config)
		if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(keys["f-0.parquet"])}); err != nil {
			t.Errorf("reader GET f-0: %v", err)
		}
	})

	t.Run("policy changed", func(t *testing.T) {
		first, _ := p.planAll(t, eu, p.path, `{}`)
		g := grant(t, f, authz.Grant{Grantee: authz.Principal("eu"), Privilege: authz.Select, On: events,
			Filter: &authz.DataFilter{RowFilter: "region = 'r2'"}})
		defer func() {
			if err := f.App.Authz().Revoke(ctx, g); err != nil {
				t.Fatal(err)
			}
		}()
		wantErr(t, f.DoAs(t, eu, "POST", f.P(p.path+"/tasks"), map[string]string{"plan-task": first.PlanTasks[0]}), 404,
			"NoSuchPlanTaskException", "has changed since the plan")
		if _, files := p.planAll(t, eu, p.path, `{}`); !slices.Equal(files, fileNames(1, 2, 4, 5, 7, 8)) {
			t.Errorf("eu with r1 or r2 plans %v", files)
		}
	})

	// Remote signing for a filtered principal: only GET and HEAD of the
	// files its plan (made for remote signing) listed, and the signed
	// request works.
	t.Run("remote signing", func(t *testing.T) {
		sign := func(tok, method, key string) testkit.Response {
			return f.DoAs(t, tok, "POST", f.P(p.path+"/sign"), map[string]any{
				"region": "us-east-1", "uri": f.App.S3URL() + "/floe/" + key, "method": method, "headers": map[string][]string{}})
		}
		// Before any plan: refused.
		wantErr(t, sign(eu, "GET", keys["f-1.parquet"]), 403, "ForbiddenException", "signed only for reads of the files of its scan plans")
		r := f.DoAs(t, eu, "POST", f.P(p.path+"/plan"), `{}`, "X-Iceberg-Access-Delegation", "remote-signing")
		mustStatus(t, r, 200)
		var pr planResponse
		r.JSON(t, &pr)
		if len(pr.Creds) != 0 {
			t.Fatalf("a remote-signing plan carries credentials: %s", r.Body)
		}
		for _, c := range []struct {
			tok, method, key string
			ok               bool
		}{
			{eu, "GET", keys["f-1.parquet"], true},
			{eu, "HEAD", keys["f-7.parquet"], true}, // on a later page
			{eu, "GET", keys["f-0.parquet"], false},
			{eu, "GET", metaKey, false},
			{eu, "PUT", keys["f-1.parquet"], false},
			{eu, "DELETE", keys["f-1.parquet"], false},
			{eu, "GET", "?list-type=2&prefix=" + strings.TrimSuffix(dataDir[len("s3://floe/"):], "/"), false},
			{undecided, "GET", keys["f-1.parquet"], false}, // another principal: its plan is refused, so nothing to sign
		} {
			r := sign(c.tok, c.method, c.key)
			if !c.ok {
				if r.Status != 403 {
					t.Errorf("sign %s %s: %d, want 403 (%s)", c.method, c.key, r.Status, r.Body)
				}
				continue
			}
			mustStatus(t, r, 200)
			var signed struct {
				URI     string              `json:"uri"`
				Headers map[string][]string `json:"headers"`
			}
			r.JSON(t, &signed)
			req, _ := http.NewRequest(c.method, signed.URI, nil)
			for k, vs := range signed.Headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("signed %s %s: %d", c.method, c.key, resp.StatusCode)
			}
		}
	})

	// One credential names at most vend.MaxFiles files: a filtered plan of
	// more is refused (nothing half-written), one narrowed by the client's
	// filter plans.
	t.Run("too many files for one credential", func(t *testing.T) {
		lk := lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})
		tbl, err := lk.LoadTable(ctx, f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		extra := vend.MaxFiles - 2 // with f-1, f-4 and f-7: one more than a credential names
		files := make([]iceberg.DataFile, extra)
		for i := range files {
			b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, fmt.Sprintf("%s/data/big-%d.parquet", tbl.Location(), i),
				iceberg.ParquetFile, map[int]any{1000: "r1"}, nil, nil, 10, 1000)
			if err != nil {
				t.Fatal(err)
			}
			b.LowerBoundValues(map[int][]byte{1: binary.LittleEndian.AppendUint64(nil, 100_000)}).
				UpperBoundValues(map[int][]byte{1: binary.LittleEndian.AppendUint64(nil, 100_009)})
			files[i] = b.Build()
		}
		if _, err := lake.AppendFiles(ctx, tbl, files, nil); err != nil {
			t.Fatal(err)
		}
		wantErr(t, f.DoAs(t, eu, "POST", f.P(p.path+"/plan"), `{}`), 403, "ForbiddenException",
			fmt.Sprintf("the plan lists %d files, more than the %d one credential can name: narrow the scan", vend.MaxFiles+1, vend.MaxFiles))
		if _, files := p.planAll(t, eu, p.path, `{"filter":{"type":"lt","term":"id","value":1000}}`); !slices.Equal(files, fileNames(1, 4, 7)) {
			t.Errorf("narrowed plan lists %v", files)
		}
	})

	// The filtered plan's audit event says so and how many files it left
	// out, not which.
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := f.App.Store().AuditRecords(ctx, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range recs {
			var d map[string]any
			_ = json.Unmarshal(rec.Detail, &d)
			if rec.Action == "catalog.planTableScan" && rec.Principal == "eu" && d["policy_filtered"] == true &&
				d["withheld_data_files"] == float64(7) && d["data_files"] == float64(3) {
				found = true
				if strings.Contains(string(rec.Detail), "f-0.parquet") {
					t.Errorf("audit names a withheld file: %s", rec.Detail)
				}
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no audit event of eu's filtered plan withholding 7 files")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPlanPolicyNeverAsync: where every plan of the table would run in the
// background (threshold 1 file), a policy-filtered plan is still made at
// once and filtered (the background batches plan whole tables), and the
// whole-table reader's plan id of an asynchronous plan serves nothing to a
// caller whose access has become filtered.
func TestPlanPolicyNeverAsync(t *testing.T) {
	p := startPlanning(t, 0, 0, func(c *app.Config) { c.ScanPlanning.AsyncThresholdFiles = 1 })
	f := p.f
	events := authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: "events"})
	eu := principal(t, f, "eu")
	grant(t, f, authz.Grant{Grantee: authz.Principal("eu"), Privilege: authz.Select, On: events, Filter: &authz.DataFilter{RowFilter: "region = 'r1'"}})
	r := f.Do(t, "POST", f.P(p.path+"/plan"), `{}`)
	mustStatus(t, r, 200)
	var sub planResponse
	r.JSON(t, &sub)
	if sub.Status != "submitted" {
		t.Fatalf("the admin's plan is %q, want submitted (threshold 1)", sub.Status)
	}
	if _, files := p.planAll(t, eu, p.path, `{}`); !slices.Equal(files, fileNames(1, 4, 7)) {
		t.Fatalf("eu plans %v", files)
	}
	// A whole-table reader's asynchronous plan, fetched after its SELECT
	// became filtered: not served.
	flip := principal(t, f, "flip")
	whole := grant(t, f, authz.Grant{Grantee: authz.Principal("flip"), Privilege: authz.Select, On: events})
	r = f.DoAs(t, flip, "POST", f.P(p.path+"/plan"), `{"filter":{"type":"not-eq","term":"region","value":"zz"}}`) // not the cached plan
	mustStatus(t, r, 200)
	r.JSON(t, &sub)
	if sub.Status != "submitted" {
		t.Fatalf("flip's plan is %q, want submitted", sub.Status)
	}
	if err := f.App.Authz().Revoke(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	grant(t, f, authz.Grant{Grantee: authz.Principal("flip"), Privilege: authz.Select, On: events, Filter: &authz.DataFilter{RowFilter: "region = 'r1'"}})
	wantErr(t, f.DoAs(t, flip, "GET", f.P(p.path+"/plan/"+sub.PlanID), nil), 404, "NoSuchPlanIdException", "has changed since the plan")
}
