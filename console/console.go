// Package console serves Floe's web console under /console/: static
// assets (plain HTML, ES modules and CSS, embedded) and a small backend
// that signs a browser in with a client id and secret, keeps the Floe
// token it obtains server-side (the browser holds only an HttpOnly,
// SameSite=Strict session cookie), and forwards the console's API calls
// to the management API and the REST catalog with that token, so the
// console shows and does exactly what the signed-in principal may.
//
// Every state-changing request must come from the console's own origin
// and carry the session's CSRF token in the X-CSRF-Token header. Every
// response carries a strict Content-Security-Policy (no inline script, no
// other origin), so a name or tag containing markup stays inert even if
// it were ever inserted as HTML.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/websession"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// CookieName is the session cookie.
const CookieName = "floe_console"

// CSRFHeader carries the session's CSRF token on state-changing requests.
const CSRFHeader = "X-CSRF-Token"

// CSP is the Content-Security-Policy of every console response.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ActionLogout is the audit action of a console sign-out.
const ActionLogout = "console.logout"

// ActionLogin is the audit action of a console sign-in (either method,
// named by the event's "method" detail: MethodClientSecret or
// MethodSQLPassword).
const ActionLogin = "console.login"

// Sign-in methods, as recorded in console.login events.
const (
	MethodClientSecret = "client_secret"
	MethodSQLPassword  = "sql_password"
)

//go:embed assets
var assets embed.FS

// Tokens inspects and revokes Floe access tokens (auth.Service).
type Tokens interface {
	Inspect(ctx context.Context, raw string) (auth.TokenInfo, error)
	Revoke(ctx context.Context, t auth.TokenInfo) (bool, error)
}

// Issued is a token the console's backend obtained for a principal.
type Issued struct {
	Principal string
	Token     string
	ExpiresAt time.Time
}

// ThrottledError is what Options.Password returns while the user at the
// client's address has used up its failed-login budget.
type ThrottledError struct {
	// RetrySeconds is how long until the next attempt is let through.
	RetrySeconds int
}

// Error implements error.
func (e *ThrottledError) Error() string {
	return "too many failed sign-in attempts; try again in " + strconv.Itoa(e.RetrySeconds) + " s"
}

// PasswordFunc verifies user's SQL password (with the SQL endpoint's
// verification and login limiter, keyed by user and client address) and
// issues an access token for its principal. A wrong password, an unknown
// user and one without a SQL password all give a floe.Unauthenticated
// error; a blocked key gives a *ThrottledError.
type PasswordFunc func(ctx context.Context, user, password string, client net.Addr) (Issued, error)

// Options configures a Handler.
type Options struct {
	// Upstream serves /v1/oauth/tokens, /api/v1/ and /v1/ (the catalog
	// listener's handler, without the console).
	Upstream http.Handler
	// Tokens revokes a session's token at sign-out.
	Tokens Tokens
	// Password signs in with a user name and SQL password; nil: that
	// method is refused.
	Password PasswordFunc
	// Audit records sign-ins and sign-outs; nil records nothing.
	Audit func(context.Context, audit.Event)
	// PublicURL is the URL browsers reach the server at (behind a proxy
	// that rewrites the Host header or terminates TLS): its origin is
	// accepted besides the request's own, and an https:// one makes the
	// cookie Secure. Empty: the request's Host and TLS decide.
	PublicURL string
	// Sessions keeps the sessions; the metadata store, so that every node
	// sharing it sees every session (and every sign-out) at once. nil: the
	// sessions live in this Handler's memory only.
	Sessions websession.Store
	// MaxSessions bounds the sessions held in Sessions, across every node
	// sharing it (default DefaultMaxSessions).
	MaxSessions int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Handler serves the console.
type Handler struct {
	opts     Options
	log      *slog.Logger
	sessions *sessions
	static   http.Handler
	ids      *httperr.RequestIDs
}

// New returns a console handler.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	h := &Handler{opts: opts, log: opts.Logger, sessions: newSessions(opts.Sessions, opts.MaxSessions, opts.Now),
		static: http.StripPrefix("/console", http.FileServerFS(sub)),
		ids:    httperr.NewRequestIDs(opts.Now)}
	return h
}

// Route reports whether path belongs to the console.
func Route(path string) bool { return path == "/console" || strings.HasPrefix(path, Prefix) }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	// One request id for the console's request and the calls it makes.
	r.Header.Set("X-Request-Id", h.ids.Of(w, r))
	if r.URL.Path == "/console" {
		http.Redirect(w, r, Prefix, http.StatusFound)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/console/api/login":
		if r.Method != http.MethodPost {
			notAllowed(w, r, "POST")
			return
		}
		h.login(w, r)
	case p == "/console/api/logout":
		if r.Method != http.MethodPost {
			notAllowed(w, r, "POST")
			return
		}
		h.logout(w, r)
	case p == "/console/api/session":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notAllowed(w, r, "GET, HEAD")
			return
		}
		h.session(w, r)
	case strings.HasPrefix(p, "/console/api/proxy/"):
		h.proxy(w, r)
	case strings.HasPrefix(p, "/console/api/"):
		writeError(w, http.StatusNotFound, "NotFoundException", "no console API route for "+r.Method+" "+p)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		notAllowed(w, r, "GET, HEAD")
	default:
		w.Header().Set("Cache-Control", "no-cache")
		h.static.ServeHTTP(w, r)
	}
}

func notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowedException", r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+allow+")")
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	httperr.JSON(w, status, httperr.Response{Error: httperr.ErrorModel{Message: msg, Type: typ, Code: status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httperr.JSON(w, status, v)
}

// sameOrigin refuses a request a page of another origin made: its Origin
// (or, without one, Sec-Fetch-Site) must name this server, as the request
// reached it or at the public URL.
func (h *Handler) sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" {
			return false
		}
		if pu, err := url.Parse(h.opts.PublicURL); err == nil && pu.Host != "" && strings.EqualFold(u.Host, pu.Host) && u.Scheme == pu.Scheme {
			return true
		}
		if !strings.EqualFold(u.Host, r.Host) {
			return false
		}
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		// Behind a TLS-terminating proxy the browser's scheme differs from
		// ours; the host must match either way.
		return u.Scheme == scheme || u.Scheme == "https"
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// secure reports whether the session cookie must be Secure.
func (h *Handler) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(h.opts.PublicURL), "https://")
}

// loginRequest is the body of POST /console/api/login: a client id and
// secret, or a user name and SQL password.
type loginRequest struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	User         string `json:"user"`
	Password     string `json:"password"`
}

// sessionInfo answers sign-in and GET /console/api/session.
type sessionInfo struct {
	Principal string          `json:"principal"`
	CSRFToken string          `json:"csrf_token"`
	ExpiresAt time.Time       `json:"expires_at"`
	WhoAmI    json.RawMessage `json:"whoami,omitempty"`
}

// maxLoginBody bounds the sign-in body.
const maxLoginBody = 16 << 10

// login obtains a Floe token for a client id and secret or for a user name
// and SQL password, and opens a session acting with it.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(r) {
		writeError(w, http.StatusForbidden, "ForbiddenException", "cross-origin sign-in refused")
		return
	}
	var req loginRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLoginBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "the body must be a JSON object with client_id and client_secret, or user and password")
		return
	}
	var iss Issued
	var ok bool
	method := MethodClientSecret
	switch {
	case req.User != "" || req.Password != "":
		if req.ClientID != "" || req.ClientSecret != "" {
			writeError(w, http.StatusBadRequest, "BadRequestException", "give client_id and client_secret, or user and password, not both")
			return
		}
		if req.User == "" || req.Password == "" {
			writeError(w, http.StatusBadRequest, "BadRequestException", "user and password are required")
			return
		}
		method = MethodSQLPassword
		iss, ok = h.passwordLogin(w, r, req.User, req.Password)
	case req.ClientID == "" || req.ClientSecret == "":
		writeError(w, http.StatusBadRequest, "BadRequestException", "client_id and client_secret are required")
		return
	default:
		iss, ok = h.secretLogin(w, r, req.ClientID, req.ClientSecret)
	}
	if !ok {
		return
	}
	h.open(w, r, iss, method)
}

// auditLogin records a console sign-in attempt (never its secret).
func (h *Handler) auditLogin(r *http.Request, principal, method, outcome string, detail map[string]any) {
	if h.opts.Audit == nil {
		return
	}
	d := map[string]any{"method": method}
	maps.Copy(d, detail)
	h.opts.Audit(context.WithoutCancel(r.Context()), audit.Event{RequestID: r.Header.Get("X-Request-Id"), Principal: principal,
		ClientAddr: httperr.ClientAddr(r), Action: ActionLogin, Resource: "principal:" + principal, Outcome: outcome, Detail: d})
}

// passwordLogin checks a SQL password and obtains a token for its
// principal.
func (h *Handler) passwordLogin(w http.ResponseWriter, r *http.Request, user, password string) (Issued, bool) {
	if h.opts.Password == nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "signing in with a SQL password is not available on this server (the SQL endpoint is off)")
		return Issued{}, false
	}
	var client net.Addr
	if a, err := netip.ParseAddr(httperr.ClientAddr(r)); err == nil {
		client = net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0))
	}
	iss, err := h.opts.Password(r.Context(), user, password, client)
	if err == nil && (iss.Token == "" || !iss.ExpiresAt.After(h.opts.Now())) {
		err = errors.New("console: no token issued")
	}
	if err != nil {
		var te *ThrottledError
		switch {
		case errors.As(err, &te):
			w.Header().Set("Retry-After", strconv.Itoa(te.RetrySeconds))
			h.auditLogin(r, user, MethodSQLPassword, audit.OutcomeDenied, map[string]any{"reason": "throttled"})
			writeError(w, http.StatusTooManyRequests, "TooManyRequestsException", "sign-in failed: "+te.Error())
		case floe.KindOf(err) == floe.Unauthenticated:
			h.auditLogin(r, user, MethodSQLPassword, audit.OutcomeFailure, nil)
			writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "sign-in failed: wrong user name or password")
		case floe.KindOf(err) == floe.Unsupported:
			writeError(w, http.StatusBadRequest, "BadRequestException", "sign-in failed: "+floe.PublicMessage(err))
		case floe.KindOf(err) == floe.Forbidden:
			h.auditLogin(r, user, MethodSQLPassword, audit.OutcomeDenied, nil)
			writeError(w, http.StatusForbidden, "ForbiddenException", "sign-in failed: "+floe.PublicMessage(err))
		default:
			h.log.ErrorContext(r.Context(), "console: password sign-in", "user", user, "err", err)
			h.auditLogin(r, user, MethodSQLPassword, audit.OutcomeError, nil)
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "sign-in failed: internal error")
		}
		return Issued{}, false
	}
	h.auditLogin(r, iss.Principal, MethodSQLPassword, audit.OutcomeSuccess, nil)
	return iss, true
}

// secretLogin exchanges a client id and secret for a Floe token at the
// token endpoint (with its failure limit and audit).
func (h *Handler) secretLogin(w http.ResponseWriter, r *http.Request, clientID, secret string) (Issued, bool) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}}
	rec := h.call(r, http.MethodPost, "/v1/oauth/tokens", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), "")
	if rec.status != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(rec.body, &oe)
		status, msg := rec.status, "sign-in failed"
		if oe.Description != "" {
			msg = "sign-in failed: " + oe.Description
		}
		if status == http.StatusBadRequest && oe.Error == "invalid_client" {
			status = http.StatusUnauthorized
		}
		if ra := rec.header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		typ := "NotAuthorizedException"
		switch status {
		case http.StatusTooManyRequests:
			typ = "TooManyRequestsException"
		case http.StatusBadRequest:
			typ = "BadRequestException"
		}
		if status >= 500 {
			status, typ, msg = http.StatusBadGateway, "ServiceUnavailableException", "sign-in failed: the token endpoint answered "+strconv.Itoa(rec.status)
		}
		outcome := audit.OutcomeFailure
		if status == http.StatusTooManyRequests {
			outcome = audit.OutcomeDenied
		}
		h.auditLogin(r, "client:"+clientID, MethodClientSecret, outcome, map[string]any{"client_id": clientID})
		writeError(w, status, typ, msg)
		return Issued{}, false
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(rec.body, &tok); err != nil || tok.AccessToken == "" || tok.ExpiresIn <= 0 {
		writeError(w, http.StatusBadGateway, "ServiceUnavailableException", "sign-in failed: the token endpoint gave no token")
		return Issued{}, false
	}
	return Issued{Token: tok.AccessToken, ExpiresAt: h.opts.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)}, true
}

// open starts a session acting with the token of iss and sets its cookie.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, iss Issued, method string) {
	who := h.call(r, http.MethodGet, "/api/v1/whoami", "", nil, iss.Token)
	var wj struct {
		Principal string `json:"principal"`
		Name      string `json:"name"`
	}
	_ = json.Unmarshal(who.body, &wj)
	name := wj.Principal
	if name == "" {
		name = wj.Name
	}
	if name == "" {
		name = iss.Principal
	}
	if method == MethodClientSecret { // a password sign-in was audited when checked
		h.auditLogin(r, name, method, audit.OutcomeSuccess, nil)
	}
	s := &session{token: iss.Token, principal: name, expires: iss.ExpiresAt}
	if h.opts.Tokens != nil {
		if ref, err := h.opts.Tokens.Inspect(r.Context(), iss.Token); err == nil {
			s.ref = ref
		}
	}
	id, evicted, err := h.sessions.add(r.Context(), s)
	if err != nil {
		h.log.ErrorContext(r.Context(), "console: storing the session", "principal", name, "err", err)
		h.revoke(r.Context(), s) // never a token without its session
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "sign-in failed: the session could not be stored; retry")
		return
	}
	for _, o := range evicted {
		h.revokeRef(r.Context(), o.Principal, refOf(o))
	}
	maxAge := max(1, int(s.expires.Sub(h.opts.Now())/time.Second))
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, Secure: h.secure(r),
		SameSite: http.SameSiteStrictMode, Expires: s.expires, MaxAge: maxAge})
	info := sessionInfo{Principal: name, CSRFToken: s.csrf, ExpiresAt: s.expires.UTC()}
	if who.status == http.StatusOK {
		info.WhoAmI = who.body
	}
	writeJSON(w, http.StatusOK, info)
}

// current returns the request's session; when there is none it answers
// the request (401, or 503 when the store failed) and ok is false.
func (h *Handler) current(w http.ResponseWriter, r *http.Request) (*session, string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		noSession(w)
		return nil, "", false
	}
	s, ok, err := h.sessions.get(r.Context(), c.Value)
	if err != nil {
		h.log.ErrorContext(r.Context(), "console: reading the session", "err", err)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "the session store is unavailable; retry")
		return nil, "", false
	}
	if !ok {
		noSession(w)
		return nil, "", false
	}
	return s, c.Value, true
}

func noSession(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "not signed in to the console (or the session expired)")
}

// session answers who is signed in and the CSRF token of the session.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	s, _, ok := h.current(w, r)
	if !ok {
		return
	}
	info := sessionInfo{Principal: s.principal, CSRFToken: s.csrf, ExpiresAt: s.expires.UTC()}
	if who := h.call(r, http.MethodGet, "/api/v1/whoami", "", nil, s.token); who.status == http.StatusOK {
		info.WhoAmI = who.body
	} else if who.status == http.StatusUnauthorized {
		noSession(w) // revoked or the principal disabled elsewhere
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// checkState refuses a state-changing request without this origin or the
// session's CSRF token.
func (h *Handler) checkState(w http.ResponseWriter, r *http.Request, s *session) bool {
	if !h.sameOrigin(r) {
		writeError(w, http.StatusForbidden, "ForbiddenException", "cross-origin request refused")
		return false
	}
	if !s.csrfOK(r.Header.Get(CSRFHeader)) {
		writeError(w, http.StatusForbidden, "ForbiddenException", "missing or wrong "+CSRFHeader+" header")
		return false
	}
	return true
}

// logout revokes the session's token and ends the session.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	s, id, ok := h.current(w, r)
	if !ok {
		return
	}
	if !h.checkState(w, r, s) {
		return
	}
	if _, _, err := h.sessions.remove(r.Context(), id); err != nil {
		h.log.ErrorContext(r.Context(), "console: deleting the session", "err", err)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "sign-out failed: the session store is unavailable; retry")
		return
	}
	revoked := h.revoke(r.Context(), s)
	if h.opts.Audit != nil {
		outcome := audit.OutcomeSuccess
		if !revoked {
			outcome = audit.OutcomeFailure
		}
		h.opts.Audit(context.WithoutCancel(r.Context()), audit.Event{RequestID: r.Header.Get("X-Request-Id"), Principal: s.principal, ClientAddr: httperr.ClientAddr(r),
			Action: ActionLogout, Resource: "principal:" + s.principal, Outcome: outcome,
			Detail: map[string]any{"token_revoked": revoked}})
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: h.secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// revoke revokes the session's token; it reports whether the token is no
// longer accepted.
func (h *Handler) revoke(ctx context.Context, s *session) bool {
	if h.opts.Tokens == nil {
		return false
	}
	ref := s.ref
	if ref.TokenID == "" {
		info, err := h.opts.Tokens.Inspect(ctx, s.token)
		if err != nil {
			h.log.WarnContext(ctx, "console: token not revoked", "principal", s.principal, "err", err)
			return false
		}
		ref = info
	}
	return h.revokeRef(ctx, s.principal, ref)
}

// revokeRef revokes the token ref names; it reports whether the token is
// no longer accepted.
func (h *Handler) revokeRef(ctx context.Context, principal string, ref auth.TokenInfo) bool {
	if h.opts.Tokens == nil || ref.TokenID == "" {
		return false
	}
	if _, err := h.opts.Tokens.Revoke(context.WithoutCancel(ctx), ref); err != nil {
		h.log.WarnContext(ctx, "console: token not revoked", "principal", principal, "err", err)
		return false
	}
	return true
}

// proxyTarget maps a console proxy path to the upstream path it may
// reach: the management API and the REST catalog, never the OAuth
// endpoints.
func proxyTarget(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/console/api/proxy/")
	if !ok {
		return "", false
	}
	target := "/" + rest
	switch {
	case path.Clean(target) != strings.TrimSuffix(target, "/") || strings.HasSuffix(target, "//"):
		return "", false // "..", ".", "//": only clean paths are forwarded
	case strings.HasPrefix(target, "/v1/oauth/"):
		return "", false
	case strings.HasPrefix(target, "/api/v1/"), strings.HasPrefix(target, "/v1/"):
		return target, true
	}
	return "", false
}

// proxy forwards the console's API call with the session's token.
func (h *Handler) proxy(w http.ResponseWriter, r *http.Request) {
	s, _, ok := h.current(w, r)
	if !ok {
		return
	}
	target, ok := proxyTarget(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundException", "the console forwards only /api/v1/ and /v1/ (not /v1/oauth/)")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	default:
		if !h.checkState(w, r, s) {
			return
		}
	}
	out := r.Clone(r.Context())
	out.URL = &url.URL{Path: target, RawQuery: r.URL.RawQuery}
	out.RequestURI = out.URL.RequestURI()
	out.Header.Del("Cookie")
	out.Header.Del(CSRFHeader)
	out.Header.Set("Authorization", "Bearer "+s.token)
	// The console reads metadata only: no storage credentials are vended
	// into the browser (remote signing answers with a signer address).
	out.Header.Set("X-Iceberg-Access-Delegation", "remote-signing")
	w.Header().Set("Cache-Control", "no-store")
	h.opts.Upstream.ServeHTTP(w, out)
}

// recorded is an upstream answer the console reads itself.
type recorded struct {
	status int
	header http.Header
	body   []byte
}

// maxRecorded bounds an upstream answer the console reads itself.
const maxRecorded = 1 << 20

type recorder struct {
	recorded
	wrote bool
}

func (rw *recorder) Header() http.Header { return rw.header }
func (rw *recorder) WriteHeader(code int) {
	if !rw.wrote {
		rw.status, rw.wrote = code, true
	}
}
func (rw *recorder) Write(b []byte) (int, error) {
	rw.WriteHeader(http.StatusOK)
	if len(rw.body)+len(b) > maxRecorded {
		return 0, errors.New("console: upstream answer too large")
	}
	rw.body = append(rw.body, b...)
	return len(b), nil
}

// call makes an in-process request to the upstream handler, as the
// client of r (its address and context), with token when not empty.
func (h *Handler) call(r *http.Request, method, path, contentType string, body io.Reader, token string) recorded {
	out := r.Clone(r.Context())
	out.Method = method
	out.URL = &url.URL{Path: path}
	out.RequestURI = path
	out.Header = http.Header{}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		out.Header.Set("X-Request-Id", id)
	}
	if contentType != "" {
		out.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		out.Header.Set("Authorization", "Bearer "+token)
	}
	if body == nil {
		body = http.NoBody
	}
	out.Body = io.NopCloser(body)
	out.ContentLength = -1
	rec := &recorder{recorded: recorded{header: http.Header{}, status: http.StatusOK}}
	h.opts.Upstream.ServeHTTP(rec, out)
	return rec.recorded
}
