package app_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// startTraced starts a Floe whose spans go to the returned recorder.
func startTraced(t *testing.T) (*testkit.Floe, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	f := testkit.Start(t, func(c *app.Config) { c.SpanProcessor = rec })
	return f, rec
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (string, bool) {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value.String(), true
		}
	}
	return "", false
}

// descendants are the ended spans under root (any depth).
func descendants(all []sdktrace.ReadOnlySpan, root trace.SpanID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	parents := map[trace.SpanID]bool{root: true}
	for changed := true; changed; {
		changed = false
		for _, s := range all {
			if parents[s.Parent().SpanID()] && !parents[s.SpanContext().SpanID()] {
				parents[s.SpanContext().SpanID()] = true
				out = append(out, s)
				changed = true
			}
		}
	}
	return out
}

func names(ss []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}

// TestTracingLoadTable: a loadTable is one server span named after its
// route, with the request id and principal as attributes, continuing the
// traceparent the client sent, and with child spans for the authz check
// and the store reads it made.
func TestTracingLoadTable(t *testing.T) {
	f, rec := startTraced(t)
	f.CreateTable(t, "m", "t")
	// createTable writes the metadata file (object I/O) and swaps the
	// pointer (a store transaction) under its request span.
	var create sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "POST /v1/{prefix}/namespaces/{namespace}/tables" {
			create = s
		}
	}
	if create == nil {
		t.Fatalf("no createTable span among %v", names(rec.Ended()))
	}
	kids := names(descendants(rec.Ended(), create.SpanContext().SpanID()))
	for _, want := range []string{"object.put", "store.write swap pointers", "authz.check"} {
		if !slices.Contains(kids, want) {
			t.Errorf("no %s span under createTable; children: %v", want, kids)
		}
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := f.Do(t, "GET", f.P("/namespaces/m/tables/t"), nil, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if r.Status != 200 {
		t.Fatalf("loadTable: %d %s", r.Status, r.Body)
	}
	rid := r.Header.Get("X-Request-Id")
	if rid == "" {
		t.Fatal("no X-Request-Id")
	}
	all := rec.Ended()
	var root sdktrace.ReadOnlySpan
	for _, s := range all {
		if v, _ := attr(s, "floe.request_id"); v == rid {
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no span with request id %s among %v", rid, names(all))
	}
	if got, want := root.Name(), "GET "+loadTableRoute; got != want {
		t.Errorf("span name %q, want %q", got, want)
	}
	if root.SpanKind() != trace.SpanKindServer {
		t.Errorf("span kind %v", root.SpanKind())
	}
	if got := root.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the caller's %s", got, traceID)
	}
	if got := root.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("parent span %s, want the caller's", got)
	}
	for k, want := range map[attribute.Key]string{"http.route": loadTableRoute, "http.response.status_code": "200",
		"floe.principal": "admin", "floe.listener": "rest"} {
		if v, _ := attr(root, k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	kids = names(descendants(all, root.SpanContext().SpanID()))
	for _, want := range []string{"authz.check", "store.read"} {
		if !slices.Contains(kids, want) {
			t.Errorf("no %s span under loadTable; children: %v", want, kids)
		}
	}
	// Nothing secret: no attribute carries the bearer token.
	tok := f.Token(t)
	for _, s := range all {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), tok) {
				t.Errorf("span %s attribute %s holds the token", s.Name(), a.Key)
			}
		}
	}
}

// TestTracingSQL: a SQL query is a statement span with plan, table
// resolution, file planning and file read spans under it.
func TestTracingSQL(t *testing.T) {
	f, rec := startTraced(t)
	ctx := context.Background()
	u := url.URL{Scheme: "postgres", User: url.UserPassword("admin", f.Token(t)), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{"CREATE SCHEMA s", "CREATE TABLE s.t (a INT, b VARCHAR)", "INSERT INTO s.t VALUES (1, 'x'), (2, 'y')"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rec.Reset()
	// The extended protocol (pgx's default): prepare and execute spans.
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM s.t WHERE a > $1", 0).Scan(&n); err != nil || n != 2 {
		t.Fatalf("count: %d %v", n, err)
	}
	all := rec.Ended()
	var roots []sdktrace.ReadOnlySpan
	for _, s := range all {
		if strings.HasPrefix(s.Name(), "sql.") && !s.Parent().IsValid() {
			roots = append(roots, s)
			if v, _ := attr(s, "db.operation.name"); v != "SELECT" {
				t.Errorf("%s: db.operation.name %q", s.Name(), v)
			}
		}
	}
	var under []string
	for _, r := range roots {
		under = append(under, names(descendants(all, r.SpanContext().SpanID()))...)
	}
	for _, want := range []string{"sql.plan", "sql.resolve_table", "sql.plan_files", "sql.read_file"} {
		if !slices.Contains(under, want) {
			t.Errorf("no %s span under the statement spans %v; under them: %v", want, names(roots), under)
		}
	}
	// The simple protocol: one sql.query span.
	rec.Reset()
	if _, err := c.Exec(ctx, "SELECT a FROM s.t", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if got := names(rec.Ended()); !slices.Contains(got, "sql.query") || !slices.Contains(got, "sql.plan") {
		t.Errorf("simple query spans: %v", got)
	}
	// No SQL text in any attribute (literals may be data).
	for _, s := range all {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), "s.t") {
				t.Errorf("span %s attribute %s holds SQL text: %q", s.Name(), a.Key, a.Value.String())
			}
		}
	}
}

// TestTracingOff: without an endpoint no tracer is made, and nothing
// records a span, not even a process-wide OpenTelemetry provider (Floe
// never consults the global one), whatever traceparent comes in.
func TestTracingOff(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	f := testkit.Start(t, func(c *app.Config) {
		c.Getenv = func(string) string { return "" }
	})
	f.CreateTable(t, "m", "t")
	if f.App.Tracing() {
		t.Fatal("tracing on without an endpoint")
	}
	if r := f.Do(t, "GET", f.P("/namespaces/m/tables/t"), nil, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); r.Status != 200 {
		t.Fatalf("loadTable: %d", r.Status)
	}
	if got := rec.Ended(); len(got) != 0 {
		t.Errorf("%d spans recorded with tracing off: %v", len(got), names(got))
	}
}
