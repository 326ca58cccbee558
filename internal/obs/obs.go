// Package obs carries what one HTTP request's layers learn about it (its
// route template and principal) out to the listener's middleware, which
// records the request's metrics and writes its log line. It imports no
// metrics library: domain packages call SetRoute and SetPrincipal, and the
// middleware hands each finished request to a Recorder.
package obs

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-lake/floe/internal/spans"
)

// Other is the route label of a request whose route is unknown (no route
// matched, or no layer named it): unknown paths never become labels.
const Other = "other"

// Info is what the layers of one request report about it.
type Info struct {
	// Route is the route template (e.g.
	// /v1/{prefix}/namespaces/{namespace}/tables/{table}) or operation
	// name (e.g. GetObject); "" until a layer names it.
	Route string
	// Principal is the authenticated caller; "" when unknown.
	Principal string
}

type infoKey struct{}

// WithInfo returns ctx carrying a new Info, and the Info.
func WithInfo(ctx context.Context) (context.Context, *Info) {
	in := &Info{}
	return context.WithValue(ctx, infoKey{}, in), in
}

// InfoFrom returns the Info ctx carries, or nil.
func InfoFrom(ctx context.Context) *Info {
	in, _ := ctx.Value(infoKey{}).(*Info)
	return in
}

// SetRoute names the route of the request ctx belongs to (a template or
// an operation name, never a raw path). It does nothing without an Info.
func SetRoute(ctx context.Context, route string) {
	if in := InfoFrom(ctx); in != nil {
		in.Route = route
	}
}

// SetPrincipal names the authenticated caller of the request ctx belongs
// to. It does nothing without an Info.
func SetPrincipal(ctx context.Context, principal string) {
	if in := InfoFrom(ctx); in != nil {
		in.Principal = principal
	}
}

// Request is one finished HTTP request, as a Recorder sees it. Its labels
// are bounded: Route is a template or Other, Method one of the standard
// methods or Other.
type Request struct {
	Listener, Route, Method string
	Status                  int
	Duration                time.Duration
}

// Recorder takes finished requests (metrics). Implementations must be safe
// for concurrent use.
type Recorder interface {
	ObserveRequest(Request)
}

// Options configures Middleware.
type Options struct {
	// Listener names the listener (rest, s3, mgmt, oauth, ...) of a
	// request; it may look at the path, never return it. Nil: Name.
	Listener func(*http.Request) string
	// Name is the listener's name when Listener is nil.
	Name string
	// Route names the route of a request no layer named (nil or "": Other).
	Route func(*http.Request) string
	// Recorder takes every finished request; nil: none.
	Recorder Recorder
	// Logger receives one info line per request; nil: none.
	Logger *slog.Logger
	// Tracer starts one server span per request, continuing a W3C
	// traceparent the request carries; nil: no tracing.
	Tracer trace.Tracer
}

// Middleware serves next, then records the request and logs one line at
// info: request_id, principal, listener, route, method, status and
// duration_ms. Nothing of the query string is logged (pre-signed URLs
// carry X-Amz-Signature and X-Amz-Credential there), nor any header.
func Middleware(next http.Handler, o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, in := WithInfo(r.Context())
		var span trace.Span
		if o.Tracer != nil {
			ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = o.Tracer.Start(ctx, "HTTP "+Method(r.Method), trace.WithSpanKind(trace.SpanKindServer))
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		d := time.Since(start)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		route := in.Route
		if route == "" && o.Route != nil {
			route = o.Route(r)
		}
		if route == "" {
			route = Other
		}
		listener := o.Name
		if o.Listener != nil {
			listener = o.Listener(r)
		}
		q := Request{Listener: listener, Route: route, Method: Method(r.Method), Status: status, Duration: d}
		if o.Recorder != nil {
			o.Recorder.ObserveRequest(q)
		}
		if span != nil {
			endRequestSpan(span, w.Header(), in, q)
		}
		if o.Logger != nil && o.Logger.Enabled(ctx, slog.LevelInfo) {
			rid := requestID(w.Header())
			attrs := make([]slog.Attr, 0, 7)
			attrs = append(attrs, slog.String("request_id", rid))
			if in.Principal != "" {
				attrs = append(attrs, slog.String("principal", in.Principal))
			}
			attrs = append(attrs, slog.String("listener", q.Listener), slog.String("route", q.Route),
				slog.String("method", q.Method), slog.Int("status", status),
				slog.Float64("duration_ms", float64(d.Microseconds())/1000))
			o.Logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		}
	})
}

// requestID is the request id a layer put in the answer's headers.
func requestID(h http.Header) string {
	if rid := h.Get("X-Request-Id"); rid != "" {
		return rid
	}
	return h.Get("X-Amz-Request-Id")
}

// endRequestSpan names a request's span after its route and sets its
// attributes: method, route, status, listener, request id, principal.
func endRequestSpan(span trace.Span, h http.Header, in *Info, q Request) {
	if span.IsRecording() {
		span.SetName(q.Method + " " + q.Route)
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs, attribute.String("http.request.method", q.Method), attribute.String("http.route", q.Route),
			attribute.Int("http.response.status_code", q.Status), spans.AttrListener.String(q.Listener),
			spans.AttrRequestID.String(requestID(h)))
		if in.Principal != "" {
			attrs = append(attrs, spans.AttrPrincipal.String(in.Principal))
		}
		span.SetAttributes(attrs...)
		if q.Status >= 500 {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}

// Method returns m when it is a standard HTTP method, else Other.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions:
		return m
	}
	return Other
}

// StatusLabel is the status code as a label value ("200"); codes outside
// 100..599 are "other".
func StatusLabel(code int) string {
	if code < 100 || code > 599 {
		return Other
	}
	return strconv.Itoa(code)
}

// TemplateFrom returns a ServeMux pattern's path ("GET /v1/{prefix}" →
// "/v1/{prefix}"), for layers that route with a ServeMux.
func TemplateFrom(pattern string) string {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		return p
	}
	return pattern
}

// recorder remembers the status a handler answered with.
type recorder struct {
	http.ResponseWriter
	status int
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 && code >= 200 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	return rw.ResponseWriter.Write(b)
}

// Flush passes a flush on (streaming responses).
func (rw *recorder) Flush() {
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ReadFrom keeps the underlying writer's io.ReaderFrom (sendfile).
func (rw *recorder) ReadFrom(src io.Reader) (int64, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	return io.Copy(rw.ResponseWriter, src)
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
