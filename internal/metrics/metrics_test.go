package metrics

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floe-lake/floe/internal/obs"
)

// TestNilIsNoOp: every recorder is safe on a nil *Metrics.
func TestNilIsNoOp(t *testing.T) {
	var m *Metrics
	m.ObserveRequest(obs.Request{Listener: "rest", Route: "x", Method: "GET", Status: 200})
	m.Commit(CommitSuccess)
	m.CredentialsVended("read", false)
	m.S3Bytes(1, 2)
	m.SQLQuery("success", 3)
	m.MaintenanceRun("compact", nil, time.Second)
	m.AuditWriteLag(time.Millisecond)
	m.StoreQuery("read", time.Millisecond)
	m.Cache("x", true)
	m.MetadataCache(false)
	if m.Registry() != nil {
		t.Fatal("a nil Metrics has a registry")
	}
}

// TestRecorders: each recorder moves its series; label values outside the
// documented sets collapse.
func TestRecorders(t *testing.T) {
	m := New()
	m.ObserveRequest(obs.Request{Listener: "rest", Route: "/v1/config", Method: "GET", Status: 200, Duration: 3 * time.Millisecond})
	m.ObserveRequest(obs.Request{Listener: "rest", Route: "/v1/config", Method: "GET", Status: 200, Duration: time.Millisecond})
	m.Commit(CommitSuccess)
	m.Commit(CommitConflict)
	m.Commit(CommitRetry)
	m.Commit("weird")
	m.CredentialsVended("read", false)
	m.CredentialsVended("read", true)
	m.CredentialsVended("root", false)
	m.S3Bytes(100, 0)
	m.S3Bytes(-5, 7)
	m.SQLQuery("success", 10)
	m.SQLQuery("denied", 0)
	m.SQLQuery("exotic", 5)
	m.MaintenanceRun("compact", nil, time.Second)
	m.MaintenanceRun("compact", errors.New("x"), time.Second)
	m.AuditWriteLag(20 * time.Millisecond)
	m.StoreQuery("swap pointers", time.Millisecond)
	m.MetadataCache(true)
	m.NetworkDenied("sql")
	m.NetworkDenied("mars")
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.httpRequests.WithLabelValues("rest", "/v1/config", "GET", "200")), 2, "requests"},
		{testutil.ToFloat64(m.commits.WithLabelValues("success")), 1, "commit success"},
		{testutil.ToFloat64(m.commits.WithLabelValues("conflict")), 1, "commit conflict"},
		{testutil.ToFloat64(m.commits.WithLabelValues("retry")), 1, "commit retry"},
		{testutil.ToFloat64(m.commits.WithLabelValues("error")), 1, "commit error (unknown result)"},
		{testutil.ToFloat64(m.vended.WithLabelValues("read")), 2, "vended read"},
		{testutil.ToFloat64(m.vended.WithLabelValues("other")), 1, "vended other"},
		{testutil.ToFloat64(m.cache.WithLabelValues(CacheVendedCredentials, "hit")), 1, "credential reuse"},
		{testutil.ToFloat64(m.cache.WithLabelValues(CacheVendedCredentials, "miss")), 2, "credential mint"},
		{testutil.ToFloat64(m.cache.WithLabelValues(CacheTableMetadata, "hit")), 1, "metadata hit"},
		{testutil.ToFloat64(m.s3In), 100, "s3 in"},
		{testutil.ToFloat64(m.s3Out), 7, "s3 out"},
		{testutil.ToFloat64(m.sqlQueries.WithLabelValues("success")), 1, "sql success"},
		{testutil.ToFloat64(m.sqlQueries.WithLabelValues("other")), 1, "sql other"},
		{testutil.ToFloat64(m.sqlRows), 15, "sql rows"},
		{testutil.ToFloat64(m.maintRuns.WithLabelValues("compact", "error")), 1, "maintenance error"},
		{testutil.ToFloat64(m.netDenied.WithLabelValues("sql")), 1, "network denied sql"},
		{testutil.ToFloat64(m.netDenied.WithLabelValues("other")), 1, "network denied, unknown listener"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, name := range []string{"floe_http_requests_total", "floe_http_request_duration_seconds_bucket", "floe_catalog_commits_total",
		"floe_credentials_vended_total", "floe_s3_bytes_total", "floe_sql_queries_total", "floe_sql_rows_total",
		"floe_maintenance_runs_total", "floe_maintenance_run_duration_seconds", "floe_audit_write_lag_seconds",
		"floe_store_query_duration_seconds", "floe_cache_requests_total", "floe_network_denied_total", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("no %s in /metrics", name)
		}
	}
	// Two registries do not share series.
	if testutil.ToFloat64(New().commits.WithLabelValues("success")) != 0 {
		t.Error("a new registry starts with counts")
	}
}

// TestHTTPSeriesBound: a caller that passes unbounded routes is cut off at
// MaxHTTPSeries series; later routes count as "other".
func TestHTTPSeriesBound(t *testing.T) {
	m := New()
	for i := range MaxHTTPSeries + 5000 {
		m.ObserveRequest(obs.Request{Listener: "rest", Route: fmt.Sprintf("/r/%d", i), Method: "GET", Status: 200})
	}
	n := testutil.CollectAndCount(m.httpRequests)
	if n > MaxHTTPSeries+1 {
		t.Fatalf("%d series, bound %d", n, MaxHTTPSeries)
	}
	if n < MaxHTTPSeries {
		t.Fatalf("only %d series: the bound was hit early", n)
	}
	if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("other", "other", "other", "other")); got != 5000 {
		t.Fatalf("requests past the bound: %v, want 5000", got)
	}
}

// BenchmarkObserveRequest is the cost of counting and timing one request
// (a series seen before), from many goroutines.
func BenchmarkObserveRequest(b *testing.B) {
	m := New()
	q := obs.Request{Listener: "rest", Route: "/v1/{prefix}/namespaces/{namespace}/tables/{table}", Method: "GET", Status: 200, Duration: time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveRequest(q)
		}
	})
}

// TestDocsNameEveryMetric: docs/operations.md lists every floe_ metric the
// registry has, and docs/grafana-floe.json queries only metrics that exist
// (and every one of them).
func TestDocsNameEveryMetric(t *testing.T) {
	m := New()
	// One observation each, so that every vector has a series to gather.
	m.ObserveRequest(obs.Request{Listener: "rest", Route: "r", Method: "GET", Status: 200})
	m.Commit(CommitSuccess)
	m.CredentialsVended("read", false)
	m.S3Bytes(1, 1)
	m.SQLQuery("success", 1)
	m.MaintenanceRun("compact", nil, time.Second)
	m.AuditWriteLag(time.Millisecond)
	m.AuditExport(3, 42, time.Now(), nil)
	m.PendingAuditRecords(func() int { return 7 })
	m.StoreQuery("read", time.Millisecond)
	m.NetworkDenied("rest")
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile("../../docs/grafana-floe.json")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
		if !strings.HasPrefix(f.GetName(), "floe_") {
			continue
		}
		if !strings.Contains(string(ops), "`"+f.GetName()+"`") {
			t.Errorf("docs/operations.md does not list %s", f.GetName())
		}
		if !strings.Contains(string(dash), f.GetName()) {
			t.Errorf("the dashboard does not show %s", f.GetName())
		}
	}
	for _, name := range regexp.MustCompile(`\b((?:floe|go|process)_[a-z0-9_]+)`).FindAllString(string(dash), -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !have[base] {
			t.Errorf("the dashboard queries %s, which the registry does not have", name)
		}
	}
}
