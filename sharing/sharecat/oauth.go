package sharecat

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/sharing"
)

// token serves POST .../v1/oauth/tokens, the OAuth2 client-credentials
// exchange Iceberg clients make when given credential=<id>:<secret>: the
// client id is the recipient's name and the client secret its bearer
// token, which is returned as the access token with the time it has left.
// Nothing new is issued, so revoking or rotating the recipient token
// reaches clients that exchanged it at once.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	c := &call{rid: h.ids.Of(w, r), share: r.PathValue("share")}
	rec := &httperr.StatusRecorder{ResponseWriter: w}
	var err error
	authed := false
	defer func() {
		h.audit(r, route{name: "oauthToken"}, c, authed, rec.Status, err, start)
	}()
	r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes)
	fail := func(status int, code, desc string) {
		rec.Header().Set("Content-Type", "application/json")
		rec.Header().Set("Cache-Control", "no-store")
		rec.WriteHeader(status)
		_ = json.NewEncoder(rec).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if perr := r.ParseForm(); perr != nil {
		err = floe.E(floe.Invalid, "", "malformed token request")
		fail(http.StatusBadRequest, "invalid_request", "malformed token request")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		err = floe.E(floe.Invalid, "", "unsupported grant type")
		fail(http.StatusBadRequest, "unsupported_grant_type", "share catalogs accept only grant_type=client_credentials")
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		id, secret = u, p
	}
	var rc sharing.Recipient
	if secret != "" {
		rc, err = h.recipient(r, secret)
	} else {
		err = floe.E(floe.Unauthenticated, "token", "missing client_secret")
	}
	if err == nil && id != "" && id != rc.Name {
		err = floe.E(floe.Unauthenticated, "token", "client id does not match the token")
	}
	switch floe.KindOf(err) {
	case floe.Unauthenticated:
		fail(http.StatusUnauthorized, "invalid_client", "unknown client, or a token that is invalid, expired or revoked")
		return
	case floe.Forbidden:
		fail(http.StatusForbidden, "access_denied", floe.PublicMessage(err))
		return
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "share catalog token exchange failed", "err", err)
		fail(http.StatusServiceUnavailable, "temporarily_unavailable", "try again later")
		return
	}
	c.recipient, authed = rc, true
	body := map[string]any{"access_token": secret, "token_type": "bearer",
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
	if !rc.TokenExpiry.IsZero() {
		body["expires_in"] = int64(rc.TokenExpiry.Sub(h.opts.Now()) / time.Second)
	}
	rec.Header().Set("Content-Type", "application/json")
	rec.Header().Set("Cache-Control", "no-store")
	b, _ := json.Marshal(body)
	rec.Header().Set("Content-Length", strconv.Itoa(len(b)))
	rec.WriteHeader(http.StatusOK)
	_, _ = rec.Write(b)
}
