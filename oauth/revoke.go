package oauth

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/floe-lake/floe/audit"
)

// serveRevoke implements RFC 7009 for Floe access tokens: the client
// authenticates, names the token, and from the next request on no node
// accepts it. Tokens that are not Floe's, or expired, are answered 200 as
// the RFC asks. A client may revoke only its own tokens; an admin any.
func (h *Handler) serveRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := &attempt{grant: "revocation"}
	if r.Method != http.MethodPost {
		h.refuse(w, r, a, ActionRevoke, oerr(http.StatusBadRequest, "invalid_request", "the revocation endpoint accepts POST only"))
		return
	}
	form, err := ParseForm(r)
	if err != nil {
		h.refuse(w, r, a, ActionRevoke, err)
		return
	}
	a.clientID = presentedClientID(r, form)
	if err := h.checkLimit(r, a); err != nil {
		h.refuse(w, r, a, ActionRevoke, err)
		return
	}
	p, ok, err := h.authenticateClient(ctx, r, form, a)
	if err == nil && !ok {
		err = oerr(http.StatusUnauthorized, "invalid_client", "client authentication is required to revoke a token")
	}
	if err != nil {
		h.refuse(w, r, a, ActionRevoke, err)
		return
	}
	a.principal = p.Name
	raw := form.Get("token")
	if raw == "" {
		h.refuse(w, r, a, ActionRevoke, oerr(http.StatusBadRequest, "invalid_request", "token is required"))
		return
	}
	d := a.detail()
	delete(d, "grant_type")
	if hint := form.Get("token_type_hint"); hint != "" {
		d["token_type_hint"] = hint
	}
	info, err := h.auth.Inspect(ctx, raw)
	if err != nil {
		d["result"] = "not a Floe access token; nothing to revoke"
		h.finishRevoke(w, r, a, d)
		return
	}
	d["token_id"], d["token_client_id"] = info.TokenID, info.ClientID
	if info.ClientID != p.ClientID && !p.Admin {
		h.refuse(w, r, a, ActionRevoke, oerr(http.StatusBadRequest, "unauthorized_client", "the token was not issued to this client"))
		return
	}
	revoked, err := h.auth.Revoke(ctx, info)
	if err != nil {
		h.refuse(w, r, a, ActionRevoke, errIn(err, "invalid_request"))
		return
	}
	if revoked {
		d["result"] = "revoked"
	} else {
		d["result"] = "already expired"
	}
	h.finishRevoke(w, r, a, d)
}

func (h *Handler) finishRevoke(w http.ResponseWriter, r *http.Request, a *attempt, d map[string]any) {
	if err := h.record(r.Context(), r, a.principal, ActionRevoke, "principal:"+a.principal, audit.OutcomeSuccess, d); err != nil {
		writeJSON(w, http.StatusInternalServerError, oerr(http.StatusInternalServerError, "server_error", "internal error"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
