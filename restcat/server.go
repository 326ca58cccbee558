// Package restcat serves the Iceberg REST catalog API over the catalog
// domain: it decodes requests, authenticates the bearer token, calls
// package catalog, and maps domain errors to the spec's ErrorModel.
package restcat

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/obs"
)

// DefaultMaxBodyBytes bounds request bodies (16 MiB).
const DefaultMaxBodyBytes = 16 << 20

// Verifier checks bearer tokens.
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Claims, error)
}

// IdempotencyStore keeps final responses of mutating requests by key.
type IdempotencyStore interface {
	LoadIdempotent(ctx context.Context, key string) (status int, header string, body []byte, ok bool, err error)
	SaveIdempotent(ctx context.Context, key string, status int, header string, body []byte) error
}

// Options configures the handler.
type Options struct {
	// DefaultWarehouse answers /v1/config when the client names none.
	DefaultWarehouse string
	// Auth verifies bearer tokens. Nil disables authentication (local demo only).
	Auth Verifier
	// Idempotency stores Idempotency-Key replays; nil disables the feature.
	Idempotency IdempotencyStore
	// IdempotencyLifetime is advertised in /v1/config (default 30 minutes).
	IdempotencyLifetime time.Duration
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Foreign returns the foreign (federated) catalog served as warehouse
	// name, or nil when name is not one (nil: none).
	Foreign func(name string) Foreign
	// Vending hands out storage access with tables (nil: config stays
	// empty and the credentials and sign endpoints answer 406).
	Vending *Vending
	// PublicURL is the catalog's base URL as clients reach it, advertised
	// as the remote signer's URI ("" = from the request's Host).
	PublicURL string
	// Authz decides what authenticated callers may do; nil leaves every
	// authenticated caller unrestricted (token scopes still apply).
	Authz Authorizer
	// Audit, if set, records one event per request: the operation, its
	// resource, the caller and the outcome, including denials.
	Audit func(ctx context.Context, e audit.Event)
	// Planning, if set, turns on server-side scan planning (planTableScan
	// and its companions); nil leaves those routes out of /v1/config.
	Planning *Planning
	// Logger receives structured logs.
	Logger *slog.Logger
}

// Handler is the Iceberg REST catalog HTTP handler.
type Handler struct {
	cat  *catalog.Catalog
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	keys *keyLocks

	whCache warehouseCache
	ids     *httperr.RequestIDs
	plans   *planner // nil: no scan planning
}

// New returns a handler serving cat.
func New(cat *catalog.Catalog, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.IdempotencyLifetime <= 0 {
		opts.IdempotencyLifetime = 30 * time.Minute
	}
	h := &Handler{cat: cat, opts: opts, log: opts.Logger, mux: http.NewServeMux(), keys: newKeyLocks(), ids: httperr.NewRequestIDs(time.Now)}
	if opts.Planning != nil {
		var vendTTL time.Duration
		if opts.Vending != nil {
			vendTTL = opts.Vending.TTL
		}
		h.plans = newPlanner(*opts.Planning, vendTTL)
	}
	h.routes()
	return h
}

// route is one REST operation: its method and path pattern, and whether it
// mutates state (and so honours Idempotency-Key).
type route struct {
	method, path string
	mutates      bool
	fn           func(http.ResponseWriter, *http.Request) error
	// name is the operation's name in the spec, e.g. "loadTable"; audit
	// events are "catalog.<name>".
	name string
}

func (h *Handler) table() []route {
	const ns = "/v1/{prefix}/namespaces/{namespace}"
	return append([]route{
		{"GET", "/v1/{prefix}/namespaces", false, h.listNamespaces, "listNamespaces"},
		{"POST", "/v1/{prefix}/namespaces", true, h.createNamespace, "createNamespace"},
		{"GET", ns, false, h.loadNamespace, "loadNamespace"},
		{"HEAD", ns, false, h.namespaceExists, "namespaceExists"},
		{"DELETE", ns, true, h.dropNamespace, "dropNamespace"},
		{"POST", ns + "/properties", true, h.updateNamespaceProperties, "updateNamespaceProperties"},
		{"GET", ns + "/tables", false, h.listTables, "listTables"},
		{"POST", ns + "/tables", true, h.createTable, "createTable"},
		{"POST", ns + "/register", true, h.registerTable, "registerTable"},
		{"GET", ns + "/tables/{table}", false, h.loadTable, "loadTable"},
		{"POST", ns + "/tables/{table}", true, h.commitTable, "commitTable"},
		{"DELETE", ns + "/tables/{table}", true, h.dropTable, "dropTable"},
		{"HEAD", ns + "/tables/{table}", false, h.tableExists, "tableExists"},
		{"POST", ns + "/tables/{table}/unregister", true, h.unregisterTable, "unregisterTable"},
		{"POST", ns + "/tables/{table}/metrics", false, h.reportMetrics, "reportMetrics"},
		{"GET", ns + "/tables/{table}/credentials", false, h.loadCredentials, "loadCredentials"},
		{"POST", ns + "/tables/{table}/sign", false, h.signRequest, "signRequest"},
		{"POST", "/v1/{prefix}/tables/rename", true, h.renameTable, "renameTable"},
		{"POST", "/v1/{prefix}/transactions/commit", true, h.commitTransaction, "commitTransaction"},
		{"GET", ns + "/views", false, h.listViews, "listViews"},
		{"POST", ns + "/views", true, h.createView, "createView"},
		{"GET", ns + "/views/{view}", false, h.loadView, "loadView"},
		{"POST", ns + "/views/{view}", true, h.replaceView, "replaceView"},
		{"DELETE", ns + "/views/{view}", true, h.dropView, "dropView"},
		{"HEAD", ns + "/views/{view}", false, h.viewExists, "viewExists"},
		{"POST", "/v1/{prefix}/views/rename", true, h.renameView, "renameView"},
		{"POST", ns + "/register-view", true, h.registerView, "registerView"},
		{"GET", ns + "/functions", false, h.listFunctions, "listFunctions"},
		{"GET", ns + "/functions/{function}", false, h.loadFunction, "loadFunction"},
	}, h.planRoutes(ns)...)
}

// specPath is a route's path as the spec and /v1/config spell it (Go's
// ServeMux wildcards cannot contain "-").
func specPath(p string) string { return strings.ReplaceAll(p, "{planid}", "{plan-id}") }

func (h *Handler) routes() {
	h.mux.Handle("GET /v1/config", h.wrap(route{method: "GET", path: "/v1/config", fn: h.config, name: "getConfig"}))
	for _, rt := range h.table() {
		h.mux.Handle(rt.method+" "+rt.path, h.wrap(rt))
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, h.log, floe.E(floe.NotFound, "route", "no route for %s %s", r.Method, r.URL.Path))
	})
}

// Endpoints lists the operations this server implements, in /v1/config form.
func (h *Handler) Endpoints() []string {
	rs := h.table()
	out := make([]string, 0, len(rs))
	for _, rt := range rs {
		out = append(out, rt.method+" "+specPath(rt.path))
	}
	return out
}

// readEndpoints lists the operations that change nothing: what a foreign
// catalog serves.
func (h *Handler) readEndpoints() []string {
	var out []string
	for _, rt := range h.table() {
		if !rt.mutates && rt.name != "signRequest" && !isPlanRoute(rt.name) && !isFunctionRoute(rt.name) {
			out = append(out, rt.method+" "+rt.path)
		}
	}
	return out
}

// Operations lists the names of the operations this server implements
// (as in the spec, e.g. "loadTable"), excluding getConfig.
func (h *Handler) Operations() []string {
	rs := h.table()
	out := make([]string, 0, len(rs))
	for _, rt := range rs {
		out = append(out, rt.name)
	}
	return out
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := h.ids.Of(w, r)
	r = r.WithContext(withRequestID(r.Context(), rid))
	h.mux.ServeHTTP(w, r)
}

// wrap adds authentication, the caller's authorization context, body
// limits, panic recovery, idempotency, error mapping and the audit event
// around one operation.
func (h *Handler) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		obs.SetRoute(r.Context(), rt.path)
		rec := &statusRecorder{StatusRecorder: httperr.StatusRecorder{ResponseWriter: w}}
		w = rec
		defer func() {
			if p := recover(); p != nil {
				h.log.ErrorContext(r.Context(), "panic in handler", "panic", p, "path", r.URL.Path)
				rec.err = floe.Wrap(floe.Internal, nil, "internal error")
				writeError(w, r, h.log, rec.err)
			}
			h.audit(r, rt, rec, start)
		}()
		ctx := r.Context()
		var claims auth.Claims
		if h.opts.Auth != nil {
			tok, ok := httperr.Bearer(r)
			if !ok {
				rec.err = floe.E(floe.Unauthenticated, "token", "missing bearer token: authenticate at /v1/oauth/tokens and send Authorization: Bearer <token>")
				writeError(w, r, h.log, rec.err)
				return
			}
			var err error
			claims, err = h.opts.Auth.Verify(ctx, tok)
			if err != nil {
				rec.err = err
				writeError(w, r, h.log, err)
				return
			}
			ctx = auth.WithClaims(ctx, claims)
			rec.claims = &claims
			obs.SetPrincipal(ctx, claims.Principal)
			// Scopes: catalog:read never changes anything (routes that mutate say so).
			if err := claims.Permit(rt.mutates, r.Method+" "+rt.path); err != nil {
				rec.err = err
				writeError(w, r, h.log, err)
				return
			}
		}
		r = r.WithContext(h.withCaller(ctx, claims, h.opts.Auth != nil))
		r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
		var err error
		if f := h.foreign(r); f != nil {
			err = h.serveForeign(w, r, rt, f)
		} else if key := r.Header.Get("Idempotency-Key"); rt.mutates && key != "" && h.opts.Idempotency != nil {
			err = h.idempotent(w, r, key, rt.fn)
		} else {
			err = rt.fn(w, r)
		}
		if err != nil {
			rec.err = err
			writeError(w, r, h.log, err)
		}
	})
}

// statusRecorder remembers the status and error of a response for its audit event.
type statusRecorder struct {
	httperr.StatusRecorder
	err    error
	claims *auth.Claims
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *statusRecorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// audit records the request's event: "catalog.<operation>" on its
// resource, with the outcome (success, denied, unauthenticated, failure or
// error) and, for denials and failures, the message the client got.
func (h *Handler) audit(r *http.Request, rt route, rec *statusRecorder, start time.Time) {
	if h.opts.Audit == nil {
		return
	}
	status := rec.Status
	if status == 0 {
		status = http.StatusOK
	}
	e := audit.Event{Time: start, RequestID: requestID(r.Context()), ClientAddr: httperr.ClientAddr(r),
		Action: "catalog." + rt.name, Resource: resourceOf(r), Outcome: audit.OutcomeSuccess,
		Detail: map[string]any{"method": r.Method, "status": status, "duration_ms": time.Since(start).Milliseconds()}}
	if c := rec.claims; c != nil {
		e.Principal = c.Principal
		e.Detail["token_id"] = c.TokenID
	}
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		if c.credentialID != "" {
			e.Detail["credential_id"] = c.credentialID
		}
		for k, v := range c.detail {
			e.Detail[k] = v
		}
	}
	switch {
	case status == http.StatusUnauthorized:
		e.Outcome = audit.OutcomeUnauthenticated
	case status == http.StatusForbidden:
		e.Outcome = audit.OutcomeDenied
	case status >= 500:
		e.Outcome = audit.OutcomeError
	case status >= 400:
		e.Outcome = audit.OutcomeFailure
	}
	if rec.err != nil && status < 500 {
		e.Detail["error"] = floe.PublicMessage(rec.err)
	}
	h.opts.Audit(r.Context(), e)
}

// resourceOf names what a request is about, from its path: "warehouse:w",
// "namespace:w/a.b", "table:w/a.b.t" or "view:w/a.b.v".
func resourceOf(r *http.Request) string {
	wh := r.PathValue("prefix")
	if wh == "" {
		return "catalog"
	}
	ns := r.PathValue("namespace")
	if ns == "" {
		return "warehouse:" + wh
	}
	nsKey := strings.Join(catalog.ParseNamespaceKey(ns), ".")
	if t := r.PathValue("table"); t != "" {
		return "table:" + wh + "/" + nsKey + "." + t
	}
	if v := r.PathValue("view"); v != "" {
		return "view:" + wh + "/" + nsKey + "." + v
	}
	return "namespace:" + wh + "/" + nsKey
}

type ridKey struct{}

func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ridKey{}, id)
}

func requestID(ctx context.Context) string {
	s, _ := ctx.Value(ridKey{}).(string)
	return s
}

// RequestID returns the request id carried by ctx ("" if none).
func RequestID(ctx context.Context) string { return requestID(ctx) }
