package app_test

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/auditexport"
)

// TestAuditExportHasNoSecrets drives a flow that handles every kind of
// secret Floe knows (a principal's client secret, a wrong secret tried at
// the token endpoint, access tokens, vended S3 keys and session tokens,
// requests signed with them), lets the background export bring
// system.audit up to date, and checks that the export holds every record
// exactly once and that neither the log nor the table holds any secret.
func TestAuditExportHasNoSecrets(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuditExportInterval = 200 * time.Millisecond })
	ctx := context.Background()
	p, etlSecret, err := f.App.Auth().CreatePrincipal(ctx, "etl", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	etlToken := f.TokenFor(t, p.ClientID, etlSecret)
	wrongSecret := "wrong-" + etlSecret[:12] + "-attempt"
	r, err := f.Client().PostForm(f.URL+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"},
		"client_id": {p.ClientID}, "client_secret": {wrongSecret}, "scope": {"catalog"}})
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Fatalf("a wrong secret got %d", r.StatusCode)
	}
	adminToken := f.Token(t)
	tb := f.CreateTable(t, "sec", "t")                           // vends credentials
	load := f.Do(t, "GET", f.P("/namespaces/sec/tables/t"), nil) // and again
	if load.Status != 200 {
		t.Fatalf("load: %d %s", load.Status, load.Body)
	}
	var loaded testkit.Table
	load.JSON(t, &loaded)
	c := tb.Config
	cli := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	key := strings.TrimPrefix(tb.Metadata.Location, "s3://"+f.Warehouse+"/") + "/data/probe.txt"
	if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key), Body: strings.NewReader("probe")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key + ".missing")}); err == nil {
		t.Fatal("GET of a missing object succeeded")
	}

	secrets := map[string]string{
		"etl client secret":       etlSecret,
		"admin client secret":     f.Cred.Secret,
		"wrong secret tried":      wrongSecret,
		"vended secret key":       c["s3.secret-access-key"],
		"vended session token":    c["s3.session-token"],
		"re-vended secret key":    loaded.Config["s3.secret-access-key"],
		"re-vended session token": loaded.Config["s3.session-token"],
	}
	for name, tok := range map[string]string{"etl token": etlToken, "admin token": adminToken} {
		secrets[name] = tok
		for i, part := range strings.Split(tok, ".") { // no part of a JWT either
			if len(part) >= 16 {
				secrets[name+" part "+string(rune('0'+i))] = part
			}
		}
	}
	for name, s := range secrets {
		if len(s) < 12 {
			t.Fatalf("%s %q is too short to look for", name, s)
		}
	}

	// Wait until every event is stored and exported.
	var head int64
	lk := lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})
	deadline := time.Now().Add(30 * time.Second)
	for stable := 0; stable < 3; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the export did not catch up with the log within 30s")
		}
		h, _, err := f.App.Store().AuditHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := lk.LoadTable(ctx, f.Warehouse, auditexport.Ident())
		if err != nil {
			continue // not created yet
		}
		w, err := auditexport.Watermark(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		if h == head && w == h {
			stable++
		} else {
			stable = 0
		}
		head = h
	}

	records, err := f.App.Store().AuditRecords(ctx, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(records)) != head {
		t.Fatalf("%d records, head %d", len(records), head)
	}
	seen := map[string]bool{}
	for _, r := range records {
		seen[r.Action+"/"+r.Outcome] = true
		for _, v := range []string{r.RequestID, r.Principal, r.ClientAddr, r.Action, r.Resource, r.Outcome, string(r.Detail)} {
			for name, s := range secrets {
				if strings.Contains(v, s) {
					t.Errorf("audit record %d (%s) contains the %s", r.Seq, r.Action, name)
				}
			}
		}
	}
	for _, want := range []string{"oauth.token/success", "oauth.token/failure", "storage.credentials.vend/success",
		"s3.PutObject/success", "s3.GetObject/success", "s3.GetObject/failure"} {
		if !seen[want] {
			t.Errorf("the flow left no %s record (the check above would be vacuous): %v", want, seen)
		}
	}
	if !strings.Contains(string(recordOf(records, "storage.credentials.vend").Detail), c["s3.access-key-id"]) {
		t.Error("the vend record does not name the (public) access key id")
	}

	// The exported rows: every record once, in seq order, and no secret.
	tbl, err := lk.LoadTable(ctx, f.Warehouse, auditexport.Ident())
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != head {
		t.Fatalf("system.audit has %d rows, the log %d records", at.NumRows(), head)
	}
	got := map[int64]bool{}
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for ci, fld := range rec.Schema().Fields() {
			col := rec.Column(ci)
			for i := range col.Len() {
				switch v := col.(type) {
				case *array.Int64:
					if fld.Name == "seq" {
						got[v.Value(i)] = true
					}
				case *array.String:
					for name, s := range secrets {
						if strings.Contains(v.Value(i), s) {
							t.Errorf("system.audit column %s contains the %s", fld.Name, name)
						}
					}
				}
			}
		}
	}
	for seq := int64(1); seq <= head; seq++ {
		if !got[seq] {
			t.Fatalf("seq %d is missing from system.audit (%d distinct seqs)", seq, len(got))
		}
	}
}

func recordOf(rs []audit.Record, action string) audit.Record {
	for _, r := range rs {
		if r.Action == action {
			return r
		}
	}
	return audit.Record{}
}

// TestExportAuditOnDemand: with the background export off, nothing is
// exported until ExportAudit is called, which then exports everything.
func TestExportAuditOnDemand(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuditExportInterval = 0 })
	ctx := context.Background()
	f.Token(t) // an audited token issue
	time.Sleep(300 * time.Millisecond)
	if _, err := f.App.Catalog().LoadTable(ctx, f.Warehouse, auditexport.Ident()); err == nil {
		t.Fatal("system.audit exists while the export is off")
	}
	res, err := f.App.ExportAudit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := f.App.Store().AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records == 0 || res.LastSeq != head || res.Commits != 1 {
		t.Fatalf("ExportAudit = %+v, head %d", res, head)
	}
}

// TestAuditTailMatchesStore: the records the export takes from memory are
// the ones the store holds, field for field (times at the store's
// precision, details byte for byte), and the tail answers without the
// store for records this node stored.
func TestAuditTailMatchesStore(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	f.CreateTable(t, "tail", "t")
	for range 50 {
		if r := f.Do(t, "GET", f.P("/namespaces/tail/tables/t"), nil); r.Status != 200 {
			t.Fatalf("load: %d", r.Status)
		}
	}
	f.Do(t, "GET", f.P("/namespaces/tail/tables/missing"), nil) // a failure too
	deadline := time.Now().Add(10 * time.Second)
	var stored []audit.Record
	for {
		var err error
		if stored, err = f.App.Store().AuditRecords(ctx, 0, 10_000); err != nil {
			t.Fatal(err)
		}
		if len(stored) >= 52 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	held, _ := f.App.AuditTail().Len()
	if held < 52 {
		t.Fatalf("the tail holds %d records, the store %d", held, len(stored))
	}
	got, err := f.App.AuditTail().AuditRecords(ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(stored) {
		t.Fatalf("tail answered %d records, store %d", len(got), len(stored))
	}
	for i, s := range stored {
		g := got[i]
		if !g.Time.Equal(s.Time) || string(g.Detail) != string(s.Detail) {
			t.Fatalf("record %d: tail %v %s, store %v %s", s.Seq, g.Time, g.Detail, s.Time, s.Detail)
		}
		g.Time, s.Time, g.Detail, s.Detail = time.Time{}, time.Time{}, nil, nil
		if !reflect.DeepEqual(g, s) {
			t.Fatalf("record %d differs:\n tail  %+v\n store %+v", i, g, s)
		}
	}
}
