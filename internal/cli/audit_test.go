package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// queryLines runs `floe audit query ... --json` and decodes its lines.
func queryLines(t *testing.T, data []string, args ...string) []auditJSON {
	t.Helper()
	out, err := run(t, append(append([]string{"audit", "query", "--json"}, args...), data...)...)
	if err != nil {
		t.Fatalf("audit query %v: %v", args, err)
	}
	var rs []auditJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r auditJSON
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func seqsOf(rs []auditJSON) []int64 {
	out := []int64{}
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

// TestAuditQuery: every filter of `floe audit query`, the newest --limit
// printed oldest first, the table and NDJSON forms, and bad arguments.
func TestAuditQuery(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	ctx := context.Background()
	cfg := app.Defaults()
	cfg.DataDir = dir
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := a.Store().AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	events := []audit.Event{
		{Time: now.Add(-50 * time.Hour), Principal: "etl", Action: "test.read", Resource: "table:floe/crm.accounts", Outcome: "success", RequestID: "q-1"},
		{Time: now.Add(-3 * time.Hour), Principal: "etl", Action: "test.write", Resource: "table:floe/crm.orders", Outcome: "failure", RequestID: "q-2"},
		{Time: now.Add(-2 * time.Hour), Principal: "bi", Action: "test.read", Resource: "table:floe/sales.x", Outcome: "denied", RequestID: "q-3"},
		{Time: now.Add(-30 * time.Minute), Principal: "etl", Action: "other.read", Resource: "table:floe/crm.accounts", Outcome: "success", RequestID: "q-4",
			Detail: map[string]any{"note": "<ok> & \"quoted\""}},
		{Time: now.Add(-time.Minute), Principal: "bi", Action: "test.read", Resource: "s3://floe/crm/x", Outcome: "success", RequestID: "q-5"},
	}
	if err := a.Audit().AppendBatch(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := func(i int64) int64 { return head + i } // the seq of events[i-1]
	tests := []struct {
		args []string
		want []int64
	}{
		{[]string{"--principal", "etl"}, []int64{s(1), s(2), s(4)}},
		{[]string{"--action", "test.read"}, []int64{s(1), s(3), s(5)}},
		{[]string{"--action", "test.*"}, []int64{s(1), s(2), s(3), s(5)}},
		{[]string{"--resource", "table:floe/crm."}, []int64{s(1), s(2), s(4)}},
		{[]string{"--outcome", "denied"}, []int64{s(3)}},
		{[]string{"--request-id", "q-4"}, []int64{s(4)}},
		{[]string{"--since", "1h", "--action", "*"}, []int64{s(4), s(5)}},
		{[]string{"--since", "2d", "--until", "1h", "--principal", "etl"}, []int64{s(2)}},
		{[]string{"--until", now.Add(-49 * time.Hour).UTC().Format(time.RFC3339), "--action", "test.*"}, []int64{s(1)}},
		{[]string{"--principal", "bi", "--limit", "1"}, []int64{s(5)}},
		{[]string{"--action", "test.*", "--limit", "2"}, []int64{s(3), s(5)}},
		{[]string{"--principal", "nobody"}, []int64{}},
	}
	for _, tt := range tests {
		if got := seqsOf(queryLines(t, data, tt.args...)); !slices.Equal(got, tt.want) {
			t.Errorf("audit query %v = seqs %v, want %v", tt.args, got, tt.want)
		}
	}
	// A whole NDJSON record, detail as a JSON object.
	rs := queryLines(t, data, "--request-id", "q-4")
	if len(rs) != 1 {
		t.Fatalf("q-4: %+v", rs)
	}
	r := rs[0]
	var detail map[string]string
	if err := json.Unmarshal(r.Detail, &detail); err != nil || detail["note"] != `<ok> & "quoted"` || r.Principal != "etl" ||
		r.Action != "other.read" || r.Outcome != "success" || len(r.Hash) != 64 || len(r.PrevHash) != 64 || !strings.HasSuffix(r.Time, "Z") {
		t.Errorf("record q-4 = %+v (detail %s)", r, r.Detail)
	}
	// The table form.
	out, err := run(t, append([]string{"audit", "query", "--principal", "bi"}, data...)...)
	if err != nil || !strings.HasPrefix(out, "SEQ") || strings.Count(out, "\n") != 3 || !strings.Contains(out, "q-3") {
		t.Errorf("table output %q, %v", out, err)
	}
	for _, bad := range [][]string{
		{"--since", "yesterday"},
		{"--until", "-5m"},
		{"--limit", "0"},
		{"--action", "test*.read"},
		{"--since", "1h", "--until", "2h"},
	} {
		if _, err := run(t, append(append([]string{"audit", "query"}, bad...), data...)...); err == nil {
			t.Errorf("audit query %v succeeded", bad)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"", time.Time{}, true},
		{"2026-03-01T09:30:00Z", time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC), true},
		{"2026-03-01T09:30:00.25+01:00", time.Date(2026, 3, 1, 8, 30, 0, 250e6, time.UTC), true},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"90s", now.Add(-90 * time.Second), true},
		{" 1h30m ", now.Add(-90 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"0s", time.Time{}, false},
		{"-1h", time.Time{}, false},
		{"1.5d", time.Time{}, false},
		{"d", time.Time{}, false},
		{"99999999d", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-13-01", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := parseWhen(tt.in, now)
		if (err == nil) != tt.ok || (tt.ok && !got.Equal(tt.want)) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseWhen: any input is a clean error or a time no later than now
// for ages (never a panic).
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"", "1h", "7d", "2026-03-01", "2026-03-01T09:30:00Z", "-1d", "1e9h", "\x00d"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseWhen(s, now)
		if err != nil {
			if !got.IsZero() {
				t.Fatalf("parseWhen(%q) failed but returned %v", s, got)
			}
			return
		}
		if strings.TrimSpace(s) == "" && !got.IsZero() {
			t.Fatalf("parseWhen(%q) = %v, want no bound", s, got)
		}
	})
}

// TestAuditVerifyTestRun: the audit chain of a real test run (tokens, a
// failed login, table creation with vended credentials, S3 requests with
// them) verifies with `floe audit verify`; the run's records are found by
// `floe audit query`; and flipping a single byte of one stored record is
// detected.
func TestAuditVerifyTestRun(t *testing.T) {
	dir := t.TempDir()
	f := testkit.Start(t, func(c *app.Config) {
		c.DataDir = dir
		c.AuditExportInterval = 0
	})
	data := []string{"--data-dir", dir, "--log-level", "error"}
	ctx := context.Background()
	if r, err := f.Client().PostForm(f.URL+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"},
		"client_id": {f.Cred.ClientID}, "client_secret": {"not-the-secret"}, "scope": {"catalog"}}); err != nil || r.StatusCode != 401 {
		t.Fatalf("bad login: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	tb := f.CreateTable(t, "audited", "t")
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
	waitAuditQuiet(t, f)

	out, err := run(t, append([]string{"audit", "verify"}, data...)...)
	if err != nil || !strings.Contains(out, "audit log intact") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	actions := map[string]int{}
	for _, r := range queryLines(t, data, "--limit", "1000") {
		actions[r.Action+"/"+r.Outcome]++
	}
	for _, want := range []string{"oauth.token/success", "oauth.token/failure", "storage.credentials.vend/success",
		"s3.PutObject/success", "s3.GetObject/success"} {
		if actions[want] == 0 {
			t.Errorf("no %s record in the test run's log: %v", want, actions)
		}
	}
	puts := queryLines(t, data, "--action", "s3.Put*", "--resource", "s3://"+f.Warehouse+"/audited/")
	if len(puts) != 1 || puts[0].RequestID == "" || puts[0].Principal != f.Cred.ClientID && puts[0].Principal != "admin" {
		t.Fatalf("the S3 PUT: %+v", puts)
	}
	if got := queryLines(t, data, "--request-id", puts[0].RequestID); len(got) != 1 || got[0].Seq != puts[0].Seq {
		t.Errorf("by request id: %+v", got)
	}

	// Flip one bit of one byte of the PUT's stored detail.
	db, err := sql.Open("sqlite", filepath.Join(dir, "floe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var detail []byte
	if err := db.QueryRow(`SELECT detail FROM audit_events WHERE seq = ?`, puts[0].Seq).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(detail, ':') + 2 // inside the first value
	detail[i] ^= 0x01
	if _, err := db.Exec(`UPDATE audit_events SET detail = ? WHERE seq = ?`, string(detail), puts[0].Seq); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, append([]string{"audit", "verify"}, data...)...)
	if err == nil || !strings.Contains(err.Error(), "tampered") || !strings.Contains(err.Error(), fmt.Sprintf("record %d", puts[0].Seq)) {
		t.Fatalf("verify after flipping a byte of record %d: %v", puts[0].Seq, err)
	}
}

// waitAuditQuiet waits until the server has stored every audit event of
// the requests made so far (S3 and vending events are written in the
// background): the log's head has not moved for half a second.
func waitAuditQuiet(t *testing.T, f *testkit.Floe) {
	t.Helper()
	var last int64 = -1
	stable := time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		seq, _, err := f.App.Store().AuditHead(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seq != last {
			last, stable = seq, time.Now()
		} else if time.Since(stable) > 500*time.Millisecond {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the audit log kept growing")
}
