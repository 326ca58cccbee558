package restcat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/vend"
)

// Vending configures storage access delegation: what loadTable,
// createTable and registerTable hand out with a table, and what the
// credentials and sign endpoints serve.
type Vending struct {
	// Minter mints credentials for a table's location prefix (Floe's
	// embedded STS, or AWS STS AssumeRole).
	Minter vend.Minter
	// Endpoint is the S3 endpoint clients use ("" for AWS S3 itself).
	Endpoint string
	// Region is the signing region clients use.
	Region string
	// PathStyle makes clients address buckets by path (required for
	// Floe's embedded endpoint).
	PathStyle bool
	// TTL is the credential lifetime (clamped by vend to 15 min–12 h).
	TTL time.Duration
	// Audit, if set, records every credential handed out.
	Audit func(ctx context.Context, action, resource string, detail map[string]any)
	// Revoked, if set, reports a credential that the storage endpoint
	// would refuse as revoked (revoke.List): such a credential is never
	// handed out or signed with again from the cache; a new one is minted.
	Revoked func(s *vend.Session) error
	// Observe, if set, is told of every credential handed out in an answer
	// (access: read or read-write) and whether it was a reused one (a
	// credential minted for the same token, table and access moments
	// before) or a new one (metrics).
	Observe func(access string, reused bool)
	// Notices makes a loadTable that vends no credential (the caller may
	// not read the table's files) vend a notice credential instead: one
	// that allows nothing and makes Floe's embedded S3 endpoint answer
	// with the reason, so that an engine reading the table shows why
	// (vend.Notice). Only the embedded endpoint understands them.
	Notices bool
	// SQLAddress is the host:port of the SQL endpoint ("" when it is off),
	// named where a caller is told to read a filtered table through it.
	SQLAddress string

	mu    sync.RWMutex
	cache map[credKey]vendedCreds
	// loads holds the storage access of loadTable answers built from a
	// reused credential, by credential id and table path, with its JSON
	// encoding: a table loaded again within the reuse window gets the
	// same bytes without building and encoding them again.
	loads map[string]tableAccess
}

// credKey identifies the credentials a caller may be handed again: the
// same token (so each credential still names the token it was vended
// to), table prefix and access.
type credKey struct {
	use                string // "vend" or "sign"
	tokenID, principal string
	table              string // the session's table: a renamed table gets new credentials
	prefix             string
	write              bool
}

type vendedCreds struct {
	creds  vend.Credentials
	sess   *vend.Session
	id     string // the vend.Session ID, as audited
	minted time.Time
}

// Reuse windows of cached credentials. A loadTable hands a credential out
// again only within a minute of minting it, so every client still gets
// (almost) the full TTL; remote signing, which never shows the
// credential to the client, uses it until five minutes before expiry.
const (
	vendReuse    = time.Minute
	signMinValid = 5 * time.Minute
)

// credentials returns a credential for the caller on bucket/prefix: a
// cached one that fresh accepts, or a newly minted one (audited as a
// vend), with the credential's id.
func (v *Vending) credentials(ctx context.Context, use string, id catalog.Ident, bucket, prefix string, write bool,
	fresh func(vendedCreds) bool) (creds vend.Credentials, credID string, err error) {
	s := session(ctx, id, bucket, prefix, write)
	key := credKey{use: use, tokenID: s.TokenID, principal: s.PrincipalID + "/" + s.Principal, table: s.Table,
		prefix: bucket + "/" + prefix, write: write}
	v.mu.RLock()
	c, ok := v.cache[key]
	v.mu.RUnlock()
	// A cached credential is handed out again only if nothing was revoked
	// since it was minted (the store's revocation version, read with this
	// request's token, has not moved): this node's revocation state may
	// not have caught up with a revocation made a moment ago.
	unrevoked := !s.EpochSet || c.sess == nil || c.sess.Epoch >= s.Epoch
	reuse := ok && fresh(c) && unrevoked && (v.Revoked == nil || v.Revoked(c.sess) == nil)
	if reuse {
		v.observe(s, true)
		return c.creds, c.id, nil
	}
	if creds, credID, err = v.mintAndCache(ctx, s, key); err == nil {
		v.observe(s, false)
	}
	return creds, credID, err
}

// observe tells Observe of a credential handed out for s.
func (v *Vending) observe(s vend.Session, reused bool) {
	if v.Observe != nil {
		v.Observe(s.Grants[0].Access.String(), reused)
	}
}

// mintAndCache mints a credential for s, audits it and caches it under key
// (the cache is bounded: it starts afresh past 10,000 entries).
func (v *Vending) mintAndCache(ctx context.Context, s vend.Session, key credKey) (vend.Credentials, string, error) {
	creds, sess, err := v.Minter.Mint(ctx, s, v.TTL)
	if err != nil {
		return vend.Credentials{}, "", err
	}
	v.audit(ctx, sess)
	v.mu.Lock()
	if v.cache == nil || len(v.cache) > 10000 {
		v.cache = map[credKey]vendedCreds{}
	}
	v.cache[key] = vendedCreds{creds: creds, sess: &sess, id: sess.ID, minted: time.Now()}
	v.mu.Unlock()
	return creds, sess.ID, nil
}

// Delegation modes a client may ask for in X-Iceberg-Access-Delegation.
const (
	delegateVended = "vended-credentials"
	delegateSign   = "remote-signing"
)

// delegation reads X-Iceberg-Access-Delegation. Without the header Floe
// vends credentials anyway: that is its default. Only a client that asks for
// remote signing alone gets the signer configuration instead.
func delegation(r *http.Request) string {
	h := r.Header.Get("X-Iceberg-Access-Delegation")
	if h == "" {
		return delegateVended
	}
	sign := false
	for _, m := range strings.Split(h, ",") {
		switch strings.TrimSpace(m) {
		case delegateVended:
			return delegateVended
		case delegateSign:
			sign = true
		}
	}
	if sign {
		return delegateSign
	}
	return delegateVended
}

// tableAccess is what a LoadTableResult carries for storage access.
type tableAccess struct {
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
	// tail, if set, is what resultTail returns. A tableAccess that has it is
	// shared and must not be changed.
	tail []byte
}

// resultTail returns the part of a LoadTableResult after the metadata: a's
// members, as in `,"config":{...}}`.
func (a *tableAccess) resultTail() []byte {
	if a.tail != nil {
		return a.tail
	}
	b, _ := json.Marshal(a)
	b[0] = ',' // the members continue the result's object
	return b
}

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// session describes the caller and table for a credential.
func session(ctx context.Context, id catalog.Ident, bucket, prefix string, write bool) vend.Session {
	s := vend.Session{Table: id.String(), Grants: []vend.Grant{{Bucket: bucket, Prefix: prefix, Access: vend.Read}}}
	if write {
		s.Grants[0].Access = vend.ReadWrite
	}
	if c, ok := auth.ClaimsFrom(ctx); ok {
		s.Principal, s.PrincipalID, s.TokenID = c.Principal, c.PrincipalID, c.TokenID
		s.AllowedCIDRs = c.AllowedCIDRs // the principal's allowlist travels with the credential
		// Minted under the revocation version read with the token, before
		// this request was authorized (see auth.Claims.RevocationVersion).
		s.Epoch, s.EpochSet = c.RevocationVersion, c.HasRevocationVersion
	} else {
		s.Principal = "anonymous"
	}
	return s
}

// access returns the storage access for a table at tableLoc: the signer
// configuration for a client that asked for remote signing only, vended
// credentials otherwise. A location that is not on S3 gets an empty config.
func (h *Handler) access(r *http.Request, wh string, id catalog.Ident, tableLoc string) (tableAccess, error) {
	v := h.opts.Vending
	bucket, prefix, ok := objstore.LocationPrefix(tableLoc)
	if v == nil || !ok {
		return tableAccess{Config: map[string]string{}}, nil
	}
	write, denied := h.fileAccess(r, wh, id)
	if denied != nil {
		if floe.KindOf(denied) != floe.Forbidden {
			return tableAccess{}, denied
		}
		// Metadata only: the caller may describe the table but not read its
		// files. The reason rides along for whoever inspects the config,
		// and in a notice credential for whoever reads the files anyway.
		reason := floe.PublicMessage(denied)
		cfg := map[string]string{}
		if h.filtered(r, wh, id) && v.SQLAddress != "" {
			cfg[ReadPathKey] = "postgresql://" + v.SQLAddress + "/" + wh
			reason += fmt.Sprintf(". Read it through Floe's SQL endpoint at %s (PostgreSQL wire protocol, database %q, user %q, an access token as the password)",
				v.SQLAddress, wh, callerName(r))
		}
		if v.Notices && delegation(r) == delegateVended {
			creds, credID, err := v.notice(r.Context(), id, bucket, prefix, reason)
			if err != nil {
				h.log.WarnContext(r.Context(), "cannot vend a notice credential", "table", id.String(), "err", err)
			} else {
				if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
					c.credentialID = credID
				}
				maps.Copy(cfg, v.clientConfig())
				maps.Copy(cfg, credentialConfig(creds))
			}
		}
		cfg[StorageAccessKey] = "none: " + reason
		return tableAccess{Config: cfg}, nil
	}
	if delegation(r) == delegateSign {
		cfg := v.clientConfig()
		cfg["s3.remote-signing-enabled"] = "true"
		cfg["s3.signer"] = "S3V4RestSigner" // PyIceberg picks its signer by this name
		cfg["s3.signer.uri"] = h.baseURL(r)
		cfg["s3.signer.endpoint"] = tablePath(r, id) + "/sign"
		if tok, ok := httperr.Bearer(r); ok {
			cfg["token"] = tok // PyIceberg's signer authenticates with the table config's token
		}
		return tableAccess{Config: cfg}, nil
	}
	return h.vendedAccess(r, id, bucket, prefix, write, true)
}

// StorageAccessKey is the LoadTableResult config key that says why a caller
// got no storage access ("none: <reason>").
const StorageAccessKey = "floe.storage-access"

// ReadPathKey is the LoadTableResult config key that says where a caller
// whose reads of the table go through a data filter reads it instead: the
// SQL endpoint, as postgresql://host:port/warehouse.
const ReadPathKey = "floe.read-path"

// notice returns a notice credential for the table's prefix carrying
// reason (see Vending.Notices), with its id; cached like other credentials.
func (v *Vending) notice(ctx context.Context, id catalog.Ident, bucket, prefix, reason string) (vend.Credentials, string, error) {
	if len(reason) > vend.MaxNoticeLength {
		reason = reason[:vend.MaxNoticeLength-3] + "..."
	}
	s := session(ctx, id, bucket, prefix, false)
	s.Grants[0].Access, s.Notice = vend.Notice, reason
	key := credKey{use: "notice", tokenID: s.TokenID, principal: s.PrincipalID + "/" + s.Principal, table: s.Table,
		prefix: bucket + "/" + prefix}
	v.mu.RLock()
	c, ok := v.cache[key]
	v.mu.RUnlock()
	if ok && time.Since(c.minted) < vendReuse && c.sess.Notice == reason {
		return c.creds, c.id, nil
	}
	return v.mintAndCache(ctx, s, key)
}

// vendedAccess returns a credential for the table's prefix in both places
// a LoadTableResult carries it. With reuse, a credential minted for the
// same token, table and access less than a minute ago is handed out again
// (repeated loads of a table are common; every mint is audited); without
// (the refresh endpoint) a new one is minted.
func (h *Handler) vendedAccess(r *http.Request, id catalog.Ident, bucket, prefix string, write, reuse bool) (tableAccess, error) {
	v := h.opts.Vending
	creds, credID, err := v.credentials(r.Context(), "vend", id, bucket, prefix, write,
		func(c vendedCreds) bool { return reuse && time.Since(c.minted) < vendReuse })
	if err != nil {
		return tableAccess{}, floe.Wrap(floe.Unavailable, err, "cannot vend storage credentials for %s", id)
	}
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		c.credentialID = credID
	}
	path := tablePath(r, id)
	// The answer depends only on the credential (which fixes the table's
	// bucket and prefix and the access) and the table's path.
	key := credID + "\x00" + path
	if reuse {
		v.mu.RLock()
		acc, ok := v.loads[key]
		v.mu.RUnlock()
		if ok {
			return acc, nil
		}
	}
	sc := v.clientConfig()
	maps.Copy(sc, credentialConfig(creds))
	cfg := maps.Clone(sc)
	cfg["client.refresh-credentials-endpoint"] = path + "/credentials"
	cfg["client.refresh-credentials-enabled"] = "true"
	acc := tableAccess{Config: cfg, StorageCredentials: []storageCredential{{Prefix: "s3://" + bucket + "/" + prefix, Config: sc}}}
	if reuse {
		acc.tail = acc.resultTail()
		v.mu.Lock()
		if v.loads == nil || len(v.loads) > 10000 {
			v.loads = map[string]tableAccess{}
		}
		v.loads[key] = acc
		v.mu.Unlock()
	}
	return acc, nil
}

func (v *Vending) audit(ctx context.Context, s vend.Session) {
	if v.Audit == nil {
		return
	}
	g := s.Grants[0]
	v.Audit(ctx, "storage.credentials.vend", "table:"+s.Table, map[string]any{
		"credential_id": s.ID, "access_key_id": s.AccessKeyID, "access": g.Access.String(),
		"location": "s3://" + g.Bucket + "/" + g.Prefix, "expires": s.Expires.UTC().Format(time.RFC3339), "token_id": s.TokenID,
	})
}

// clientConfig is the static S3 client configuration.
func (v *Vending) clientConfig() map[string]string {
	cfg := map[string]string{}
	if v.Endpoint != "" {
		cfg["s3.endpoint"] = v.Endpoint
	}
	if v.PathStyle {
		cfg["s3.path-style-access"] = "true"
		cfg["s3.force-virtual-addressing"] = "false"
	}
	if v.Region != "" {
		cfg["client.region"] = v.Region
		cfg["s3.region"] = v.Region
	}
	return cfg
}

func credentialConfig(c vend.Credentials) map[string]string {
	return map[string]string{
		"s3.access-key-id":               c.AccessKeyID,
		"s3.secret-access-key":           c.SecretAccessKey,
		"s3.session-token":               c.SessionToken,
		"s3.session-token-expires-at-ms": strconv.FormatInt(c.Expires.UnixMilli(), 10),
	}
}

// baseURL is the catalog's base URL as the client reached it.
func (h *Handler) baseURL(r *http.Request) string { return httperr.BaseURL(r, h.opts.PublicURL) }

// tablePath is the relative REST path of a table: v1/{prefix}/namespaces/{ns}/tables/{table}.
func tablePath(r *http.Request, id catalog.Ident) string {
	return "v1/" + url.PathEscape(r.PathValue("prefix")) + "/namespaces/" +
		url.PathEscape(strings.Join(id.Namespace, "\x1f")) + "/tables/" + url.PathEscape(id.Name)
}

// loadCredentials serves GET .../tables/{table}/credentials.
func (h *Handler) loadCredentials(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	write, err := h.fileAccess(r, wh, id)
	if err != nil {
		return err
	}
	st, err := h.cat.LoadTable(r.Context(), wh, id)
	if err != nil {
		return err
	}
	if h.opts.Vending == nil {
		return floe.E(floe.Unsupported, "", "this server does not vend storage credentials")
	}
	creds := []storageCredential{}
	if bucket, prefix, ok := objstore.LocationPrefix(st.Metadata.Location()); ok {
		acc, err := h.vendedAccess(r, id, bucket, prefix, write, false)
		if err != nil {
			return err
		}
		creds = acc.StorageCredentials
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"storage-credentials": creds})
	return nil
}

type remoteSignRequest struct {
	Region     string              `json:"region"`
	URI        string              `json:"uri"`
	Method     string              `json:"method"`
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties"`
	Body       string              `json:"body"`
	Provider   string              `json:"provider"`
}

// signRequest serves POST .../tables/{table}/sign: Floe checks that the
// object request stays inside the table's location and, for writes, that
// the caller may write, then signs it with a short-lived credential that
// never leaves the server.
func (h *Handler) signRequest(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	var req remoteSignRequest
	if err := readJSON(r, &req, "region", "uri", "method", "headers"); err != nil {
		return err
	}
	v := h.opts.Vending
	if v == nil {
		return floe.E(floe.Unsupported, "", "this server does not sign storage requests")
	}
	if req.Provider != "" && req.Provider != "s3" {
		return floe.E(floe.Invalid, "", "provider %q is not supported: Floe signs s3 requests", req.Provider)
	}
	mayWrite, denied := h.fileAccess(r, wh, id)
	if denied != nil && (floe.KindOf(denied) != floe.Forbidden || !h.filtered(r, wh, id)) {
		return denied
	}
	st, err := h.cat.LoadTable(r.Context(), wh, id)
	if err != nil {
		return err
	}
	bucket, prefix, ok := objstore.LocationPrefix(st.Metadata.Location())
	if !ok {
		return floe.E(floe.Invalid, "", "table %s is not stored on S3", id)
	}
	target, err := parseSignTarget(req, v.Endpoint)
	if err != nil {
		return err
	}
	write := target.write()
	if target.bucket != bucket || !target.inside(prefix) {
		return floe.E(floe.Forbidden, "location", "%s %s is outside table %s (s3://%s/%s)", req.Method, req.URI, id, bucket, prefix)
	}
	if denied != nil {
		// A caller that reads through a row filter: only reads of the
		// files of its policy-filtered plans (planpolicy.go).
		if err := h.planSignable(r, wh, id, st, target, denied); err != nil {
			return err
		}
	}
	if write && !mayWrite {
		d := h.writeDenial(r, wh, id)
		return floe.Wrap(floe.Forbidden, d, "cannot sign %s %s: %s", req.Method, req.URI, floe.PublicMessage(d))
	}
	creds, err := v.signingCreds(r.Context(), id, bucket, prefix, write)
	if err != nil {
		return err
	}
	headers, err := signS3(req, target.url, creds, v.Region)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{"uri": target.url.String(), "headers": headers})
	return nil
}

// signingCreds returns a cached credential for remote signing, minting a
// new one when none is valid for at least five more minutes.
func (v *Vending) signingCreds(ctx context.Context, id catalog.Ident, bucket, prefix string, write bool) (vend.Credentials, error) {
	creds, _, err := v.credentials(ctx, "sign", id, bucket, prefix, write,
		func(c vendedCreds) bool { return time.Until(c.creds.Expires) > signMinValid })
	if err != nil {
		return vend.Credentials{}, floe.Wrap(floe.Unavailable, err, "cannot mint signing credentials for %s", id)
	}
	return creds, nil
}
