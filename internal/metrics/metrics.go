// Package metrics owns a Floe node's Prometheus registry and the typed
// recorders the rest of the node reports to. Domain packages never import
// it: they take a func hook or a narrow interface, which the app package
// binds to a *Metrics. Every method is safe on a nil *Metrics (it does
// nothing), so nil is the no-op recorder.
//
// Label values are bounded: routes are templates or operation names (see
// package obs), results and directions come from fixed sets, job and cache
// names from the code.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floe-lake/floe/internal/obs"
)

// Results of a catalog commit (floe_catalog_commits_total's result label).
const (
	// CommitSuccess: the commit was applied.
	CommitSuccess = "success"
	// CommitConflict: the commit was refused for a concurrent change or a
	// failed requirement (the client gets 409).
	CommitConflict = "conflict"
	// CommitRetry: the pointer swap lost a race and the commit is being
	// re-applied on fresh metadata (not an outcome: one per retry).
	CommitRetry = "retry"
	// CommitError: the commit failed otherwise.
	CommitError = "error"
)

// durationBuckets are the request and job latency buckets, in seconds:
// 0.5ms to 60s.
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics is one node's registry and recorders.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	// children caches the label children of each request series. The
	// label sets are bounded by the callers (route templates); as a
	// backstop against a caller that is not, past MaxHTTPSeries series
	// new routes count as "other".
	children sync.Map // httpKey → *httpChild
	series   atomic.Int64

	commits     *prometheus.CounterVec
	vended      *prometheus.CounterVec
	s3Bytes     *prometheus.CounterVec
	s3In, s3Out prometheus.Counter
	sqlQueries  *prometheus.CounterVec
	sqlRows     prometheus.Counter
	maintRuns   *prometheus.CounterVec
	maintDur    *prometheus.HistogramVec
	auditLag    prometheus.Histogram
	exportRuns  *prometheus.CounterVec
	exported    prometheus.Counter
	exportMark  prometheus.Gauge
	exportLast  prometheus.Gauge
	netDenied   *prometheus.CounterVec
	storeDur    *prometheus.HistogramVec
	cache       *prometheus.CounterVec
}

type httpKey struct {
	listener, route, method string
	status                  int
}

type httpChild struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// New returns a registry with Floe's metrics and the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_http_requests_total",
		Help: "HTTP requests served, by listener, route template (or S3 operation), method and status code."},
		[]string{"listener", "route", "method", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_http_request_duration_seconds",
		Help: "Time to serve an HTTP request, by listener, route template (or S3 operation) and method.", Buckets: durationBuckets},
		[]string{"listener", "route", "method"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_catalog_commits_total",
		Help: "Table commits (REST, SQL, ingest, maintenance) by result: success, conflict, retry (a lost race re-applied), error."},
		[]string{"result"})
	m.vended = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_credentials_vended_total",
		Help: "Storage credentials handed out in answers (new or reused), by access (read, read-write, notice, read-objects, read-listed, read-files)."}, []string{"access"})
	m.s3Bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_s3_bytes_total",
		Help: "Bytes of request and response bodies on the embedded S3 endpoint, by direction (in: uploads, out: downloads)."},
		[]string{"direction"})
	m.s3In, m.s3Out = m.s3Bytes.WithLabelValues("in"), m.s3Bytes.WithLabelValues("out")
	m.sqlQueries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_sql_queries_total",
		Help: "SQL statements run on the SQL endpoint, by result: success, failure, denied."}, []string{"result"})
	m.sqlRows = prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_sql_rows_total",
		Help: "Rows returned or changed by successful SQL statements."})
	m.maintRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_maintenance_runs_total",
		Help: "Maintenance job runs, by job and result (success, error)."}, []string{"job", "result"})
	m.maintDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_maintenance_run_duration_seconds",
		Help: "Duration of maintenance job runs, by job.", Buckets: durationBuckets}, []string{"job"})
	m.auditLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_audit_write_lag_seconds",
		Help: "Time from an audit event being recorded to its batch being stored.", Buckets: durationBuckets})
	m.exportRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_audit_export_runs_total",
		Help: "Background exports of the audit log to system.audit on this node, by result (success, error)."}, []string{"result"})
	m.exported = prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_audit_exported_records_total",
		Help: "Audit records this node appended to system.audit."})
	m.exportMark = prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_audit_export_watermark",
		Help: "Sequence number of the newest audit record in system.audit, as of this node's last export."})
	m.exportLast = prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_audit_export_last_success_timestamp_seconds",
		Help: "Unix time of this node's last successful export of the audit log (time() minus it is the export's lag)."})
	m.storeDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_store_query_duration_seconds",
		Help: "Latency of metadata store operations, by operation.", Buckets: durationBuckets}, []string{"op"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_cache_requests_total",
		Help: "Lookups in Floe's main caches, by cache and result (hit, miss)."}, []string{"cache", "result"})
	m.netDenied = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_network_denied_total",
		Help: "Requests and connections refused by a listener's network allowlist, by listener (rest, s3, sql)."}, []string{"listener"})
	for _, c := range []prometheus.Collector{m.httpRequests, m.httpDuration, m.commits, m.vended, m.s3Bytes, m.sqlQueries,
		m.sqlRows, m.maintRuns, m.maintDur, m.auditLag, m.exportRuns, m.exported, m.exportMark, m.exportLast, m.storeDur, m.cache, m.netDenied} {
		f(c)
	}
	return m
}

// MaxHTTPSeries bounds the label sets of the HTTP request metrics: past
// it, requests of a route not yet seen count under route "other".
const MaxHTTPSeries = 4096

// Registry returns the registry (nil on a nil *Metrics).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ObserveRequest records one finished HTTP request (obs.Recorder).
func (m *Metrics) ObserveRequest(q obs.Request) {
	if m == nil {
		return
	}
	k := httpKey{q.Listener, q.Route, q.Method, q.Status}
	c, ok := m.children.Load(k)
	if !ok {
		if m.series.Load() >= MaxHTTPSeries {
			k.route = obs.Other
			if c, ok = m.children.Load(k); !ok {
				k.listener, k.method, k.status = obs.Other, obs.Other, 0
				c, ok = m.children.Load(k)
			}
		}
		if !ok {
			m.series.Add(1)
			var loaded bool
			c, loaded = m.children.LoadOrStore(k, &httpChild{
				count:    m.httpRequests.WithLabelValues(k.listener, k.route, k.method, obs.StatusLabel(k.status)),
				duration: m.httpDuration.WithLabelValues(k.listener, k.route, k.method),
			})
			if loaded {
				m.series.Add(-1)
			}
		}
	}
	ch := c.(*httpChild)
	ch.count.Inc()
	ch.duration.Observe(q.Duration.Seconds())
}

// Commit records a commit's result (CommitSuccess, CommitConflict,
// CommitRetry or CommitError).
func (m *Metrics) Commit(result string) {
	if m == nil {
		return
	}
	switch result {
	case CommitSuccess, CommitConflict, CommitRetry:
	default:
		result = CommitError
	}
	m.commits.WithLabelValues(result).Inc()
}

// MetadataCache records a lookup of parsed table or view metadata
// (catalog.Observer).
func (m *Metrics) MetadataCache(hit bool) { m.Cache(CacheTableMetadata, hit) }

// NetworkDenied records a request or connection a listener's network
// allowlist refused (these never reach the request metrics). listener is
// one of rest, s3, sql; anything else counts as "other".
func (m *Metrics) NetworkDenied(listener string) {
	if m == nil {
		return
	}
	switch listener {
	case "rest", "s3", "sql":
	default:
		listener = obs.Other
	}
	m.netDenied.WithLabelValues(listener).Inc()
}

// CredentialsVended records one storage credential handed out in an
// answer, with its access (read, read-write, notice, read-objects,
// read-listed; anything else counts as "other"), and whether it was a
// reused one (cache "vended_credentials": hit) or newly minted (miss).
func (m *Metrics) CredentialsVended(access string, reused bool) {
	if m == nil {
		return
	}
	switch access {
	case "read", "read-write", "notice", "read-objects", "read-listed":
	default:
		access = obs.Other
	}
	m.vended.WithLabelValues(access).Inc()
	m.Cache(CacheVendedCredentials, reused)
}

// Names of the caches in floe_cache_requests_total.
const (
	// CacheVendedCredentials: storage credentials reused for the same
	// token, table and access within a minute.
	CacheVendedCredentials = "vended_credentials"
	// CacheTableMetadata: parsed table metadata files.
	CacheTableMetadata = "table_metadata"
)

// S3Bytes records the body bytes of one S3 request and its response.
func (m *Metrics) S3Bytes(in, out int64) {
	if m == nil {
		return
	}
	if in > 0 {
		m.s3In.Add(float64(in))
	}
	if out > 0 {
		m.s3Out.Add(float64(out))
	}
}

// SQLQuery records one SQL statement: result "success", "failure" or
// "denied", and the rows a successful one returned or changed.
func (m *Metrics) SQLQuery(result string, rows int64) {
	if m == nil {
		return
	}
	switch result {
	case "success", "failure", "denied":
	default:
		result = obs.Other
	}
	m.sqlQueries.WithLabelValues(result).Inc()
	if rows > 0 {
		m.sqlRows.Add(float64(rows))
	}
}

// MaintenanceRun records one maintenance job run.
func (m *Metrics) MaintenanceRun(job string, err error, d time.Duration) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.maintRuns.WithLabelValues(job, result).Inc()
	m.maintDur.WithLabelValues(job).Observe(d.Seconds())
}

// AuditWriteLag records how long an audit event waited to be stored.
func (m *Metrics) AuditWriteLag(d time.Duration) {
	if m == nil {
		return
	}
	m.auditLag.Observe(d.Seconds())
}

// AuditExport records one background export of the audit log: the
// records it appended and the watermark after it, or its failure.
func (m *Metrics) AuditExport(records, watermark int64, at time.Time, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.exportRuns.WithLabelValues("error").Inc()
		return
	}
	m.exportRuns.WithLabelValues("success").Inc()
	m.exported.Add(float64(records))
	m.exportMark.Set(float64(watermark))
	m.exportLast.Set(float64(at.UnixNano()) / 1e9)
}

// PendingAuditRecords registers a gauge of the audit records stored but
// not yet exported to system.audit that this node holds (pending returns
// their count), read at each scrape.
func (m *Metrics) PendingAuditRecords(pending func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_audit_export_pending_records",
		Help: "Audit records stored on this node and not yet exported to system.audit."}, func() float64 { return float64(pending()) }))
}

// StoreQuery records the latency of one metadata store operation (op is
// a name from the code, e.g. "swap_pointers").
func (m *Metrics) StoreQuery(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.storeDur.WithLabelValues(op).Observe(d.Seconds())
}

// Cache records a lookup in the named cache.
func (m *Metrics) Cache(cache string, hit bool) {
	if m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.WithLabelValues(cache, result).Inc()
}
