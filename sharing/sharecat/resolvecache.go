package sharecat

import (
	"context"
	"crypto/sha256"
	"net/netip"
	"time"

	"github.com/floe-lake/floe/sharing"
)

// DefaultResolveCacheTTL is how long an authenticated token and a resolved
// table are reused without asking the resolver again.
const DefaultResolveCacheTTL = 500 * time.Millisecond

// authKey identifies an authentication: the token (hashed: the token itself
// is never kept) and the client address it came from.
type authKey struct {
	token [sha256.Size]byte
	addr  netip.Addr
}

type authEntry struct {
	r  sharing.Recipient
	at time.Time
}

// tableKey identifies a resolution of a shared table for one token.
type tableKey struct {
	recipientID, tokenID, share, schema, name string
}

type tableEntry struct {
	t  sharing.Table
	at time.Time
}

// authenticateCached is Resolver.Authenticate, reusing an answer for the same
// token and address for ResolveCacheTTL. Refusals are never cached, and
// Resolver.Revoked is still asked on every request (by the caller), so a
// revocation is seen at once; an allowlist change or the end of a rotation
// grace period is seen within ResolveCacheTTL.
func (h *Handler) authenticateCached(ctx context.Context, token string, addr netip.Addr) (sharing.Recipient, error) {
	if h.opts.ResolveCacheTTL < 0 {
		return h.opts.Resolver.Authenticate(ctx, token, addr)
	}
	key := authKey{token: sha256.Sum256([]byte(token)), addr: addr}
	now := h.opts.Now()
	if e, ok := h.auths.get(key); ok && now.Sub(e.at) < h.opts.ResolveCacheTTL {
		return e.r, nil
	}
	r, err := h.opts.Resolver.Authenticate(ctx, token, addr)
	if err != nil {
		return r, err
	}
	h.auths.put(key, authEntry{r: r, at: now})
	return r, nil
}

// tableCached is Resolver.Table, reusing a resolution for the same token
// for ResolveCacheTTL: a table removed from the share, or the share's
// grant revoked, is seen within it. Refusals are never cached.
func (h *Handler) tableCached(ctx context.Context, r sharing.Recipient, share, schema, name string) (sharing.Table, error) {
	if h.opts.ResolveCacheTTL < 0 {
		return h.opts.Resolver.Table(ctx, r, share, schema, name)
	}
	key := tableKey{recipientID: r.ID, tokenID: r.TokenID, share: share, schema: schema, name: name}
	now := h.opts.Now()
	if e, ok := h.tables.get(key); ok && now.Sub(e.at) < h.opts.ResolveCacheTTL {
		return e.t, nil
	}
	t, err := h.opts.Resolver.Table(ctx, r, share, schema, name)
	if err != nil {
		return t, err
	}
	h.tables.put(key, tableEntry{t: t, at: now})
	return t, nil
}
