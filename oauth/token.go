package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/httperr"
)

// Client authentication methods (RFC 8414 names).
const (
	methodBasic = "client_secret_basic"
	methodPost  = "client_secret_post"
	methodJWT   = "private_key_jwt"
	methodNone  = "none"
)

// attempt collects what a request presented and what became of it, for
// the rate limiter, the audit log and the log. It holds no secret.
type attempt struct {
	grant      string
	clientID   string // as presented (unverified until principal is set)
	method     string // client authentication method
	basic      bool   // credentials came in an Authorization: Basic header
	principal  string // authenticated principal or subject name
	subject    string // how the subject of an exchange was proven
	subjectJTI string // jti of the subject token or assertion
	assertJTI  string // jti of the client assertion
	scope      string // requested scope
}

func (a *attempt) detail() map[string]any {
	d := map[string]any{"grant_type": a.grant}
	for k, v := range map[string]string{"client_id": a.clientID, "auth_method": a.method, "subject_kind": a.subject,
		"subject_jti": a.subjectJTI, "client_assertion_jti": a.assertJTI, "requested_scope": a.scope} {
		if v != "" {
			d[k] = v
		}
	}
	return d
}

// limitKeys are the rate limiter's keys for the request.
func (a *attempt) limitKeys(ip string) []string {
	keys := []string{"ip:" + ip}
	if a.clientID != "" {
		keys = append(keys, "client:"+a.clientID)
	}
	return keys
}

func (h *Handler) serveToken(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := &attempt{}
	resp, err := h.token(r, a)
	if err != nil {
		h.refuse(w, r, a, ActionToken, err)
		return
	}
	d := a.detail()
	d["scope"], d["token_id"], d["expires_in"] = resp.Scope, resp.tokenID, resp.ExpiresIn
	if err := h.record(ctx, r, a.principal, ActionToken, "principal:"+a.principal, audit.OutcomeSuccess, d); err != nil {
		// A token that could not be audited is not handed out.
		writeJSON(w, http.StatusInternalServerError, oerr(http.StatusInternalServerError, "server_error", "internal error"))
		return
	}
	writeJSON(w, http.StatusOK, resp.Response)
}

// refuse answers a refused request, counts it against the rate limit when
// it was a failed authentication, logs and audits it.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, a *attempt, action string, err error) {
	ctx := r.Context()
	oe := errIn(err, "invalid_client")
	ip := httperr.ClientAddr(r)
	if oe.authFailure() {
		h.limiter.Fail(a.limitKeys(ip)...)
	}
	reason := oe.reason
	if reason == "" {
		reason = oe.Description
	}
	h.log.InfoContext(ctx, "oauth: request refused", "request_id", requestID(ctx), "action", action, "error", oe.Code,
		"reason", reason, "client_id", a.clientID, "grant_type", a.grant, "client_addr", ip)
	if !oe.quiet {
		d := a.detail()
		d["error"], d["reason"] = oe.Code, reason
		resource := "client:" + a.clientID
		if a.clientID == "" {
			resource = "client:"
		}
		_ = h.record(ctx, r, a.principal, action, resource, audit.OutcomeFailure, d)
	}
	if oe.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(oe.retryAfter.Seconds()))))
	}
	if oe.status == http.StatusUnauthorized && a.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
	}
	writeJSON(w, oe.status, oe)
}

// record appends an audit event, if an auditor is configured.
func (h *Handler) record(ctx context.Context, r *http.Request, principal, action, resource, outcome string, detail map[string]any) error {
	if h.audit == nil {
		return nil
	}
	_, err := h.audit.Append(ctx, audit.Event{RequestID: requestID(ctx), Principal: principal, ClientAddr: httperr.ClientAddr(r),
		Action: action, Resource: resource, Outcome: outcome, Detail: detail})
	return err
}

// issued is a token response and what the audit log needs of it.
type issued struct {
	Response
	tokenID string
}

func (h *Handler) token(r *http.Request, a *attempt) (issued, error) {
	if r.Method != http.MethodPost {
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "the token endpoint accepts POST only")
	}
	form, err := ParseForm(r)
	if err != nil {
		return issued{}, err
	}
	a.grant, a.scope = form.Get("grant_type"), form.Get("scope")
	a.clientID = presentedClientID(r, form)
	if a.clientID == "" && a.grant == GrantTokenExchange {
		a.clientID = unverifiedClientID(form.Get("subject_token"), h.auth.Issuer())
	}
	if a.clientID == "" && a.grant == GrantJWTBearer {
		a.clientID = unverifiedClientID(form.Get("assertion"), h.auth.Issuer())
	}
	if err := h.checkLimit(r, a); err != nil {
		return issued{}, err
	}
	ctx := r.Context()
	p, authenticated, err := h.authenticateClient(ctx, r, form, a)
	if err != nil {
		return issued{}, err
	}
	switch a.grant {
	case GrantClientCredentials:
		if !authenticated {
			return issued{}, oerr(http.StatusUnauthorized, "invalid_client",
				"client authentication is required: client_secret_basic, client_secret_post or private_key_jwt")
		}
		a.principal = p.Name
		scopes, err := auth.NarrowScopes(p, a.scope)
		if err != nil {
			return issued{}, errIn(err, "invalid_grant")
		}
		return h.issue(ctx, p, scopes)
	case GrantTokenExchange:
		return h.exchange(ctx, form, a)
	case GrantJWTBearer:
		if form.Get("assertion") == "" {
			return issued{}, oerr(http.StatusBadRequest, "invalid_request", "assertion is required")
		}
		sub, err := h.auth.VerifyAssertion(ctx, form.Get("assertion"), "")
		if err != nil {
			return issued{}, errIn(err, "invalid_grant")
		}
		return h.issueFor(ctx, sub, a)
	case "":
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		return issued{}, oerr(http.StatusBadRequest, "unsupported_grant_type", "grant_type "+quote(a.grant)+" is not supported")
	}
}

// checkLimit refuses the request with 429 while its client id or address
// has used up its failed attempts.
func (h *Handler) checkLimit(r *http.Request, a *attempt) error {
	retry, first, blocked := h.limiter.Blocked(a.limitKeys(httperr.ClientAddr(r))...)
	if !blocked {
		return nil
	}
	secs := int(math.Ceil(retry.Seconds()))
	if secs < 1 {
		secs = 1
	}
	e := oerr(http.StatusTooManyRequests, "invalid_client", fmt.Sprintf("too many failed attempts; retry after %d s", secs))
	e.retryAfter = time.Duration(secs) * time.Second
	e.reason = "too many failed attempts from this client id or address"
	e.limited, e.quiet = true, !first // audit only the first refusal of a blocked key
	return e
}

// presentedClientID is the client id the request names, unverified.
func presentedClientID(r *http.Request, form Form) string {
	if id, _, ok := r.BasicAuth(); ok {
		return unescapeBasic(id)
	}
	if id := form.Get("client_id"); id != "" {
		return id
	}
	return unverifiedClientID(form.Get("client_assertion"), "")
}

// unverifiedClientID reads the client a JWT claims to come from, for the
// rate limiter only: client_id for a Floe token (iss = floeIssuer), else iss.
func unverifiedClientID(raw, floeIssuer string) string {
	segs := strings.Split(raw, ".")
	if len(segs) != 3 || len(raw) > 16<<10 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(segs[1])
	if err != nil {
		return ""
	}
	var c struct {
		Iss      any `json:"iss"`
		ClientID any `json:"client_id"`
	}
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	iss, _ := c.Iss.(string)
	if iss != "" && iss == floeIssuer {
		id, _ := c.ClientID.(string)
		return id
	}
	return iss
}

// authenticateClient checks the client authentication the request carries,
// if any: exactly one of HTTP Basic, client_secret in the body, or a JWT
// client_assertion. A client_id alone authenticates nothing.
func (h *Handler) authenticateClient(ctx context.Context, r *http.Request, form Form, a *attempt) (auth.Principal, bool, error) {
	id, secret, basic := r.BasicAuth()
	post := form.Get("client_secret") != ""
	jwt := form.Get("client_assertion") != "" || form.Get("client_assertion_type") != ""
	a.basic = basic
	n := 0
	for _, b := range []bool{basic, post, jwt} {
		if b {
			n++
		}
	}
	if n > 1 {
		return auth.Principal{}, false, oerr(http.StatusBadRequest, "invalid_request", "use exactly one client authentication method")
	}
	var p auth.Principal
	var err error
	switch {
	case basic:
		a.method = methodBasic
		id, secret = unescapeBasic(id), unescapeBasic(secret)
		if form.Get("client_id") != "" && form.Get("client_id") != id {
			return auth.Principal{}, false, oerr(http.StatusBadRequest, "invalid_request", "client_id in the body differs from the Basic credentials")
		}
		p, err = h.auth.Authenticate(ctx, id, secret)
	case post:
		a.method = methodPost
		if form.Get("client_id") == "" {
			return auth.Principal{}, false, oerr(http.StatusUnauthorized, "invalid_client", "client_secret needs a client_id")
		}
		p, err = h.auth.Authenticate(ctx, form.Get("client_id"), form.Get("client_secret"))
	case jwt:
		a.method = methodJWT
		if form.Get("client_assertion_type") != ClientAssertionJWT {
			return auth.Principal{}, false, oerr(http.StatusBadRequest, "invalid_request", "client_assertion_type must be "+ClientAssertionJWT)
		}
		if form.Get("client_assertion") == "" {
			return auth.Principal{}, false, oerr(http.StatusBadRequest, "invalid_request", "client_assertion is required with client_assertion_type")
		}
		var sub auth.Subject
		sub, err = h.auth.VerifyAssertion(ctx, form.Get("client_assertion"), form.Get("client_id"))
		p, a.assertJTI = sub.Principal, sub.TokenID
	default:
		a.method = methodNone
		return auth.Principal{}, false, nil
	}
	if err != nil {
		return auth.Principal{}, false, errIn(err, "invalid_client")
	}
	return p, true, nil
}

// exchange implements RFC 8693 token exchange for a subject token that is
// a Floe token (refresh), a client's JWT assertion, or a trusted IdP's JWT.
func (h *Handler) exchange(ctx context.Context, form Form, a *attempt) (issued, error) {
	st, stt := form.Get("subject_token"), form.Get("subject_token_type")
	switch {
	case st == "" || stt == "":
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "subject_token and subject_token_type are required")
	case form.Get("actor_token") != "" || form.Get("actor_token_type") != "":
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "actor_token (delegation) is not supported")
	}
	switch stt {
	case TokenTypeAccessToken, TokenTypeJWT, TokenTypeIDToken:
	default:
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "subject_token_type "+quote(stt)+" is not supported")
	}
	switch rtt := form.Get("requested_token_type"); rtt {
	case "", TokenTypeAccessToken, TokenTypeJWT:
	default:
		return issued{}, oerr(http.StatusBadRequest, "invalid_request", "requested_token_type "+quote(rtt)+" is not supported")
	}
	sub, err := h.auth.VerifySubjectToken(ctx, st)
	if err != nil {
		return issued{}, errIn(err, "invalid_grant")
	}
	return h.issueFor(ctx, sub, a)
}

// issueFor issues a token for a verified subject, narrowing its scopes.
func (h *Handler) issueFor(ctx context.Context, sub auth.Subject, a *attempt) (issued, error) {
	a.principal, a.subject, a.subjectJTI = sub.Principal.Name, sub.Kind, sub.TokenID
	scopes, err := sub.Narrow(a.scope)
	if err != nil {
		return issued{}, errIn(err, "invalid_grant")
	}
	return h.issue(ctx, sub.Principal, scopes)
}

func (h *Handler) issue(ctx context.Context, p auth.Principal, scopes []string) (issued, error) {
	t, err := h.auth.Issue(ctx, p, scopes)
	if err != nil {
		return issued{}, errIn(err, "invalid_grant")
	}
	return issued{Response: Response{AccessToken: t.AccessToken, TokenType: "bearer", ExpiresIn: t.ExpiresIn,
		IssuedTokenType: TokenTypeAccessToken, Scope: t.Scope}, tokenID: t.TokenID}, nil
}
