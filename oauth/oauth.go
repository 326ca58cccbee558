// Package oauth serves Floe's OAuth 2.0 token endpoint (RFC 6749 client
// credentials, RFC 8693 token exchange for refresh) over the auth service,
// answering errors in RFC 6749 §5.2 form.
package oauth

import (
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// Grant and token type URNs.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// MaxFormBytes bounds a token request body.
const MaxFormBytes = 64 << 10

// Handler serves POST /v1/oauth/tokens.
type Handler struct {
	Auth   *auth.Service
	Logger *slog.Logger
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
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oerr(status int, code, desc string) *Error {
	return &Error{Code: code, Description: desc, status: status}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, basic, err := h.token(r)
	if err != nil {
		oe := toOAuthError(err)
		if h.Logger != nil {
			h.Logger.InfoContext(r.Context(), "token request refused", "error", oe.Code, "reason", oe.Description)
		}
		if oe.status == http.StatusUnauthorized && basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
		}
		writeJSON(w, oe.status, oe)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *Handler) token(r *http.Request) (Response, bool, error) {
	if r.Method != http.MethodPost {
		return Response{}, false, oerr(http.StatusBadRequest, "invalid_request", "the token endpoint accepts POST only")
	}
	form, err := ParseForm(r)
	if err != nil {
		return Response{}, false, err
	}
	clientID, secret, basic := r.BasicAuth()
	if basic {
		clientID, secret = unescapeBasic(clientID), unescapeBasic(secret)
		if form.Get("client_id") != "" && form.Get("client_id") != clientID {
			return Response{}, true, oerr(http.StatusBadRequest, "invalid_request", "client_id in the body differs from the Basic credentials")
		}
	} else {
		clientID, secret = form.Get("client_id"), form.Get("client_secret")
	}
	ctx := r.Context()
	switch gt := form.Get("grant_type"); gt {
	case GrantClientCredentials:
		if clientID == "" || secret == "" {
			return Response{}, basic, oerr(http.StatusUnauthorized, "invalid_client", "client_id and client_secret are required")
		}
		p, err := h.Auth.Authenticate(ctx, clientID, secret)
		if err != nil {
			return Response{}, basic, err
		}
		scopes, err := auth.NarrowScopes(p, form.Get("scope"))
		if err != nil {
			return Response{}, basic, oerr(http.StatusBadRequest, "invalid_scope", floe.PublicMessage(err))
		}
		return h.issue(p, scopes)
	case GrantTokenExchange:
		return h.exchange(ctx, form, basic)
	case "":
		return Response{}, basic, oerr(http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		return Response{}, basic, oerr(http.StatusBadRequest, "unsupported_grant_type", "grant_type "+quote(gt)+" is not supported")
	}
}

func (h *Handler) issue(p auth.Principal, scopes []string) (Response, bool, error) {
	t, err := h.Auth.Issue(p, scopes)
	if err != nil {
		return Response{}, false, err
	}
	return Response{AccessToken: t.AccessToken, TokenType: "bearer", ExpiresIn: t.ExpiresIn,
		IssuedTokenType: TokenTypeAccessToken, Scope: t.Scope}, false, nil
}

// exchange implements refresh: an unexpired Floe access token is exchanged for a fresh one.
func (h *Handler) exchange(ctx context.Context, form Form, basic bool) (Response, bool, error) {
	st := form.Get("subject_token")
	if st == "" || form.Get("subject_token_type") == "" {
		return Response{}, basic, oerr(http.StatusBadRequest, "invalid_request", "subject_token and subject_token_type are required")
	}
	switch form.Get("subject_token_type") {
	case TokenTypeAccessToken, TokenTypeJWT:
	default:
		return Response{}, basic, oerr(http.StatusBadRequest, "invalid_request", "subject_token_type "+quote(form.Get("subject_token_type"))+" is not supported")
	}
	t, err := h.Auth.Refresh(ctx, st, form.Get("scope"))
	if err != nil {
		if floe.KindOf(err) == floe.Unauthenticated {
			return Response{}, basic, oerr(http.StatusBadRequest, "invalid_grant", "subject_token is invalid or expired")
		}
		if floe.KindOf(err) == floe.Forbidden {
			return Response{}, basic, oerr(http.StatusBadRequest, "invalid_scope", floe.PublicMessage(err))
		}
		return Response{}, basic, err
	}
	return Response{AccessToken: t.AccessToken, TokenType: "bearer", ExpiresIn: t.ExpiresIn,
		IssuedTokenType: TokenTypeAccessToken, Scope: t.Scope}, basic, nil
}

func toOAuthError(err error) *Error {
	if oe, ok := err.(*Error); ok {
		return oe
	}
	switch floe.KindOf(err) {
	case floe.Unauthenticated:
		return oerr(http.StatusUnauthorized, "invalid_client", floe.PublicMessage(err))
	case floe.Invalid:
		return oerr(http.StatusBadRequest, "invalid_request", floe.PublicMessage(err))
	case floe.Forbidden:
		return oerr(http.StatusBadRequest, "unauthorized_client", floe.PublicMessage(err))
	case floe.Unavailable:
		return oerr(http.StatusServiceUnavailable, "temporarily_unavailable", floe.PublicMessage(err))
	default:
		return oerr(http.StatusInternalServerError, "server_error", "internal error")
	}
}

// Form is a parsed application/x-www-form-urlencoded body.
type Form map[string]string

// Get returns the single value of key ("" if absent).
func (f Form) Get(key string) string { return f[key] }

// ParseForm reads a token request body: it must be form-encoded, at most
// MaxFormBytes, and name each parameter at most once (RFC 6749 §3.2).
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
