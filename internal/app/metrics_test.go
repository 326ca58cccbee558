package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// scrape fetches the admin listener's /metrics and parses it.
func scrape(t *testing.T, f *testkit.Floe) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(f.App.AdminURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the counter (or histogram count) of the series of family name
// whose labels include want; 0 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	fam := fams[name]
	if fam == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

const loadTableRoute = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"

// TestMetricsAfterRequests: requests through the real handlers show up in
// the registry the admin listener serves, by route template, with the
// commits, handed-out credentials, cache lookups, store latency and the Go
// runtime; the admin listener serves nothing of the catalog.
func TestMetricsAfterRequests(t *testing.T) {
	f := testkit.Start(t)
	f.CreateTable(t, "m", "t")
	before := scrape(t, f)
	const loads = 5
	for range loads {
		if r := f.Do(t, "GET", f.P("/namespaces/m/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials"); r.Status != 200 {
			t.Fatalf("loadTable: %d %s", r.Status, r.Body)
		}
	}
	if r := f.Do(t, "GET", f.P("/namespaces/m/tables/nope"), nil); r.Status != 404 {
		t.Fatalf("loadTable of a missing table: %d", r.Status)
	}
	commit := map[string]any{"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"k": "v"}}}}
	if r := f.Do(t, "POST", f.P("/namespaces/m/tables/t"), commit); r.Status != 200 {
		t.Fatalf("commit: %d %s", r.Status, r.Body)
	}
	stale := map[string]any{"requirements": []any{map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}},
		"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"k": "w"}}}}
	if r := f.Do(t, "POST", f.P("/namespaces/m/tables/t"), stale); r.Status != 409 {
		t.Fatalf("stale commit: %d %s", r.Status, r.Body)
	}
	if r := f.Do(t, "GET", "/api/v1/whoami", nil); r.Status != 200 {
		t.Fatalf("whoami: %d", r.Status)
	}
	after := scrape(t, f)
	delta := func(name string, labels map[string]string) float64 {
		return value(after, name, labels) - value(before, name, labels)
	}
	for _, c := range []struct {
		name    string
		labels  map[string]string
		want    float64
		atLeast bool
	}{
		{"floe_http_requests_total", map[string]string{"listener": "rest", "route": loadTableRoute, "method": "GET", "code": "200"}, loads, false},
		{"floe_http_requests_total", map[string]string{"listener": "rest", "route": loadTableRoute, "method": "GET", "code": "404"}, 1, false},
		{"floe_http_requests_total", map[string]string{"listener": "rest", "route": loadTableRoute, "method": "POST", "code": "200"}, 1, false},
		{"floe_http_requests_total", map[string]string{"listener": "rest", "route": loadTableRoute, "method": "POST", "code": "409"}, 1, false},
		{"floe_http_requests_total", map[string]string{"listener": "mgmt", "route": "/api/v1/whoami", "method": "GET", "code": "200"}, 1, false},
		{"floe_http_request_duration_seconds", map[string]string{"listener": "rest", "route": loadTableRoute, "method": "GET"}, loads + 1, false},
		{"floe_catalog_commits_total", map[string]string{"result": "success"}, 1, false},
		{"floe_catalog_commits_total", map[string]string{"result": "conflict"}, 1, false},
		{"floe_credentials_vended_total", map[string]string{"access": "read-write"}, loads, false},
		{"floe_cache_requests_total", map[string]string{"cache": "vended_credentials", "result": "hit"}, loads - 1, true},
		{"floe_cache_requests_total", map[string]string{"cache": "table_metadata", "result": "hit"}, loads, true},
		{"floe_store_query_duration_seconds", map[string]string{"op": "read"}, 1, true},
	} {
		got := delta(c.name, c.labels)
		if got != c.want && !(c.atLeast && got >= c.want) {
			t.Errorf("%s%v: +%v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The token request (testkit fetched one) is the OAuth listener's.
	if v := value(after, "floe_http_requests_total", map[string]string{"listener": "oauth", "route": "/v1/oauth/tokens"}); v < 1 {
		t.Errorf("no token request counted")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "floe_audit_write_lag_seconds"} {
		if after[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// The admin listener answers the probes and nothing of the catalog.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/v1/config": 404, "/v1/oauth/tokens": 404, "/api/v1/whoami": 404} {
		resp, err := http.Get(f.App.AdminURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("admin %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestMetricsCardinality: 10,000 requests to distinct random paths on
// every part of the catalog listener leave a handful of series: unknown
// routes collapse to "other", known ones to their templates.
func TestMetricsCardinality(t *testing.T) {
	f := testkit.Start(t)
	h := f.App.Handler()
	prefixes := []string{"/", "/v1/", "/v1/floe/namespaces/", "/v1/floe/namespaces/a/tables/", "/api/v1/", "/.well-known/",
		"/v1/oauth/", "/delta-sharing/", "/v1/floe/namespaces/a/tables/b/"}
	methods := []string{"GET", "POST", "DELETE", "PROPFIND", "HEAD"}
	for i := range 10_000 {
		p := prefixes[i%len(prefixes)] + fmt.Sprintf("%x", rand.Uint64())
		req := httptest.NewRequest(methods[i%len(methods)], p+"?x="+fmt.Sprint(i), nil)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	reg := f.App.Metrics().Registry()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if !strings.HasPrefix(fam.GetName(), "floe_http_") {
			continue
		}
		if n := len(fam.GetMetric()); n > 60 {
			t.Errorf("%s: %d series after 10,000 random paths", fam.GetName(), n)
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "namespaces/a") || len(l.GetValue()) > 80 {
					t.Errorf("%s: raw path in label %s=%q", fam.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestAdminListenerOff: admin_listen off binds no admin listener and
// collects no metrics, and the node serves as before (with its log line).
func TestAdminListenerOff(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AdminListen = "off" })
	if u := f.App.AdminURL(); u != "" {
		t.Fatalf("admin listener bound at %s", u)
	}
	if f.App.Metrics() != nil {
		t.Fatal("metrics collected with the admin listener off")
	}
	if r := f.Do(t, "GET", "/v1/config", nil); r.Status != 200 {
		t.Fatalf("config: %d", r.Status)
	}
}

// TestAdminListenerTaken: a taken admin address fails the start with an
// error naming the setting, and leaves the other listeners unbound.
func TestAdminListenerTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	catalogLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	catalogAddr := catalogLn.Addr().String()
	catalogLn.Close()
	cfg := app.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = catalogAddr, "127.0.0.1:0", "off", taken.Addr().String()
	cfg.AuditExportInterval = 0
	a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	err = a.Start()
	if err == nil || !strings.Contains(err.Error(), "admin_listen") || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("start with the admin address taken: %v", err)
	}
	ln, err := net.Listen("tcp", catalogAddr)
	if err != nil {
		t.Fatalf("the catalog address stayed bound after the failed start: %v", err)
	}
	ln.Close()
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRequestLog: one info line per request with request id, principal,
// listener, route template, method, status and duration_ms, on the
// catalog and S3 listeners; no token, secret, signature or credential from
// headers, bodies or query strings.
func TestRequestLog(t *testing.T) {
	var logs syncBuf
	cfg := app.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "off", "off"
	cfg.AuditExportInterval = 0
	cfg.Maintenance = false
	const secret = "log-test-secret-0123456789"
	cfg.BootstrapCredential = "logtest:" + secret
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	tok, err := a.AdminToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, url, body string, hdr ...string) int {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	do("POST", a.URL()+"/v1/oauth/tokens", "grant_type=client_credentials&client_id=logtest&client_secret="+secret+"&scope=catalog",
		"Content-Type", "application/x-www-form-urlencoded")
	// A page token that is not one: 400, and still one line.
	do("GET", a.URL()+"/v1/floe/namespaces?pageToken=SECRETPAGE", "", "Authorization", "Bearer "+tok, "X-Request-Id", "rid-list-1")
	do("GET", a.URL()+"/v1/config?warehouse=floe&X-Amz-Signature=SECRETSIG1", "", "Authorization", "Bearer "+tok)
	do("GET", a.S3URL()+"/floe/some/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=SECRETCRED%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=SECRETSIG2", "")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `"listener":"s3"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{
		`"msg":"request","request_id":"rid-list-1","principal":"admin","listener":"rest","route":"/v1/{prefix}/namespaces","method":"GET","status":400,"duration_ms":`,
		`"listener":"oauth","route":"/v1/oauth/tokens","method":"POST","status":200,"duration_ms":`,
		`"listener":"rest","route":"/v1/config","method":"GET","status":200`,
		`"listener":"s3","route":"GetObject","method":"GET","status":`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in the log:\n%s", want, out)
		}
	}
	for _, secretText := range []string{tok, secret, "SECRETSIG", "SECRETCRED", "SECRETPAGE", "X-Amz-"} {
		if strings.Contains(out, secretText) {
			t.Errorf("the log carries %q:\n%s", secretText, out)
		}
	}
}

// TestMetricsAuditExport: with the export to system.audit on, its runs,
// the records it appended, its watermark, the time of its last success and
// the records still waiting show in /metrics.
func TestMetricsAuditExport(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuditExportInterval = 100 * time.Millisecond })
	f.CreateTable(t, "m", "t")
	for range 3 {
		if r := f.Do(t, "GET", f.P("/namespaces/m/tables/t"), nil); r.Status != 200 {
			t.Fatalf("loadTable: %d", r.Status)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := scrape(t, f)
		runs := value(got, "floe_audit_export_runs_total", map[string]string{"result": "success"})
		exported := value(got, "floe_audit_exported_records_total", nil)
		mark := value(got, "floe_audit_export_watermark", nil)
		last := value(got, "floe_audit_export_last_success_timestamp_seconds", nil)
		if runs >= 1 && exported >= 3 && mark >= exported && last > float64(time.Now().Add(-time.Minute).Unix()) && got["floe_audit_export_pending_records"] != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("export metrics: runs %v, exported %v, watermark %v, last success %v, pending present %v",
				runs, exported, mark, last, got["floe_audit_export_pending_records"] != nil)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
