// Package mgmtapi serves Floe's management API: JSON over HTTP under
// /api/v1/ for principals, roles, grants, tags and data filters, shares
// and recipients (package sharing), foreign catalogs (package federation),
// and the troubleshooting endpoints
// whoami and privileges. It is an adapter over
// package authz (decisions, grants, roles, tags) and a small principal
// registry interface; docs/api/management.yaml describes every endpoint.
//
// Callers authenticate with a bearer token as on the REST catalog. Roles and
// principals are managed by administrators only; grants and tags by anyone
// holding MANAGE_GRANTS on the securable (authz.Policy.CheckGrantAdmin and
// CheckTagAdmin). Denials carry the authz message verbatim, e.g.
// `principal "bi" lacks MANAGE_GRANTS on namespace "crm"`. Every mutation,
// allowed or not, is recorded as one audit event "mgmt.<operation>".
package mgmtapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/obs"
	"github.com/floe-lake/floe/netallow"
)

// Prefix is the path prefix of every management endpoint.
const Prefix = "/api/v1/"

// MaxBodyBytes bounds request bodies (1 MiB).
const MaxBodyBytes = 1 << 20

// OutcomeDenied is the audit outcome of a mutation refused for lack of a
// privilege, scope or administrator rights.
const OutcomeDenied = "denied"

// Verifier checks bearer tokens (auth.Service satisfies it).
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Claims, error)
}

// RecipientVerifier checks a recipient's bearer token from client and
// returns claims naming the recipient as cleanroom.RecipientPrefix+name
// (no scopes, never an administrator).
type RecipientVerifier interface {
	VerifyRecipient(ctx context.Context, token string, client netip.Addr) (auth.Claims, error)
}

// recipientTokenPrefix starts every recipient bearer token
// (sharing.TokenPrefix).
const recipientTokenPrefix = "floe_rcpt_"

// recipientRoutes are the operations a recipient's token opens: a
// recipient that is a member of a clean-room collaboration queries in it
// and reads it, its log and its budget; the service and the engine check
// the membership. Every other route refuses the token.
var recipientRoutes = map[string]bool{
	"POST /api/v1/query":                      true,
	"GET /api/v1/cleanrooms":                  true,
	"GET /api/v1/cleanrooms/{name}":           true,
	"GET /api/v1/cleanrooms/{name}/queries":   true,
	"GET /api/v1/cleanrooms/{name}/budget":    true,
	"GET /api/v1/cleanrooms/{name}/templates": true,
}

// Principals is the registry of principals the API manages. Errors are
// *floe.Error values (NotFound, AlreadyExists, Invalid).
type Principals interface {
	// CreatePrincipal registers a principal and returns it with its client
	// secret, which exists in clear only in this return value.
	CreatePrincipal(ctx context.Context, name string, scopes []string, admin bool) (auth.Principal, string, error)
	// ListPrincipals returns every principal ordered by name.
	ListPrincipals(ctx context.Context) ([]auth.Principal, error)
	// PrincipalByName returns the principal with that name, or NotFound.
	PrincipalByName(ctx context.Context, name string) (auth.Principal, error)
	// SetPrincipalDisabled disables or re-enables a principal, or NotFound.
	SetPrincipalDisabled(ctx context.Context, name string, disabled bool) error
	// SetPrincipalAllowedCIDRs replaces a principal's network allowlist
	// (empty: any address) and returns it in canonical form; Invalid for a
	// bad entry, NotFound for an unknown principal.
	SetPrincipalAllowedCIDRs(ctx context.Context, name string, cidrs []string) ([]string, error)
	// RotateSecret gives a principal a new client secret and returns it
	// with the principal; the old secret works for grace more (0: refused
	// at once). Invalid for a bad grace, NotFound for an unknown principal.
	RotateSecret(ctx context.Context, name string, grace time.Duration) (auth.Principal, string, error)
	// RevokeTokens refuses every token issued to a principal until now, on
	// every node, and returns the principal's new tokens-not-before; NotFound
	// for an unknown principal.
	RevokeTokens(ctx context.Context, name string) (time.Time, error)
}

// Options configures a Handler.
type Options struct {
	// Auth verifies bearer tokens. Nil disables authentication: every
	// caller is then an administrator named "anonymous" (insecure_no_auth
	// demo mode only).
	Auth Verifier
	// Authz holds grants, roles and tags and makes the decisions. Required.
	Authz *authz.Authorizer
	// Principals manages principals; nil makes the principal endpoints
	// answer 406 (unsupported).
	Principals Principals
	// DefaultWarehouse is used where a request names no warehouse.
	DefaultWarehouse string
	// Audit records one event per mutation; nil records nothing. Events
	// never carry secrets.
	Audit func(ctx context.Context, e audit.Event)
	// Maintenance runs table maintenance on demand; nil makes the
	// maintenance endpoints answer 406 (unsupported).
	Maintenance Maintenance
	// Ingest loads data into tables; nil makes the ingest endpoints answer
	// 406 (unsupported).
	Ingest Ingester
	// Query runs SQL for POST /api/v1/query; nil makes it answer 406
	// (unsupported).
	Query Querier
	// Tombstones lists and releases the kept locations of dropped tables;
	// nil makes the tombstone endpoints answer 406 (unsupported).
	Tombstones Tombstoner
	// Sharing manages shares and recipients; nil makes the sharing
	// endpoints answer 406 (unsupported).
	Sharing Sharing
	// Federation manages foreign catalogs; nil makes the catalog
	// endpoints answer 406 (unsupported).
	Federation Federation
	// Products manages data products; nil makes the product endpoints
	// answer 406 (unsupported).
	Products Products
	// Recipients authenticates the bearer tokens of recipients (another
	// organisation's identities, package sharing) on the routes clean-room
	// members use (recipientRoutes); nil refuses them everywhere.
	Recipients RecipientVerifier
	// CleanRooms manages clean-room collaborations; nil makes the clean
	// room endpoints answer 406 (unsupported).
	CleanRooms CleanRooms
	// AuditLog reads and verifies the audit log for GET /api/v1/audit
	// and /api/v1/audit/verify; nil makes them answer 406 (unsupported).
	AuditLog AuditReader
	// Functions creates, replaces and drops functions; nil makes the
	// function endpoints answer 406 (unsupported).
	Functions Functions
	// Backup writes a backup of the metadata store for GET
	// /api/v1/admin/backup; nil makes it answer 406 (unsupported).
	Backup Backuper
	// PublicURL is the URL recipients reach this server at, for their
	// profile files; empty means the scheme and host of the request.
	PublicURL string
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Handler is the management API HTTP handler.
type Handler struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	ids  *httperr.RequestIDs
}

// route is one operation: method, path pattern, the audit action of a
// mutation ("" for reads) and the function serving it.
type route struct {
	method, path string
	action       string
	fn           func(*call) error
}

// call is one authenticated request being served.
type call struct {
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context
	rid string
	sub authz.Subject
	// scopes of the token (nil without authentication).
	scopes []string
	// claims of the token (nil without authentication).
	claims *auth.Claims
	// resource and detail describe a mutation for its audit event; the
	// handler fills them in as it learns them.
	resource string
	detail   map[string]any
	// body is the request body without the JSON size limit (ingest).
	body io.Reader
	// outcome, when set, is the audit outcome of a mutation that
	// succeeded as a request but reports a failure (a product check
	// whose expectations failed).
	outcome string
}

// New returns a handler serving the management API.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, log: opts.Logger, mux: http.NewServeMux(), ids: httperr.NewRequestIDs(time.Now)}
	for _, rt := range h.routes() {
		h.mux.Handle(rt.method+" "+rt.path, h.wrap(rt))
	}
	h.mux.HandleFunc(Prefix, h.noRoute)
	return h
}

func (h *Handler) table() []route {
	const p = "/api/v1"
	return []route{
		{"GET", p + "/whoami", "", h.whoami},
		{"GET", p + "/privileges", "", h.privileges},
		{"GET", p + "/principals", "", h.listPrincipals},
		{"POST", p + "/principals", "mgmt.principal.create", h.createPrincipal},
		{"GET", p + "/principals/{name}", "", h.getPrincipal},
		{"POST", p + "/principals/{name}/disable", "mgmt.principal.disable", h.disablePrincipal},
		{"POST", p + "/principals/{name}/enable", "mgmt.principal.enable", h.enablePrincipal},
		{"PUT", p + "/principals/{name}/allowed-cidrs", "mgmt.principal.allowed_cidrs", h.setAllowedCIDRs},
		{"POST", p + "/principals/{name}/rotate-secret", "mgmt.principal.rotate_secret", h.rotateSecret},
		{"POST", p + "/principals/{name}/revoke-tokens", "mgmt.principal.revoke_tokens", h.revokeTokens},
		{"GET", p + "/roles", "", h.listRoles},
		{"POST", p + "/roles", "mgmt.role.create", h.createRole},
		{"GET", p + "/roles/{role}", "", h.getRole},
		{"DELETE", p + "/roles/{role}", "mgmt.role.drop", h.dropRole},
		{"PUT", p + "/roles/{role}/members/{principal}", "mgmt.role.member.add", h.addMember},
		{"DELETE", p + "/roles/{role}/members/{principal}", "mgmt.role.member.remove", h.removeMember},
		{"GET", p + "/grants", "", h.listGrants},
		{"POST", p + "/grants", "mgmt.grant.create", h.createGrant},
		{"POST", p + "/grants/revoke", "mgmt.grant.revoke", h.revokeGrant},
		{"DELETE", p + "/grants/{id}", "mgmt.grant.delete", h.deleteGrant},
		{"GET", p + "/tags", "", h.getTags},
		{"PUT", p + "/tags", "mgmt.tag.set", h.setTags},
		{"DELETE", p + "/tags", "mgmt.tag.unset", h.deleteTags},
		{"POST", p + "/tables/{warehouse}/{namespace}/{table}/maintenance", "mgmt.table.maintain", h.maintainTable},
		{"GET", p + "/tables/{warehouse}/{namespace}/{table}/summary", "", h.tableSummary},
		{"GET", p + "/tables/{warehouse}/{namespace}/{table}/timeline", "", h.tableTimeline},
		{"GET", p + "/tables/{warehouse}/{namespace}/{table}/access", "", h.tableAccess},
		{"POST", p + "/query", "", h.query},
	}
}

// routes is every operation served.
func (h *Handler) routes() []route {
	return slices.Concat(h.table(), h.ingestRoutes(), h.tombstoneRoutes(), h.shareRoutes(), h.catalogRoutes(), h.productRoutes(), h.cleanroomRoutes(), h.backupRoutes(), h.auditRoutes(), h.functionRoutes())
}

// Routes lists the operations served, as "METHOD /path/{param}".
func (h *Handler) Routes() []string {
	rs := h.routes()
	out := make([]string, 0, len(rs))
	for _, rt := range rs {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}

// ServeHTTP implements http.Handler. It honours an X-Request-Id header (or
// makes one) and echoes it in the response.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := h.ids.Of(w, r)
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ridKey{}, rid)))
}

type ridKey struct{}

// RequestID returns the request id the handler put in ctx ("" if none).
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(ridKey{}).(string)
	return s
}

// noRoute answers paths no operation matches: 405 when the path exists
// with other methods, else 404.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := h.mux.Handler(probe); pat != "" && pat != Prefix {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		if slices.Contains(allow, "GET") {
			allow = append(allow, "HEAD")
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		httperr.JSON(w, http.StatusMethodNotAllowed, httperr.Response{Error: httperr.ErrorModel{
			Message: r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + strings.Join(allow, ", ") + ")",
			Type:    "MethodNotAllowedException", Code: http.StatusMethodNotAllowed}})
		return
	}
	h.writeError(w, r, floe.E(floe.NotFound, "route", "no management API route for %s %s", r.Method, r.URL.Path))
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httperr.Write(w, r, h.log, RequestID(r.Context()), err)
}

// wrap adds authentication, the body limit, panic recovery, error mapping
// and the audit event of a mutation around one operation.
func (h *Handler) wrap(rt route) http.Handler {
	mutates := rt.action != ""
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		obs.SetRoute(ctx, rt.path)
		c := &call{w: w, r: r, ctx: ctx, rid: RequestID(ctx), resource: r.URL.Path}
		audited := false
		defer func() {
			if p := recover(); p != nil {
				h.log.ErrorContext(ctx, "mgmtapi: panic in handler", "panic", p, "path", r.URL.Path)
				err := floe.Wrap(floe.Internal, nil, "internal error")
				if mutates && audited {
					h.record(c, rt.action, err)
				}
				h.writeError(w, r, err)
			}
		}()
		if h.opts.Auth != nil {
			tok, ok := httperr.Bearer(r)
			if !ok {
				h.writeError(w, r, floe.E(floe.Unauthenticated, "token", "missing bearer token: authenticate at /v1/oauth/tokens and send Authorization: Bearer <token>"))
				return
			}
			var claims auth.Claims
			var err error
			recipient := strings.HasPrefix(tok, recipientTokenPrefix)
			switch {
			case recipient && (h.opts.Recipients == nil || !recipientRoutes[rt.method+" "+rt.path]):
				err = floe.E(floe.Unauthenticated, "token", "a recipient token opens only the clean-room query and read operations (POST /api/v1/query, GET /api/v1/cleanrooms...)")
			case recipient:
				claims, err = h.opts.Recipients.VerifyRecipient(ctx, tok, clientAddr(r))
			default:
				claims, err = h.opts.Auth.Verify(ctx, tok)
			}
			if err != nil {
				h.writeError(w, r, err)
				return
			}
			c.sub, c.scopes, c.claims = authz.SubjectOf(claims), claims.Scopes, &claims
			obs.SetPrincipal(ctx, claims.Principal)
			ctx = auth.WithClaims(ctx, claims)
			c.ctx, c.r = ctx, r.WithContext(ctx)
			audited = true
			// A catalog:read token never changes anything here either. A
			// recipient's claims carry no scopes: its routes are reads
			// whose services check its membership.
			if err := claims.Permit(mutates, rt.method+" "+rt.path); err != nil && (!recipient || mutates) {
				if mutates {
					h.record(c, rt.action, err)
				}
				h.writeError(w, r, err)
				return
			}
		} else {
			c.sub = authz.Subject{Principal: "anonymous", Admin: true}
			audited = true
		}
		// Location claims (creates, Delta registration) and drops act for the caller.
		c.ctx = catalog.WithClaimant(c.ctx, catalog.Claimant{Principal: c.sub.PrincipalID, Admin: c.sub.Admin})
		c.r = c.r.WithContext(c.ctx)
		c.body = c.r.Body
		c.r.Body = http.MaxBytesReader(w, c.r.Body, MaxBodyBytes)
		err := rt.fn(c)
		if mutates {
			h.record(c, rt.action, err)
		}
		if err != nil {
			h.writeError(w, c.r, err)
		}
		h.log.DebugContext(ctx, "mgmtapi: request", "request_id", c.rid, "method", r.Method, "path", r.URL.Path,
			"principal", c.sub.Principal, "err", err, "dur", time.Since(start))
	})
}

// record appends the audit event of a mutation.
func (h *Handler) record(c *call, action string, err error) {
	if h.opts.Audit == nil {
		return
	}
	e := audit.Event{RequestID: c.rid, Principal: c.sub.Principal, ClientAddr: httperr.ClientAddr(c.r), Action: action,
		Resource: c.resource, Outcome: audit.OutcomeSuccess, Detail: c.detail}
	if c.outcome != "" {
		e.Outcome = c.outcome
	}
	if err != nil {
		e.Outcome = audit.OutcomeFailure
		if k := floe.KindOf(err); k == floe.Forbidden || k == floe.Unauthenticated {
			e.Outcome = OutcomeDenied
		}
		if e.Detail == nil {
			e.Detail = map[string]any{}
		}
		e.Detail["error"] = floe.PublicMessage(err)
	}
	h.opts.Audit(context.WithoutCancel(c.ctx), e)
}

// requireAdmin refuses a non-administrator, naming what needed one.
func requireAdmin(sub authz.Subject, what string) error {
	if sub.Admin {
		return nil
	}
	return floe.E(floe.Forbidden, "privilege", "%s is not an administrator: %s requires an admin principal", sub, what)
}

// policy returns the current authorization policy.
func (h *Handler) policy(c *call) (*authz.Policy, error) {
	if h.opts.Authz == nil {
		return nil, floe.E(floe.Unsupported, "authz", "authorization is not configured on this server")
	}
	return h.opts.Authz.Policy(c.ctx)
}

// note adds key=value to the audit detail of the call.
func (c *call) note(kv ...any) {
	if c.detail == nil {
		c.detail = map[string]any{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c.detail[kv[i].(string)] = kv[i+1]
	}
}

// clientAddr is the request's client address (the listener's, behind a
// trusted proxy), or the zero Addr.
func clientAddr(r *http.Request) netip.Addr {
	if a, ok := netallow.ClientFrom(r.Context()); ok {
		return a
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
