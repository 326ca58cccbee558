// Package sharecat serves every share as its own read-only Iceberg REST
// catalog, for the share's recipients: a client's catalog URI is
// <public URL>/shares/<share>/iceberg, its warehouse and prefix the share's
// name, and it authenticates with the recipient's bearer token (directly, or
// through the OAuth2 client-credentials exchange at .../v1/oauth/tokens).
//
// The catalog lists only the shared objects, under the names the recipient
// sees (aliases), and never shows a table's real name. loadTable serves the
// real table's metadata with a short-lived read-only credential scoped to the
// table's location, or, for a table shared without history or with a
// partition filter, a derived snapshot of the files the recipient may read
// (lake/subset) with a credential for exactly those files. Credentials carry
// the recipient's token id, so that revoking the token refuses them too.
// Every write is refused.
//
// The package consumes the sharing service only through sharing.Resolver.
package sharecat

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/obs"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/sharing"
)

// Prefix is the path under which share catalogs are mounted: a share's
// catalog URI is <public URL>/shares/<share>/iceberg.
const Prefix = "/shares/"

// Route reports whether path belongs to the share catalogs.
func Route(path string) bool { return strings.HasPrefix(path, Prefix) }

// Defaults of the bounds in Options.
const (
	DefaultMaxBodyBytes         = 1 << 20
	DefaultMaxPageSize          = 1000
	DefaultMaxCachedCredentials = 10000
	DefaultMaxCachedMetadata    = 1000
	DefaultMaxCachedResolutions = 10000
)

// Tables loads the real tables behind shared objects (*catalog.Catalog).
type Tables interface {
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error)
}

// Options configures a Handler. Resolver and Tables are required.
type Options struct {
	// Resolver authenticates recipients and resolves shared names.
	Resolver sharing.Resolver
	// Tables loads the metadata of shared tables.
	Tables Tables
	// Vending is the main catalog's vending configuration: its minter,
	// S3 endpoint, region, path style, credential TTL and revocation check
	// are used for recipients' credentials too. Nil: loadTable carries no
	// credentials and the credentials endpoint answers 406.
	Vending *restcat.Vending
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxPageSize bounds the entries of one listing page (default
	// DefaultMaxPageSize); a larger pageSize is served as this.
	MaxPageSize int
	// MaxCachedCredentials bounds the credentials kept for reuse within a
	// minute (default DefaultMaxCachedCredentials).
	MaxCachedCredentials int
	// MaxCachedMetadata bounds the current-snapshot-only metadata kept for
	// tables shared without history (default DefaultMaxCachedMetadata).
	MaxCachedMetadata int
	// ResolveCacheTTL is how long an authenticated token and a resolved
	// shared table are reused without asking the resolver (default
	// DefaultResolveCacheTTL; negative: never). Resolver.Revoked is asked
	// on every request regardless.
	ResolveCacheTTL time.Duration
	// MaxCachedResolutions bounds each of the two resolution caches
	// (default DefaultMaxCachedResolutions).
	MaxCachedResolutions int
	// Views is where the derived snapshots (lake/subset) served for tables
	// shared without history or with a partition filter are written and
	// read: the recipient's credential then reads the derived snapshot's
	// files and nothing else. Nil (a server without an embedded store,
	// whose STS credentials cannot express a view): such tables are
	// refused.
	Views subset.FS
	// FileFilter compiles a share's partition filter for a table version
	// (deltasharing.NewFileFilter, so that both protocols enforce a filter
	// alike). Nil: filtered tables are refused.
	FileFilter func(filter string, md table.Metadata) (FileDecider, error)
	// ViewSource and RenameView serve shared views: a view's current
	// version with its SQL rewritten to read the share's tables under
	// their aliases. Either nil: no view is listed or served.
	ViewSource ViewSource
	RenameView ViewRenamer
	// Audit, if set, records one event per request and one per credential
	// vended.
	Audit func(ctx context.Context, e audit.Event)
	// Logger receives structured logs.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// FileDecider decides a partition filter on one file: 1 when all its rows
// pass, -1 when none does, 0 when its partition values cannot tell.
type FileDecider interface {
	Decide(df iceberg.DataFile) int
}

// Handler serves the share catalogs. It is safe for concurrent use.
type Handler struct {
	opts   Options
	log    *slog.Logger
	mux    *http.ServeMux
	ids    *httperr.RequestIDs
	creds  *bounded[credKey, *vended]
	trim   *bounded[string, []byte]
	views  *bounded[string, *subset.View]
	auths  *bounded[authKey, authEntry]
	tables *bounded[tableKey, tableEntry]
}

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxPageSize <= 0 {
		opts.MaxPageSize = DefaultMaxPageSize
	}
	if opts.MaxCachedCredentials <= 0 {
		opts.MaxCachedCredentials = DefaultMaxCachedCredentials
	}
	if opts.MaxCachedMetadata <= 0 {
		opts.MaxCachedMetadata = DefaultMaxCachedMetadata
	}
	if opts.ResolveCacheTTL == 0 {
		opts.ResolveCacheTTL = DefaultResolveCacheTTL
	}
	if opts.MaxCachedResolutions <= 0 {
		opts.MaxCachedResolutions = DefaultMaxCachedResolutions
	}
	h := &Handler{opts: opts, log: opts.Logger, mux: http.NewServeMux(), ids: httperr.NewRequestIDs(opts.Now),
		creds:  newBounded[credKey, *vended](opts.MaxCachedCredentials),
		trim:   newBounded[string, []byte](opts.MaxCachedMetadata),
		views:  newBounded[string, *subset.View](opts.MaxCachedMetadata),
		auths:  newBounded[authKey, authEntry](opts.MaxCachedResolutions),
		tables: newBounded[tableKey, tableEntry](opts.MaxCachedResolutions)}
	h.routes()
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// errReadOnly refuses every write.
var errReadOnly = floe.E(floe.Forbidden, "", "share catalogs are read-only")

// route is one operation: handler fn, or, with write, a refusal.
type route struct {
	method, path string
	name         string
	write        bool
	fn           func(http.ResponseWriter, *http.Request, *call) error
}

const (
	base = "/shares/{share}/iceberg/v1"
	pfx  = base + "/{prefix}"
	ns   = pfx + "/namespaces/{namespace}"
	tbl  = ns + "/tables/{table}"
)

func (h *Handler) table() []route {
	return []route{
		{"GET", base + "/config", "getConfig", false, h.config},
		{"GET", pfx + "/namespaces", "listNamespaces", false, h.listNamespaces},
		{"GET", ns, "loadNamespace", false, h.loadNamespace},
		{"HEAD", ns, "namespaceExists", false, h.namespaceExists},
		{"GET", ns + "/tables", "listTables", false, h.listTables},
		{"GET", tbl, "loadTable", false, h.loadTable},
		{"HEAD", tbl, "tableExists", false, h.tableExists},
		{"GET", tbl + "/credentials", "loadCredentials", false, h.loadCredentials},
		{"POST", tbl + "/metrics", "reportMetrics", false, h.reportMetrics},
		{"GET", ns + "/views", "listViews", false, h.listViews},
		{"GET", ns + "/views/{view}", "loadView", false, h.loadView},
		{"HEAD", ns + "/views/{view}", "viewExists", false, h.viewExists},

		{"POST", pfx + "/namespaces", "createNamespace", true, nil},
		{"DELETE", ns, "dropNamespace", true, nil},
		{"POST", ns + "/properties", "updateNamespaceProperties", true, nil},
		{"POST", ns + "/tables", "createTable", true, nil},
		{"POST", ns + "/register", "registerTable", true, nil},
		{"POST", tbl, "commitTable", true, nil},
		{"DELETE", tbl, "dropTable", true, nil},
		{"POST", tbl + "/unregister", "unregisterTable", true, nil},
		{"POST", tbl + "/sign", "signRequest", true, nil},
		{"POST", pfx + "/tables/rename", "renameTable", true, nil},
		{"POST", pfx + "/transactions/commit", "commitTransaction", true, nil},
		{"POST", ns + "/views", "createView", true, nil},
		{"POST", ns + "/views/{view}", "replaceView", true, nil},
		{"DELETE", ns + "/views/{view}", "dropView", true, nil},
		{"POST", pfx + "/views/rename", "renameView", true, nil},
		{"POST", ns + "/register-view", "registerView", true, nil},
	}
}

// endpoints lists the read operations, in /v1/config form.
func (h *Handler) endpoints() []string {
	var out []string
	for _, rt := range h.table() {
		if !rt.write && rt.name != "getConfig" {
			out = append(out, rt.method+" "+strings.TrimPrefix(rt.path, "/shares/{share}/iceberg"))
		}
	}
	return out
}

func (h *Handler) routes() {
	for _, rt := range h.table() {
		h.mux.Handle(rt.method+" "+rt.path, h.wrap(rt))
	}
	h.mux.Handle("POST "+base+"/oauth/tokens", http.HandlerFunc(h.token))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rid := h.ids.Of(w, r)
		httperr.Write(w, r, h.log, rid, floe.E(floe.NotFound, "route", "no route for %s %s", r.Method, r.URL.Path))
	})
}

// call is one authenticated request.
type call struct {
	rid       string
	recipient sharing.Recipient
	share     string
	credID    string
}

// wrap adds authentication, the revocation check, the read-only rule, the
// body limit, panic recovery, error mapping and the audit event around one
// operation.
func (h *Handler) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := h.opts.Now()
		obs.SetRoute(r.Context(), rt.path)
		c := &call{rid: h.ids.Of(w, r), share: r.PathValue("share")}
		rec := &httperr.StatusRecorder{ResponseWriter: w}
		var err error
		authed := false
		defer func() {
			if p := recover(); p != nil {
				h.log.ErrorContext(r.Context(), "panic in share catalog handler", "panic", p, "path", r.URL.Path)
				err = floe.Wrap(floe.Internal, nil, "internal error")
				httperr.Write(rec, r, h.log, c.rid, err)
			}
			h.audit(r, rt, c, authed, rec.Status, err, start)
		}()
		r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes)
		if c.recipient, err = h.authenticate(r); err == nil {
			authed = true
			err = h.serve(rec, r, rt, c)
		}
		if err != nil {
			if r.Method == http.MethodHead {
				// HEAD answers carry no body: the status says it all.
				status, _ := httperr.StatusAndType(err)
				if status >= 500 {
					h.log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
				}
				rec.WriteHeader(status)
				return
			}
			httperr.Write(rec, r, h.log, c.rid, err)
		}
	})
}

// serve runs an authenticated operation.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rt route, c *call) error {
	if rt.write {
		return errReadOnly
	}
	if p := r.PathValue("prefix"); p != "" && p != c.share {
		// The prefix is the share's name (/v1/config says so): any other
		// names nothing.
		return notFoundFor(r)
	}
	return rt.fn(w, r, c)
}

// authenticate checks the request's bearer token and that it is not
// revoked.
func (h *Handler) authenticate(r *http.Request) (sharing.Recipient, error) {
	tok, ok := httperr.Bearer(r)
	if !ok || tok == "" {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "token",
			"missing bearer token: send Authorization: Bearer <recipient token>, or exchange it at /v1/oauth/tokens")
	}
	return h.recipient(r, tok)
}

// recipient authenticates tok from the request's client address.
func (h *Handler) recipient(r *http.Request, tok string) (sharing.Recipient, error) {
	ctx := r.Context()
	addr, _ := netip.ParseAddr(httperr.ClientAddr(r))
	rc, err := h.authenticateCached(ctx, tok, addr.Unmap())
	if err != nil {
		return sharing.Recipient{}, resolverError(err)
	}
	if !rc.TokenExpiry.IsZero() && !h.opts.Now().Before(rc.TokenExpiry) {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "token", "the recipient token has expired")
	}
	revoked, err := h.opts.Resolver.Revoked(ctx, rc)
	if err != nil {
		return sharing.Recipient{}, resolverError(err)
	}
	if revoked {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "token", "the recipient token has been revoked or has expired")
	}
	return rc, nil
}

// resolverError passes the resolver's refusals on and turns anything
// else into an error whose message the client does not see.
func resolverError(err error) error {
	switch floe.KindOf(err) {
	case floe.Unauthenticated, floe.Forbidden, floe.Invalid, floe.Unavailable:
		return err
	}
	return floe.Wrap(floe.Internal, err, "internal error")
}

// notFoundFor is the answer for a name the recipient cannot see, by the
// kind of object the request path names, naming only what the recipient
// sent.
func notFoundFor(r *http.Request) error {
	nsName := strings.ReplaceAll(r.PathValue("namespace"), "\x1f", ".")
	switch {
	case r.PathValue("table") != "":
		return floe.E(floe.NotFound, "table", "Table does not exist: %s.%s", nsName, r.PathValue("table"))
	case r.PathValue("view") != "":
		return floe.E(floe.NotFound, "view", "View does not exist: %s.%s", nsName, r.PathValue("view"))
	case r.PathValue("namespace") != "":
		return floe.E(floe.NotFound, "namespace", "Namespace does not exist: %s", nsName)
	}
	return floe.E(floe.NotFound, "warehouse", "Catalog does not exist: %s", r.PathValue("share"))
}

// audit records the request's event "share.catalog.<operation>".
func (h *Handler) audit(r *http.Request, rt route, c *call, authed bool, status int, err error, start time.Time) {
	if h.opts.Audit == nil {
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	e := audit.Event{Time: start, RequestID: c.rid, ClientAddr: httperr.ClientAddr(r),
		Action: "share.catalog." + rt.name, Resource: resourceOf(r), Outcome: audit.OutcomeSuccess,
		Detail: map[string]any{"method": r.Method, "status": status, "share": c.share,
			"duration_ms": h.opts.Now().Sub(start).Milliseconds()}}
	if authed {
		e.Principal = "recipient:" + c.recipient.Name
		e.Detail["recipient"] = c.recipient.Name
		e.Detail["recipient_id"] = c.recipient.ID
		e.Detail["token_id"] = c.recipient.TokenID
	}
	if c.credID != "" {
		e.Detail["credential_id"] = c.credID
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
	if err != nil && status < 500 {
		e.Detail["error"] = floe.PublicMessage(err)
	}
	h.opts.Audit(r.Context(), e)
}

// resourceOf names what a request is about under the names the recipient
// sent: "share:s", "share:s/schema" or "share:s/schema.table".
func resourceOf(r *http.Request) string {
	res := "share:" + r.PathValue("share")
	n := r.PathValue("namespace")
	if n == "" {
		return res
	}
	res += "/" + strings.ReplaceAll(n, "\x1f", ".")
	if t := r.PathValue("table"); t != "" {
		return res + "." + t
	}
	if v := r.PathValue("view"); v != "" {
		return res + "." + v
	}
	return res
}
