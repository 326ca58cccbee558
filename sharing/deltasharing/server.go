// Package deltasharing serves the Delta Sharing protocol
// (https://github.com/delta-io/delta-sharing/blob/main/PROTOCOL.md) for
// Floe's shares: recipients holding a bearer token list the shares granted
// to them and read their Iceberg tables as Delta Sharing tables, through
// pre-signed URLs to Floe's S3 endpoint.
//
// The handler consumes only sharing.Resolver for authentication and name
// resolution; it reads table metadata and manifests through Options.Tables
// and Options.FS, and signs each listed data file with one short-lived
// read-only credential per query response (Options.Minter).
//
// # Versions
//
// A Delta table version is a dense, monotonically increasing number. An
// Iceberg snapshot maps to the Delta version equal to its sequence number
// (format v2 and later: every commit to the table increases it by one); a
// format v1 table, whose snapshots have no sequence numbers, maps a snapshot
// to its 1-based position in the snapshot log. A table without a snapshot
// has version 0. Only snapshots in the main branch's ancestry are versions.
// A timestamp selects the snapshot that was current at that time.
package deltasharing

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/obs"
	"github.com/floe-lake/floe/netallow"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/vend"
)

// Prefix is the path under which Floe mounts the Delta Sharing server on its
// main HTTP listener; a profile file's endpoint is the public URL + Prefix.
const Prefix = "/delta-sharing"

// Tables loads a table's current metadata (*catalog.Catalog).
type Tables interface {
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error)
}

// Limits and defaults.
const (
	// DefaultURLTTL is the lifetime of a pre-signed URL by default.
	DefaultURLTTL = 15 * time.Minute
	// MaxURLTTL is the longest lifetime of a pre-signed URL.
	MaxURLTTL = time.Hour
	// DefaultMaxResults is the page size of a list without maxResults.
	DefaultMaxResults = 500
	// MaxMaxResults caps maxResults of a list.
	MaxMaxResults = 1000
	// DefaultMaxFiles is the most files one query response lists by
	// default; a larger table is paged (maxFiles/pageToken) or refused.
	DefaultMaxFiles = 100_000
	// DefaultMaxBodyBytes bounds a query request body.
	DefaultMaxBodyBytes = 1 << 20
	// MaxPredicateBytes bounds jsonPredicateHints and each predicateHint.
	MaxPredicateBytes = 64 << 10
	// MaxPredicateDepth bounds the nesting of a predicate.
	MaxPredicateDepth = 32
	// MaxPredicateNodes bounds the number of nodes of a predicate.
	MaxPredicateNodes = 2000
)

// Options configures a Handler.
type Options struct {
	// Resolver authenticates recipients and resolves shared names.
	Resolver sharing.Resolver
	// Tables loads table metadata.
	Tables Tables
	// FS reads manifest lists and manifests.
	FS icebergio.IO
	// Minter mints the read-only credential each query response's URLs are
	// signed with; nil serves no files (every query fails).
	Minter vend.Minter
	// Endpoint returns the externally visible base URL of the S3 endpoint
	// the URLs point at ("" for AWS S3 itself, addressed per bucket).
	Endpoint func() string
	// Region is the signing region.
	Region string
	// PathStyle addresses buckets by path (Floe's embedded endpoint).
	PathStyle bool
	// URLTTL is the lifetime of a pre-signed URL (default DefaultURLTTL,
	// at most MaxURLTTL).
	URLTTL time.Duration
	// MaxFiles caps the files of one query response (default
	// DefaultMaxFiles).
	MaxFiles int
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Cache bounds the cached file listings of snapshots (entries; default
	// DefaultCacheEntries, negative: no cache).
	Cache int
	// Audit records events (nil: none).
	Audit func(ctx context.Context, e audit.Event)
	// Logger receives logs (nil: discarded).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Handler serves the Delta Sharing protocol under Prefix.
type Handler struct {
	opts  Options
	log   *slog.Logger
	ids   *httperr.RequestIDs
	files *listingCache
}

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.URLTTL <= 0 {
		opts.URLTTL = DefaultURLTTL
	}
	opts.URLTTL = min(opts.URLTTL, MaxURLTTL)
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Endpoint == nil {
		opts.Endpoint = func() string { return "" }
	}
	if opts.Cache == 0 {
		opts.Cache = DefaultCacheEntries
	}
	return &Handler{opts: opts, log: opts.Logger, ids: httperr.NewRequestIDs(opts.Now), files: newListingCache(opts.Cache)}
}

// apiError is an error in the protocol's format.
type apiError struct {
	status int
	code   string
	msg    string
	err    error // logged, never sent
}

func (e *apiError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *apiError) Unwrap() error { return e.err }

// Error codes of the protocol (and two for authentication).
const (
	codeInvalid     = "INVALID_PARAMETER_VALUE"
	codeMalformed   = "MALFORMED_REQUEST"
	codeNotFound    = "RESOURCE_DOES_NOT_EXIST"
	codeUnsupported = "UNSUPPORTED_OPERATION"
	codeInternal    = "INTERNAL_ERROR"
	codeUnauth      = "UNAUTHENTICATED"
	codeForbidden   = "PERMISSION_DENIED"
	codeUnavailable = "TEMPORARILY_UNAVAILABLE"
)

func invalid(msg string) *apiError   { return &apiError{status: 400, code: codeInvalid, msg: msg} }
func malformed(msg string) *apiError { return &apiError{status: 400, code: codeMalformed, msg: msg} }
func unsupported(msg string) *apiError {
	return &apiError{status: 400, code: codeUnsupported, msg: msg}
}
func notFound(msg string) *apiError { return &apiError{status: 404, code: codeNotFound, msg: msg} }

// toAPI maps an error to the protocol's error.
func toAPI(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := floe.PublicMessage(err)
	switch floe.KindOf(err) {
	case floe.Invalid, floe.Unprocessable:
		return &apiError{status: 400, code: codeInvalid, msg: msg, err: err}
	case floe.Unsupported:
		return &apiError{status: 400, code: codeUnsupported, msg: msg, err: err}
	case floe.Unauthenticated:
		return &apiError{status: 401, code: codeUnauth, msg: msg, err: err}
	case floe.Forbidden:
		return &apiError{status: 403, code: codeForbidden, msg: msg, err: err}
	case floe.NotFound:
		return &apiError{status: 404, code: codeNotFound, msg: msg, err: err}
	case floe.Unavailable:
		return &apiError{status: 503, code: codeUnavailable, msg: msg, err: err}
	}
	return &apiError{status: 500, code: codeInternal, msg: "internal error", err: err}
}

// call is one request in flight.
type call struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	rid   string
	op    string
	rcpt  sharing.Recipient
	authd bool
	// names the recipient used (for audit).
	share, schema, table string
	// tbl is the resolved table (for audit), when one was.
	tbl    *sharing.Table
	detail map[string]any
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{h: h, w: w, r: r, rid: h.ids.Of(w, r), detail: map[string]any{}}
	status, err := c.serve()
	if err != nil {
		ae := toAPI(err)
		status = ae.status
		if ae.status >= 500 {
			h.log.ErrorContext(r.Context(), "delta sharing request failed", "request_id", c.rid, "op", c.op, "err", err)
		}
		c.detail["error"] = ae.code
		c.detail["message"] = ae.msg
		writeError(w, r, ae)
	}
	if c.op != "unknown" {
		obs.SetRoute(r.Context(), c.op)
	}
	c.audit(status)
}

func writeError(w http.ResponseWriter, r *http.Request, ae *apiError) {
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="delta-sharing"`)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(ae.status)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(ae.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorCode": ae.code, "message": ae.msg})
}

// audit records the request.
func (c *call) audit(status int) {
	if c.h.opts.Audit == nil {
		return
	}
	e := audit.Event{RequestID: c.rid, ClientAddr: clientAddr(c.r).String(), Action: "deltasharing." + c.op,
		Outcome: audit.OutcomeSuccess, Detail: c.detail}
	switch {
	case status == 401 || status == 403:
		e.Outcome = audit.OutcomeDenied
	case status >= 400:
		e.Outcome = audit.OutcomeFailure
	}
	c.detail["status"] = status
	if c.authd {
		e.Principal = "recipient:" + c.rcpt.Name
		c.detail["recipient_id"] = c.rcpt.ID
		c.detail["recipient"] = c.rcpt.Name
		c.detail["token_id"] = c.rcpt.TokenID
	}
	e.Resource = "delta-sharing:" + strings.Join(nonEmpty(c.share, c.schema, c.table), ".")
	if c.share != "" {
		c.detail["share"] = c.share
	}
	if c.tbl != nil {
		c.detail["object_id"] = c.tbl.ID
		c.detail["table"] = c.tbl.Warehouse + "." + c.tbl.Ident.String()
	}
	c.h.opts.Audit(c.r.Context(), e)
}

func nonEmpty(s ...string) []string {
	out := s[:0:0]
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func clientAddr(r *http.Request) netip.Addr {
	if a, ok := netallow.ClientFrom(r.Context()); ok {
		return a
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// serve routes the request; it returns the status written on success.
func (c *call) serve() (int, error) {
	r := c.r
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix)
	if !ok {
		c.op = "unknown"
		return 0, notFound("no such endpoint")
	}
	rest = strings.Trim(rest, "/")
	var segs []string
	if rest != "" {
		for s := range strings.SplitSeq(rest, "/") {
			u, err := url.PathUnescape(s)
			if err != nil {
				c.op = "unknown"
				return 0, malformed("malformed path")
			}
			segs = append(segs, u)
		}
	}
	route, args, method := match(segs, r.Method)
	c.op = route
	if route == "" {
		c.op = "unknown"
		return 0, notFound("no such endpoint: " + r.Method + " " + Prefix + "/" + rest)
	}
	if method != "" {
		c.w.Header().Set("Allow", method)
		return 0, &apiError{status: http.StatusMethodNotAllowed, code: codeMalformed, msg: route + " takes " + method}
	}
	for i, a := range args {
		if err := checkName(a); err != nil {
			return 0, err
		}
		switch i {
		case 0:
			c.share = a
		case 1:
			c.schema = a
		case 2:
			c.table = a
		}
	}
	if err := c.authenticate(); err != nil {
		return 0, err
	}
	switch route {
	case "shares.list":
		return c.listShares()
	case "shares.get":
		return c.getShare()
	case "schemas.list":
		return c.listSchemas()
	case "tables.list":
		return c.listTables(false)
	case "tables.listAll":
		return c.listTables(true)
	case "table.version":
		return c.tableVersion()
	case "table.metadata":
		return c.tableMetadata()
	case "table.query":
		return c.query()
	case "table.changes":
		return 0, unsupported("change data feed (changes) is not supported by Floe's Delta Sharing server")
	}
	return 0, notFound("no such endpoint")
}

// match finds the route of segs: its name, its name arguments, and the
// allowed method when method is wrong.
func match(segs []string, method string) (route string, args []string, allow string) {
	want := func(name, m string, a ...string) (string, []string, string) {
		if method == m || (m == http.MethodGet && method == http.MethodHead && name != "table.version") {
			return name, a, ""
		}
		return name, a, m
	}
	n := len(segs)
	if n == 0 || segs[0] != "shares" {
		return "", nil, ""
	}
	switch {
	case n == 1:
		return want("shares.list", http.MethodGet)
	case n == 2:
		return want("shares.get", http.MethodGet, segs[1])
	case n == 3 && segs[2] == "schemas":
		return want("schemas.list", http.MethodGet, segs[1])
	case n == 3 && segs[2] == "all-tables":
		return want("tables.listAll", http.MethodGet, segs[1])
	case n == 5 && segs[2] == "schemas" && segs[4] == "tables":
		return want("tables.list", http.MethodGet, segs[1], segs[3])
	case n == 6 && segs[2] == "schemas" && segs[4] == "tables":
		// The legacy HEAD of the table: its version.
		if method == http.MethodHead {
			return "table.version", []string{segs[1], segs[3], segs[5]}, ""
		}
		return "table.version", []string{segs[1], segs[3], segs[5]}, http.MethodHead
	case n == 7 && segs[2] == "schemas" && segs[4] == "tables":
		a := []string{segs[1], segs[3], segs[5]}
		switch segs[6] {
		case "version":
			return want("table.version", http.MethodGet, a...)
		case "metadata":
			return want("table.metadata", http.MethodGet, a...)
		case "query":
			return want("table.query", http.MethodPost, a...)
		case "changes":
			return want("table.changes", http.MethodGet, a...)
		}
	}
	return "", nil, ""
}

// checkName refuses a name the protocol forbids (so that nothing odd
// reaches the resolver or the audit log).
func checkName(s string) error {
	if s == "" || len(s) > 255 {
		return invalid("a name has 1 to 255 characters")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return invalid("a name must not contain control characters")
	}
	return nil
}

// authenticate checks the bearer token.
func (c *call) authenticate() error {
	h := c.r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return &apiError{status: 401, code: codeUnauth, msg: "a bearer token (Authorization: Bearer <token> from the profile file) is required"}
	}
	if len(tok) > 4096 {
		return &apiError{status: 401, code: codeUnauth, msg: "invalid bearer token"}
	}
	rc, err := c.h.opts.Resolver.Authenticate(c.r.Context(), strings.TrimSpace(tok), clientAddr(c.r))
	if err != nil {
		return err
	}
	c.rcpt, c.authd = rc, true
	return nil
}

// writeJSON writes v as the 200 response.
func (c *call) writeJSON(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	if c.r.Method != http.MethodHead {
		_, _ = c.w.Write(append(b, '\n'))
	}
	return http.StatusOK, nil
}
