package restcat

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
)

// ForeignSigner is a Foreign whose remote may sign storage requests (the
// Iceberg REST S3 signer): Floe passes remote signing through, its own
// signer endpoint in front of the remote's, so that a caller asking for
// remote signing signs with the remote's signer under Floe's checks and
// never meets the remote's signer or Floe's identity at the remote.
type ForeignSigner interface {
	// LoadTableSigning loads a table asking the remote for remote signing;
	// its config names the remote's signer (s3.remote-signing-enabled)
	// when the remote signs for it, and carries no token of Floe's.
	LoadTableSigning(ctx context.Context, ns []string, name string) (*ForeignTable, error)
	// Sign forwards a signer request (the caller's body, as received) to
	// the remote's signer of the table, with the write identity when write
	// (the catalog's writes must be on), else the read identity.
	Sign(ctx context.Context, ns []string, name string, write bool, body []byte) (json.RawMessage, error)
}

// foreignSigningKeys are the signer keys of a remote's config that Floe
// replaces with its own signer's (and any token it holds).
var foreignSigningKeys = []string{"s3.remote-signing-enabled", "s3.signer", "s3.signer.uri", "s3.signer.endpoint", "token", "credential"}

// loadForeignSigned answers a loadTable that asks for remote signing alone
// (X-Iceberg-Access-Delegation: remote-signing) from a caller who may read
// the table's files, when the remote signs for the table: the remote's
// metadata and storage endpoint, with Floe's signer endpoint for the table
// and the caller's own token for it. ok is false when the remote does not
// sign for it (the caller then gets what the remote vends, as usual).
func (h *Handler) loadForeignSigned(w http.ResponseWriter, r *http.Request, fs ForeignSigner, wh string, ns []string, name string) (ok bool, err error) {
	t, err := fs.LoadTableSigning(r.Context(), ns, name)
	if err != nil {
		return false, err
	}
	if t.Config["s3.remote-signing-enabled"] != "true" {
		return false, nil
	}
	cfg := maps.Clone(t.Config)
	for _, k := range foreignSigningKeys {
		delete(cfg, k)
	}
	for k := range cfg {
		if strings.HasPrefix(k, "s3.access-key-id") || strings.HasPrefix(k, "s3.secret-access-key") || strings.HasPrefix(k, "s3.session-token") {
			delete(cfg, k) // a signing answer hands out no key
		}
	}
	cfg["s3.remote-signing-enabled"] = "true"
	cfg["s3.signer"] = "S3V4RestSigner" // PyIceberg picks its signer by this name
	cfg["s3.signer.uri"] = h.baseURL(r)
	cfg["s3.signer.endpoint"] = strings.TrimPrefix(r.URL.EscapedPath(), "/") + "/sign"
	if tok, ok := httperr.Bearer(r); ok {
		cfg["token"] = tok // the caller's own token, for Floe's signer
	}
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		c.setDetail("access", "remote-signing")
	}
	body := map[string]any{"metadata": t.Metadata, "config": cfg}
	if t.MetadataLocation != "" {
		body["metadata-location"] = t.MetadataLocation
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
	return true, nil
}

// signForeign serves POST .../tables/{table}/sign on a foreign catalog:
// Floe checks the caller may read the table's files (SELECT without a data
// filter) and, for a write (any method but GET and HEAD), may write them
// (MODIFY, a token that may write, the catalog's writes on); then the
// remote's signer signs with Floe's identity. The remote checks that the
// request stays inside its table.
func (h *Handler) signForeign(w http.ResponseWriter, r *http.Request, f Foreign, fw ForeignWriter) error {
	wh := r.PathValue("prefix")
	id, err := identParam(r, "table")
	if err != nil {
		return err
	}
	fs, ok := f.(ForeignSigner)
	if !ok {
		return floe.E(floe.Forbidden, "", "foreign catalog %s does not pass remote signing through: read its tables with the credentials Floe passes on", wh)
	}
	var req remoteSignRequest
	body, err := readForwarded(r, &req, "region", "uri", "method", "headers")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.Table(wh, id)); err != nil {
		return err
	}
	mayWrite, denied := h.fileAccess(r, wh, id)
	if denied != nil {
		return denied
	}
	write := req.Method != http.MethodGet && req.Method != http.MethodHead
	if write {
		switch {
		case fw == nil:
			return floe.E(floe.Forbidden, "", "cannot sign %s %s: %s is a foreign catalog, read-only in Floe", req.Method, req.URI, wh)
		case !mayWrite:
			d := h.writeDenial(r, wh, id)
			return floe.Wrap(floe.Forbidden, d, "cannot sign %s %s: %s", req.Method, req.URI, floe.PublicMessage(d))
		}
	}
	out, err := fs.Sign(r.Context(), id.Namespace, id.Name, write, body)
	if err != nil {
		return err
	}
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		c.setDetail("signed_method", req.Method)
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}

// passthroughKeys are the public facts of a passed-through credential an
// audit event keeps (never a secret or a session token).
var passthroughKeys = []string{"s3.access-key-id", "s3.session-token-expires-at-ms", "expiration-time", "gcs.oauth2.token-expires-at", "adls.sas-token-expires-at-ms", "client.region"}

// auditPassthrough records one federation.credentials.passthrough event
// per storage credential of a foreign table handed to the caller: the
// catalog, the identity it was vended to, its prefix and public facts,
// and the caller's token id, so that the remote's object reads correlate
// with the local request.
func (h *Handler) auditPassthrough(r *http.Request, wh string, id catalog.Ident, creds []ForeignCredential, identity string) {
	if h.opts.Audit == nil {
		return
	}
	ctx := r.Context()
	for _, sc := range creds {
		d := map[string]any{"catalog": wh, "identity": identity, "prefix": sc.Prefix}
		for _, k := range passthroughKeys {
			if v, ok := sc.Config[k]; ok {
				d[k] = v
			}
		}
		e := audit.Event{RequestID: requestID(ctx), ClientAddr: httperr.ClientAddr(r), Action: "federation.credentials.passthrough",
			Resource: "table:" + wh + "/" + id.String(), Outcome: audit.OutcomeSuccess, Detail: d}
		if cl, ok := auth.ClaimsFrom(ctx); ok {
			e.Principal = cl.Principal
			d["token_id"] = cl.TokenID
		}
		h.opts.Audit(context.WithoutCancel(ctx), e)
	}
}
