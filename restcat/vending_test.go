package restcat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/testkit"
)

type loadResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Config           map[string]string `json:"config"`
	Metadata         struct {
		Location string `json:"location"`
	} `json:"metadata"`
	StorageCredentials []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

// s3For builds an AWS SDK S3 client from a LoadTableResult config, as an
// engine would.
func s3For(t *testing.T, cfg map[string]string) *s3.Client {
	t.Helper()
	for _, k := range []string{"s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "client.region"} {
		if cfg[k] == "" {
			t.Fatalf("config lacks %s: %v", k, cfg)
		}
	}
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(cfg["s3.endpoint"]),
		Region:       cfg["client.region"],
		UsePathStyle: cfg["s3.path-style-access"] == "true",
		Credentials:  credentials.NewStaticCredentialsProvider(cfg["s3.access-key-id"], cfg["s3.secret-access-key"], cfg["s3.session-token"]),
	})
}

func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func put(ctx context.Context, c *s3.Client, key, body string) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("floe"), Key: aws.String(key), Body: strings.NewReader(body)})
	return err
}

// TestVendedCredentials: loadTable hands out credentials by default (no
// delegation header), scoped to the table's prefix, read-write for a
// catalog token and read-only for a catalog:read token.
func TestVendedCredentials(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["v"]}`), 200)
	var a, b loadResult
	r := f.Do(t, "POST", f.P("/namespaces/v/tables"), createTableBody("a", ""))
	mustStatus(t, r, 200)
	r.JSON(t, &a)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/v/tables"), createTableBody("b", "")), 200)
	r = f.Do(t, "GET", f.P("/namespaces/v/tables/b"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &b)
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store on a response with credentials", cc)
	}
	if !strings.HasPrefix(a.Metadata.Location, "s3://floe/v/a-") {
		t.Fatalf("table location %q", a.Metadata.Location)
	}
	if len(a.StorageCredentials) != 1 || a.StorageCredentials[0].Prefix != a.Metadata.Location+"/" {
		t.Fatalf("storage-credentials %+v", a.StorageCredentials)
	}
	if exp, err := strconv.ParseInt(a.Config["s3.session-token-expires-at-ms"], 10, 64); err != nil ||
		time.Until(time.UnixMilli(exp)) < 50*time.Minute || time.Until(time.UnixMilli(exp)) > 61*time.Minute {
		t.Errorf("expiry %q: want about an hour from now", a.Config["s3.session-token-expires-at-ms"])
	}
	keyA := strings.TrimPrefix(a.Metadata.Location, "s3://floe/")
	keyB := strings.TrimPrefix(b.Metadata.Location, "s3://floe/")
	ca := s3For(t, a.Config)

	// Read-write inside the table, nothing outside it.
	if err := put(ctx, ca, keyA+"/data/x.parquet", "hello"); err != nil {
		t.Fatalf("put inside the table: %v", err)
	}
	got, err := ca.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(keyA + "/data/x.parquet")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "hello" {
		t.Fatalf("read back %q", body)
	}
	// The metadata file the catalog wrote is readable through the endpoint.
	md, err := ca.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(strings.TrimPrefix(a.MetadataLocation, "s3://floe/"))})
	if err != nil {
		t.Fatalf("read metadata file: %v", err)
	}
	mdb, _ := io.ReadAll(md.Body)
	md.Body.Close()
	if !bytes.Contains(mdb, []byte(`"format-version"`)) {
		t.Fatalf("metadata file reads as %.60q", mdb)
	}
	for name, err := range map[string]error{
		"put into table b":  put(ctx, ca, keyB+"/data/y.parquet", "x"),
		"put at the root":   put(ctx, ca, "v/evil.parquet", "x"),
		"put sibling table": put(ctx, ca, keyA+"x/data/y.parquet", "x"),
	} {
		if code := s3Code(err); code != "AccessDenied" {
			t.Errorf("%s: %v (code %q), want AccessDenied", name, err, code)
		}
	}
	_, err = ca.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("floe"), Prefix: aws.String(keyB + "/")})
	if code := s3Code(err); code != "AccessDenied" {
		t.Errorf("list table b: %v, want AccessDenied", err)
	}

	// catalog:read gets read-only credentials.
	ro := f.TokenScoped(t, f.Cred.ClientID, f.Cred.Secret, "catalog:read")
	var ra loadResult
	r = f.DoAs(t, ro, "GET", f.P("/namespaces/v/tables/a"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &ra)
	cr := s3For(t, ra.Config)
	if _, err := cr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("floe"), Key: aws.String(keyA + "/data/x.parquet")}); err != nil {
		t.Errorf("read-only head: %v", err)
	}
	if code := s3Code(put(ctx, cr, keyA+"/data/z.parquet", "x")); code != "AccessDenied" {
		t.Errorf("read-only put: code %q, want AccessDenied", code)
	}
	_, err = cr.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("floe"), Key: aws.String(keyA + "/data/x.parquet")})
	if code := s3Code(err); code != "AccessDenied" {
		t.Errorf("read-only delete: code %q, want AccessDenied", code)
	}

	// The credentials endpoint refreshes them.
	var lc struct {
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	r = f.Do(t, "GET", f.P("/namespaces/v/tables/a/credentials"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &lc)
	if len(lc.StorageCredentials) != 1 || lc.StorageCredentials[0].Config["s3.access-key-id"] == a.Config["s3.access-key-id"] {
		t.Fatalf("credentials endpoint: %+v", lc)
	}
	cfg := map[string]string{}
	for k, v := range a.Config {
		cfg[k] = v
	}
	for k, v := range lc.StorageCredentials[0].Config {
		cfg[k] = v
	}
	if err := put(ctx, s3For(t, cfg), keyA+"/data/fresh.parquet", "x"); err != nil {
		t.Errorf("put with refreshed credentials: %v", err)
	}
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/v/tables/nope/credentials"), nil), 404, "NoSuchTableException", "nope")

	// A tampered session token is refused.
	bad := map[string]string{}
	for k, v := range a.Config {
		bad[k] = v
	}
	tok := []byte(bad["s3.session-token"])
	tok[len(tok)/2] ^= 1
	bad["s3.session-token"] = string(tok)
	_, err = s3For(t, bad).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("floe"), Key: aws.String(keyA + "/data/x.parquet")})
	if err == nil {
		t.Error("tampered session token accepted")
	}

	// The audit trail correlates the vend and the object reads made with it.
	waitAudit(t, f, func(rs []audit.Record) bool {
		var vendID, getID string
		for _, r := range rs {
			var d map[string]any
			_ = json.Unmarshal(r.Detail, &d)
			switch {
			case r.Action == "storage.credentials.vend" && d["access_key_id"] == a.Config["s3.access-key-id"]:
				vendID, _ = d["credential_id"].(string)
				if r.Resource != "table:v.a" || r.Principal != "admin" || d["access"] != "read-write" {
					t.Errorf("vend event %+v %s", r, r.Detail)
				}
			case r.Action == "s3.GetObject" && r.Resource == "s3://floe/"+keyA+"/data/x.parquet" && d["access_key_id"] == a.Config["s3.access-key-id"]:
				getID, _ = d["credential_id"].(string)
				if r.Principal != "admin" || r.Outcome != audit.OutcomeSuccess || d["bytes_out"] != float64(5) || d["table"] != "v.a" {
					t.Errorf("get event %+v %s", r, r.Detail)
				}
			case r.Action == "s3.PutObject" && r.Outcome == audit.OutcomeFailure && r.Resource == "s3://floe/"+keyB+"/data/y.parquet":
				if d["error"] != "AccessDenied" {
					t.Errorf("denied put event %s", r.Detail)
				}
			}
			if strings.Contains(string(r.Detail), a.Config["s3.secret-access-key"]) || strings.Contains(string(r.Detail), a.Config["s3.session-token"]) {
				t.Fatalf("secret in the audit log: %s", r.Detail)
			}
		}
		return vendID != "" && vendID == getID
	})
}

// waitAudit polls the audit log (written in the background) until ok
// accepts it, for at most 10 s.
func waitAudit(t *testing.T, f *testkit.Floe, ok func([]audit.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		if ok(rs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit log (%d records) never showed the expected events", len(rs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRemoteSigning: a client asking only for remote signing gets the
// signer configuration (no keys), and the sign endpoint signs requests
// inside the table and refuses others.
func TestRemoteSigning(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["rs"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/rs/tables"), createTableBody("a", "")), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/rs/tables"), createTableBody("b", "")), 200)
	var a, b loadResult
	r := f.Do(t, "GET", f.P("/namespaces/rs/tables/a"), nil, "X-Iceberg-Access-Delegation", "remote-signing")
	mustStatus(t, r, 200)
	r.JSON(t, &a)
	if a.Config["s3.remote-signing-enabled"] != "true" || a.Config["s3.access-key-id"] != "" || len(a.StorageCredentials) != 0 {
		t.Fatalf("remote-signing config %v / %v", a.Config, a.StorageCredentials)
	}
	if a.Config["s3.signer.endpoint"] != "v1/floe/namespaces/rs/tables/a/sign" {
		t.Errorf("signer endpoint %q", a.Config["s3.signer.endpoint"])
	}
	f.Do(t, "GET", f.P("/namespaces/rs/tables/b"), nil).JSON(t, &b)
	endpoint := f.App.S3URL()
	keyA := strings.TrimPrefix(a.Metadata.Location, "s3://floe/")
	keyB := strings.TrimPrefix(b.Metadata.Location, "s3://floe/")

	sign := func(method, uri string, headers map[string][]string) testkit.Response {
		return f.Do(t, "POST", f.P("/namespaces/rs/tables/a/sign"), map[string]any{
			"region": "us-east-1", "uri": uri, "method": method, "headers": headers})
	}
	// Sign a PUT, then send it.
	uri := endpoint + "/floe/" + keyA + "/data/signed.parquet"
	r = sign("PUT", uri, map[string][]string{"Content-Type": {"application/octet-stream"}, "X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}})
	mustStatus(t, r, 200)
	var signed struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	r.JSON(t, &signed)
	req, _ := http.NewRequest("PUT", signed.URI, strings.NewReader("payload"))
	for k, vs := range signed.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signed PUT: %d %s", resp.StatusCode, rb)
	}
	// Requests outside the table are refused.
	wantErr(t, sign("GET", endpoint+"/floe/"+keyB+"/metadata/x.json", map[string][]string{}), 403, "ForbiddenException", "outside table")
	wantErr(t, sign("GET", endpoint+"/floe/"+keyA+"/../"+strings.TrimPrefix(keyB, "rs/")+"/x", map[string][]string{}), 403, "ForbiddenException", "outside table")
	wantErr(t, sign("GET", endpoint+"/floe?list-type=2&prefix=rs/", map[string][]string{}), 403, "ForbiddenException", "outside table")
	wantErr(t, sign("PUT", endpoint+"/floe/"+keyA+"/data/c", map[string][]string{"x-amz-copy-source": {"floe/" + keyB + "/metadata/x.json"}}), 403, "ForbiddenException", "outside table")
	wantErr(t, sign("POST", endpoint+"/floe?delete", map[string][]string{}), 400, "BadRequestException", "body")
	// A read-only token may sign reads only.
	ro := f.TokenScoped(t, f.Cred.ClientID, f.Cred.Secret, "catalog:read")
	r = f.DoAs(t, ro, "POST", f.P("/namespaces/rs/tables/a/sign"), map[string]any{
		"region": "us-east-1", "uri": uri, "method": "PUT", "headers": map[string][]string{}})
	wantErr(t, r, 403, "ForbiddenException", "may read but not write")
	r = f.DoAs(t, ro, "POST", f.P("/namespaces/rs/tables/a/sign"), map[string]any{
		"region": "us-east-1", "uri": uri, "method": "GET", "headers": map[string][]string{}})
	mustStatus(t, r, 200)
}

// TestTableLocationsDoNotOverlap: since credentials are scoped by location
// prefix, no table may be created or registered at, above or below
// another table's location (or at the warehouse root).
func TestTableLocationsDoNotOverlap(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ov"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["other"]}`), 200)
	var a loadResult
	r := f.Do(t, "POST", f.P("/namespaces/ov/tables"), createTableBody("a", ""))
	mustStatus(t, r, 200)
	r.JSON(t, &a)
	loc := a.Metadata.Location
	for name, l := range map[string]string{
		"same":        loc,
		"inside":      loc + "/data",
		"parent":      "s3://floe/ov",
		"dot-dot":     loc + "/../",
		"root":        "s3://floe",
		"root, slash": "s3://floe/",
	} {
		t.Run(name, func(t *testing.T) {
			r := f.Do(t, "POST", f.P("/namespaces/other/tables"), createTableBody("x", fmt.Sprintf(`,"location":%q`, l)))
			wantErr(t, r, 400, "BadRequestException", "location")
			mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/other/tables/x"), nil), 404)
		})
	}
	// Staged creates are checked when they commit.
	r = f.Do(t, "POST", f.P("/namespaces/other/tables"), createTableBody("st", fmt.Sprintf(`,"location":%q,"stage-create":true`, loc+"/sub")))
	mustStatus(t, r, 200)
	var staged struct {
		Metadata struct {
			UUID string `json:"table-uuid"`
		} `json:"metadata"`
	}
	r.JSON(t, &staged)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/other/tables/st"), fmt.Sprintf(`{"requirements":[{"type":"assert-create"}],"updates":[
		{"action":"assign-uuid","uuid":%q},{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":%s},{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-location","location":%q}]}`, staged.Metadata.UUID, schemaJSON, loc+"/sub")), 400, "BadRequestException", "location")
	// Registering another table's metadata file is refused.
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/other/register"), map[string]any{"name": "copy", "metadata-location": a.MetadataLocation}),
		400, "BadRequestException", "overlaps")
	// A commit that moves a table into another's location is refused.
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/other/tables"), createTableBody("b", "")), 200)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/other/tables/b"), fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-location","location":%q}]}`, loc+"/b")),
		400, "BadRequestException", "overlaps")
	// A sibling whose name extends a's is fine, and dropping a frees its location.
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/other/tables"), createTableBody("sib", fmt.Sprintf(`,"location":%q`, loc+"x"))), 200)
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/ov/tables/a"), nil), 204)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/other/register"), map[string]any{"name": "copy", "metadata-location": a.MetadataLocation}), 200)
}

// TestVendedPrefixIsLiteral: engines use a table's location as a literal
// key prefix, so the vended prefix must be exactly the location (not
// URL-decoded), also for names with spaces.
func TestVendedPrefixIsLiteral(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["sp"]}`), 200)
	var lt loadResult
	r := f.Do(t, "POST", f.P("/namespaces/sp/tables"), createTableBody("two words", ""))
	mustStatus(t, r, 200)
	r.JSON(t, &lt)
	if want := lt.Metadata.Location + "/"; len(lt.StorageCredentials) != 1 || lt.StorageCredentials[0].Prefix != want {
		t.Fatalf("storage-credentials %+v, want prefix %q", lt.StorageCredentials, want)
	}
	key := strings.TrimPrefix(lt.Metadata.Location, "s3://floe/") + "/data/f.parquet"
	if err := put(context.Background(), s3For(t, lt.Config), key, "x"); err != nil {
		t.Fatalf("put under the literal location: %v", err)
	}
}

// TestVendedCredentialsReuse: loads of one table with one token within a
// minute get the same credential (minted and audited once, named in each
// load's audit event); another token, another access or the refresh
// endpoint gets a new one.
func TestVendedCredentialsReuse(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["r"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/r/tables"), createTableBody("t", "")), 200)
	load := func(tok string) string {
		t.Helper()
		var lr loadResult
		r := f.DoAs(t, tok, "GET", f.P("/namespaces/r/tables/t"), nil)
		mustStatus(t, r, 200)
		r.JSON(t, &lr)
		return lr.Config["s3.access-key-id"]
	}
	tok1 := f.Token(t)
	k1, k2 := load(tok1), load(tok1)
	if k1 == "" || k1 != k2 {
		t.Fatalf("two loads with one token: keys %q, %q; want one reused credential", k1, k2)
	}
	if k3 := load(f.TokenFor(t, f.Cred.ClientID, f.Cred.Secret)); k3 == k1 {
		t.Errorf("another token got the same credential %q", k3)
	}
	if k4 := load(f.TokenScoped(t, f.Cred.ClientID, f.Cred.Secret, "catalog:read")); k4 == k1 {
		t.Errorf("a read-only token got the read-write credential %q", k4)
	}
	var lc struct {
		StorageCredentials []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	r := f.DoAs(t, tok1, "GET", f.P("/namespaces/r/tables/t/credentials"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &lc)
	if len(lc.StorageCredentials) != 1 || lc.StorageCredentials[0].Config["s3.access-key-id"] == k1 {
		t.Errorf("refresh endpoint returned the cached credential: %+v", lc)
	}
	waitAudit(t, f, func(rs []audit.Record) bool {
		vends, loads := 0, 0
		var credID string
		for _, r := range rs {
			var d map[string]any
			_ = json.Unmarshal(r.Detail, &d)
			if r.Action == "storage.credentials.vend" && d["access_key_id"] == k1 {
				vends++
				credID, _ = d["credential_id"].(string)
			}
		}
		for _, r := range rs {
			var d map[string]any
			_ = json.Unmarshal(r.Detail, &d)
			if r.Action == "catalog.loadTable" && credID != "" && d["credential_id"] == credID {
				loads++
			}
		}
		if vends > 1 {
			t.Fatalf("credential %s vended %d times", k1, vends)
		}
		return vends == 1 && loads == 2
	})
}

// TestReusedAccessNamesItsTable: a load answered from the reused access of
// an earlier one is the same answer, and each table's answer keeps its own
// prefix and refresh endpoint.
func TestReusedAccessNamesItsTable(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["r"]}`), 200)
	for _, name := range []string{"t", "u"} {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/r/tables"), createTableBody(name, "")), 200)
	}
	tok := f.Token(t)
	load := func(name string) (loadResult, string) {
		t.Helper()
		var lr loadResult
		r := f.DoAs(t, tok, "GET", f.P("/namespaces/r/tables/"+name), nil)
		mustStatus(t, r, 200)
		r.JSON(t, &lr)
		return lr, string(r.Body)
	}
	t1, body1 := load("t")
	t2, body2 := load("t")
	u, _ := load("u")
	if body1 != body2 {
		t.Errorf("second load of t differs:\n%s\n%s", body1, body2)
	}
	for _, c := range []struct {
		name string
		lr   loadResult
	}{{"t", t1}, {"t", t2}, {"u", u}} {
		if ep := c.lr.Config["client.refresh-credentials-endpoint"]; !strings.HasSuffix(ep, "/tables/"+c.name+"/credentials") {
			t.Errorf("table %s: refresh endpoint %q", c.name, ep)
		}
		if len(c.lr.StorageCredentials) != 1 || c.lr.StorageCredentials[0].Prefix != strings.TrimSuffix(c.lr.Metadata.Location, "/")+"/" {
			t.Errorf("table %s at %s: storage credentials %+v", c.name, c.lr.Metadata.Location, c.lr.StorageCredentials)
		}
	}
	if u.Config["s3.access-key-id"] == t1.Config["s3.access-key-id"] {
		t.Error("tables t and u share a credential")
	}
}
