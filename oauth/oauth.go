// Package oauth serves Floe's OAuth 2.0 endpoints over the auth service:
//
//   - POST /v1/oauth/tokens: the token endpoint. Grants: client_credentials
//     (RFC 6749 §4.4), RFC 8693 token exchange (the subject token is a Floe
//     token to refresh, a JWT assertion signed with a key registered for
//     the client, or a JWT of a trusted identity provider) and the RFC 7523
//     jwt-bearer grant. Clients authenticate with client_secret_basic,
//     client_secret_post or private_key_jwt (RFC 7523 client_assertion).
//   - POST /v1/oauth/revoke: RFC 7009 revocation of access tokens.
//   - GET /.well-known/oauth-authorization-server (RFC 8414),
//     /.well-known/openid-configuration and /.well-known/jwks.json.
//
// Errors are answered in RFC 6749 §5.2 form. Failed authentication attempts
// are rate limited per client id and per client IP, and every token issued
// or refused and every revocation is recorded in the audit log (never the
// secret, the assertion or the token).
package oauth

import (
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/loginlimit"
)

// Grant, token type and assertion type URNs.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeIDToken       = "urn:ietf:params:oauth:token-type:id_token"
	ClientAssertionJWT     = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// Endpoint paths.
const (
	TokenPath     = auth.TokenEndpointPath
	RevokePath    = "/v1/oauth/revoke"
	MetadataPath  = "/.well-known/oauth-authorization-server"
	OpenIDPath    = "/.well-known/openid-configuration"
	JWKSPath      = "/.well-known/jwks.json"
	wellKnownRoot = "/.well-known/"
)

// MaxFormBytes bounds a token request body.
const MaxFormBytes = 64 << 10

// Audit actions.
const (
	ActionToken  = "oauth.token"
	ActionRevoke = "oauth.revoke"
)

// DefaultFailuresPerMinute is the default rate limit of failed
// authentication attempts per client id and per client IP.
const DefaultFailuresPerMinute = 10

// Auditor records audit events; *audit.Log implements it.
type Auditor interface {
	Append(ctx context.Context, e audit.Event) (audit.Record, error)
}

// Options configures a Handler. Zero values mean defaults.
type Options struct {
	// Logger receives a line per refused request (never a secret or token).
	Logger *slog.Logger
	// Audit records every token issued or refused and every revocation;
	// nil records nothing.
	Audit Auditor
	// Now is the clock of the rate limiter (default time.Now).
	Now func() time.Time
	// FailuresPerMinute is how many failed authentication attempts each
	// client id and each client IP may make per minute (and in a burst)
	// before further attempts are answered 429 (default
	// DefaultFailuresPerMinute; negative disables the limit).
	FailuresPerMinute int
}

// Handler serves the OAuth endpoints; mount it at /v1/oauth/ and /.well-known/.
type Handler struct {
	auth    *auth.Service
	log     *slog.Logger
	audit   Auditor
	limiter *loginlimit.Limiter
	mux     *http.ServeMux
	ids     *httperr.RequestIDs
}

// New returns a Handler over svc.
func New(svc *auth.Service, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FailuresPerMinute == 0 {
		opts.FailuresPerMinute = DefaultFailuresPerMinute
	}
	h := &Handler{auth: svc, log: opts.Logger, audit: opts.Audit, limiter: loginlimit.New(loginlimit.Options{PerMinute: opts.FailuresPerMinute, Now: opts.Now}),
		mux: http.NewServeMux(), ids: httperr.NewRequestIDs(time.Now)}
	h.mux.HandleFunc(TokenPath, h.serveToken)
	h.mux.HandleFunc(RevokePath, h.serveRevoke)
	h.mux.HandleFunc("GET "+MetadataPath, h.serveMetadata(false))
	h.mux.HandleFunc("GET "+MetadataPath+"/", h.serveMetadata(false))
	h.mux.HandleFunc("GET "+OpenIDPath, h.serveMetadata(true))
	h.mux.HandleFunc("GET "+JWKSPath, h.serveJWKS)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, oerr(http.StatusNotFound, "invalid_request", "no OAuth endpoint at "+quote(r.URL.Path)))
	})
	return h
}

// Routes reports whether path is served by the Handler: /v1/oauth/... and
// /.well-known/....
func Routes(path string) bool {
	return strings.HasPrefix(path, "/v1/oauth/") || strings.HasPrefix(path, wellKnownRoot)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := h.ids.Of(w, r)
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ridKey{}, rid)))
}

type ridKey struct{}

func requestID(ctx context.Context) string {
	s, _ := ctx.Value(ridKey{}).(string)
	return s
}

// Response is a successful token response.
type Response struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int    `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
	Scope           string `json:"scope,omitempty"`
}

// Error is an RFC 6749 §5.2 error body.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	status      int
	// reason is the precise cause for logs and audit; it may say more than
	// Description (e.g. unknown client vs wrong secret) but never a secret.
	reason     string
	retryAfter time.Duration
	// limited marks a refusal by the rate limiter: it does not count as a
	// further failure, and is audited only when quiet is not set.
	limited, quiet bool
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oerr(status int, code, desc string) *Error {
	return &Error{Code: code, Description: desc, status: status}
}

// authFailure reports whether the error counts as a failed authentication
// attempt for the rate limit.
func (e *Error) authFailure() bool {
	return !e.limited && (e.Code == "invalid_client" || e.Code == "invalid_grant")
}

// errIn maps an error from the auth service to an OAuth error. ctx says
// what was being checked: an Unauthenticated error is invalid_client for
// client authentication and invalid_grant for a grant.
func errIn(err error, unauthCode string) *Error {
	if oe, ok := err.(*Error); ok {
		return oe
	}
	var e *Error
	switch floe.KindOf(err) {
	case floe.Unauthenticated:
		status := http.StatusBadRequest
		if unauthCode == "invalid_client" {
			status = http.StatusUnauthorized
		}
		e = oerr(status, unauthCode, floe.PublicMessage(err))
	case floe.Invalid:
		e = oerr(http.StatusBadRequest, "invalid_request", floe.PublicMessage(err))
	case floe.Forbidden:
		if floe.EntityOf(err) == "network" { // the principal's allowlist
			e = oerr(http.StatusForbidden, "access_denied", floe.PublicMessage(err))
			break
		}
		e = oerr(http.StatusBadRequest, "invalid_scope", floe.PublicMessage(err))
	case floe.Unavailable:
		e = oerr(http.StatusServiceUnavailable, "temporarily_unavailable", floe.PublicMessage(err))
		e.retryAfter = time.Second
	default:
		e = oerr(http.StatusInternalServerError, "server_error", "internal error")
	}
	e.reason = err.Error()
	return e
}

// Form is a parsed application/x-www-form-urlencoded body.
type Form map[string]string

// Get returns the single value of key ("" if absent).
func (f Form) Get(key string) string { return f[key] }

// ParseForm reads a token request body: it must be form-encoded, at most
// MaxFormBytes, and name each parameter at most once (RFC 6749 §3.2).
// Parameters in the URL query are ignored.
func ParseForm(r *http.Request) (Form, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/x-www-form-urlencoded" {
		return nil, oerr(http.StatusBadRequest, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(nil, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, oerr(http.StatusBadRequest, "invalid_request", "malformed form body")
	}
	return formFromValues(r.PostForm)
}

func formFromValues(v map[string][]string) (Form, error) {
	f := Form{}
	for k, vs := range v {
		if len(vs) != 1 {
			return nil, oerr(http.StatusBadRequest, "invalid_request", "parameter "+quote(k)+" must appear exactly once")
		}
		f[k] = vs[0]
	}
	return f, nil
}

// unescapeBasic undoes the form-encoding RFC 6749 §2.3.1 applies to Basic credentials.
func unescapeBasic(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
