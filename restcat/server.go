// Package restcat serves the Iceberg REST catalog API over the catalog
// domain: it decodes requests, authenticates the bearer token, calls
// package catalog, and maps domain errors to the spec's ErrorModel.
package restcat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
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
	// Vending hands out storage access with tables (nil: config stays
	// empty and the credentials and sign endpoints answer 406).
	Vending *Vending
	// PublicURL is the catalog's base URL as clients reach it, advertised
	// as the remote signer's URI ("" = from the request's Host).
	PublicURL string
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
	h := &Handler{cat: cat, opts: opts, log: opts.Logger, mux: http.NewServeMux(), keys: newKeyLocks()}
	h.routes()
	return h
}

// route is one REST operation: its method and path pattern, and whether it
// mutates state (and so honours Idempotency-Key).
type route struct {
	method, path string
	mutates      bool
	fn           func(http.ResponseWriter, *http.Request) error
}

func (h *Handler) table() []route {
	const ns = "/v1/{prefix}/namespaces/{namespace}"
	return []route{
		{"GET", "/v1/{prefix}/namespaces", false, h.listNamespaces},
		{"POST", "/v1/{prefix}/namespaces", true, h.createNamespace},
		{"GET", ns, false, h.loadNamespace},
		{"HEAD", ns, false, h.namespaceExists},
		{"DELETE", ns, true, h.dropNamespace},
		{"POST", ns + "/properties", true, h.updateNamespaceProperties},
		{"GET", ns + "/tables", false, h.listTables},
		{"POST", ns + "/tables", true, h.createTable},
		{"POST", ns + "/register", true, h.registerTable},
		{"GET", ns + "/tables/{table}", false, h.loadTable},
		{"POST", ns + "/tables/{table}", true, h.commitTable},
		{"DELETE", ns + "/tables/{table}", true, h.dropTable},
		{"HEAD", ns + "/tables/{table}", false, h.tableExists},
		{"POST", ns + "/tables/{table}/unregister", true, h.unregisterTable},
		{"POST", ns + "/tables/{table}/metrics", false, h.reportMetrics},
		{"GET", ns + "/tables/{table}/credentials", false, h.loadCredentials},
		{"POST", ns + "/tables/{table}/sign", false, h.signRequest},
		{"POST", "/v1/{prefix}/tables/rename", true, h.renameTable},
		{"POST", "/v1/{prefix}/transactions/commit", true, h.commitTransaction},
		{"GET", ns + "/views", false, h.listViews},
		{"POST", ns + "/views", true, h.createView},
		{"GET", ns + "/views/{view}", false, h.loadView},
		{"POST", ns + "/views/{view}", true, h.replaceView},
		{"DELETE", ns + "/views/{view}", true, h.dropView},
		{"HEAD", ns + "/views/{view}", false, h.viewExists},
		{"POST", "/v1/{prefix}/views/rename", true, h.renameView},
		{"POST", ns + "/register-view", true, h.registerView},
	}
}

func (h *Handler) routes() {
	h.mux.Handle("GET /v1/config", h.wrap(route{method: "GET", path: "/v1/config", fn: h.config}))
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
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || len(rid) > 128 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		rid = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", rid)
	r = r.WithContext(withRequestID(r.Context(), rid))
	h.mux.ServeHTTP(w, r)
}

// wrap adds authentication, body limits, panic recovery, idempotency and
// error mapping around one operation.
func (h *Handler) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				h.log.ErrorContext(r.Context(), "panic in handler", "panic", p, "path", r.URL.Path)
				writeError(w, r, h.log, floe.Wrap(floe.Internal, nil, "internal error"))
			}
		}()
		ctx := r.Context()
		if h.opts.Auth != nil {
			tok, ok := bearer(r)
			if !ok {
				writeError(w, r, h.log, floe.E(floe.Unauthenticated, "token", "missing bearer token: authenticate at /v1/oauth/tokens and send Authorization: Bearer <token>"))
				return
			}
			claims, err := h.opts.Auth.Verify(ctx, tok)
			if err != nil {
				writeError(w, r, h.log, err)
				return
			}
			// Scopes: catalog:read never changes anything (routes that mutate say so).
			if err := claims.Permit(rt.mutates, r.Method+" "+rt.path); err != nil {
				writeError(w, r, h.log, err)
				return
			}
			ctx = auth.WithClaims(ctx, claims)
			r = r.WithContext(ctx)
		}
		r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
		var err error
		if key := r.Header.Get("Idempotency-Key"); rt.mutates && key != "" && h.opts.Idempotency != nil {
			err = h.idempotent(w, r, key, rt.fn)
		} else {
			err = rt.fn(w, r)
		}
		if err != nil {
			writeError(w, r, h.log, err)
		}
		h.log.DebugContext(ctx, "request", "method", r.Method, "path", r.URL.Path, "dur", time.Since(start))
	})
}

func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:]), true
	}
	return "", false
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
