package restcat

import (
	"context"
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// Authorizer is what the REST catalog needs from package authz: the
// current policy, owner grants for what a caller creates, and removal of
// the grants on what is dropped. *authz.Authorizer implements it.
type Authorizer interface {
	Policy(ctx context.Context) (*authz.Policy, error)
	// PolicyAt is Policy when the caller has just read the policy version
	// v from the store (Verify does, with the token's state).
	PolicyAt(ctx context.Context, v int64) (*authz.Policy, error)
	GrantOwner(ctx context.Context, sub authz.Subject, s authz.Securable) error
	DeleteGrantsOn(ctx context.Context, s authz.Securable) (int, error)
	MoveGrantsOn(ctx context.Context, from, to authz.Securable) (int, error)
}

// caller is who makes a request and the policy it is judged by, fixed for
// the request. An unrestricted caller (authorization or authentication off)
// may do everything.
type caller struct {
	sub          authz.Subject
	pol          *authz.Policy
	unrestricted bool
	writeScope   bool           // the token may change the catalog (not catalog:read)
	credentialID string         // the storage credential handed out, for the audit event
	detail       map[string]any // more facts for the audit event (a scan plan's)
	// version is the policy version read with the token's state, if
	// hasVersion: the first policy load of the request uses it instead
	// of reading the version again. Later loads (after the request
	// changed grants itself) read it afresh.
	version    int64
	hasVersion bool
}

// setDetail adds a fact to the request's audit event.
func (c *caller) setDetail(k string, v any) {
	if c.detail == nil {
		c.detail = map[string]any{}
	}
	c.detail[k] = v
}

type callerKey struct{}

// caller returns the caller of the request, loading the policy once.
func (h *Handler) caller(r *http.Request) (*caller, error) {
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		if c.pol == nil && !c.unrestricted {
			var pol *authz.Policy
			var err error
			if c.hasVersion {
				c.hasVersion = false
				pol, err = h.opts.Authz.PolicyAt(r.Context(), c.version)
			} else {
				pol, err = h.opts.Authz.Policy(r.Context())
			}
			if err != nil {
				return nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
			}
			c.pol = pol
		}
		return c, nil
	}
	return &caller{unrestricted: true, writeScope: true}, nil
}

// withCaller fixes the caller of a request from its verified claims.
func (h *Handler) withCaller(ctx context.Context, claims auth.Claims, authenticated bool) context.Context {
	c := &caller{unrestricted: true, writeScope: true}
	if authenticated {
		c.sub = authz.SubjectOf(claims)
		c.writeScope = claims.CanWriteCatalog()
		c.unrestricted = h.opts.Authz == nil || claims.Admin
		c.version, c.hasVersion = claims.PolicyVersion, claims.HasPolicyVersion
	}
	ctx = catalog.WithClaimant(ctx, catalog.Claimant{Principal: c.sub.PrincipalID, Admin: c.unrestricted})
	return context.WithValue(ctx, callerKey{}, c)
}

// dropper returns r with the claimant of a drop of table id: the caller,
// owning the tombstone the drop may leave only if it can read the whole
// table (see catalog.Claimant.CanRead).
func (h *Handler) dropper(r *http.Request, wh string, id catalog.Ident) (*http.Request, error) {
	c, err := h.caller(r)
	if err != nil {
		return nil, err
	}
	cl := catalog.ClaimantOf(r.Context())
	cl.CanRead = c.unrestricted || c.pol.CheckFileAccess(c.sub, authz.Table(wh, id)) == nil
	return r.WithContext(catalog.WithClaimant(r.Context(), cl)), nil
}

// require returns nil if the caller holds priv on s, else the denial.
func (h *Handler) require(r *http.Request, priv authz.Privilege, s authz.Securable) (err error) {
	end := authz.TraceCheck(r.Context(), priv)
	defer func() { end(err) }()
	c, err := h.caller(r)
	if err != nil || c.unrestricted {
		return err
	}
	return c.pol.Check(c.sub, priv, s)
}

// container is the securable a namespace is created in: its parent, or the
// warehouse for a top-level namespace.
func container(wh string, ns catalog.Namespace) authz.Securable {
	if len(ns) <= 1 {
		return authz.Warehouse(wh)
	}
	return authz.NamespaceOf(wh, ns[:len(ns)-1])
}

// securable names an entity of the given kind.
func securable(wh string, id catalog.Ident, kind catalog.Kind) authz.Securable {
	if kind == catalog.KindView {
		return authz.View(wh, id)
	}
	return authz.Table(wh, id)
}

// owned grants the caller what the creator of s needs. A failure is logged
// and does not fail the request: the object exists, and an administrator
// can grant the privileges.
func (h *Handler) owned(r *http.Request, s authz.Securable) {
	c, err := h.caller(r)
	if err != nil || c.unrestricted || h.opts.Authz == nil {
		return
	}
	if err := h.opts.Authz.GrantOwner(r.Context(), c.sub, s); err != nil {
		h.log.ErrorContext(r.Context(), "cannot grant the creator's privileges", "securable", s.String(), "err", err)
	}
	c.pol, c.hasVersion = nil, false // the rest of the request sees the new grants
}

// dropped removes the grants and tags naming s, so that a new object of the
// same name does not inherit them.
func (h *Handler) dropped(r *http.Request, s authz.Securable) {
	if h.opts.Authz == nil {
		return
	}
	if _, err := h.opts.Authz.DeleteGrantsOn(r.Context(), s); err != nil {
		h.log.ErrorContext(r.Context(), "cannot remove the grants of a dropped object", "securable", s.String(), "err", err)
	}
}

// moved re-points the grants and tags of a renamed table or view to its
// new name. A failure is logged: the object has moved, and an
// administrator can fix the grants.
func (h *Handler) moved(r *http.Request, from, to authz.Securable) {
	if h.opts.Authz == nil {
		return
	}
	if _, err := h.opts.Authz.MoveGrantsOn(r.Context(), from, to); err != nil {
		h.log.ErrorContext(r.Context(), "cannot move the grants of a renamed object", "from", from.String(), "to", to.String(), "err", err)
	}
	if c, err := h.caller(r); err == nil {
		c.pol, c.hasVersion = nil, false
	}
}

// fileAccess decides what storage access the caller gets to a table's
// files: none (with the reason), read-only, or read-write. Reading needs
// SELECT without a data filter; writing also needs MODIFY and a token that
// may change the catalog.
func (h *Handler) fileAccess(r *http.Request, wh string, id catalog.Ident) (write bool, denied error) {
	c, err := h.caller(r)
	if err != nil {
		return false, err
	}
	if c.unrestricted {
		return c.writeScope, nil
	}
	s := authz.Table(wh, id)
	if err := c.pol.CheckFileAccess(c.sub, s); err != nil {
		return false, err
	}
	return c.writeScope && c.pol.Effective(c.sub, s).Has(authz.Modify), nil
}

// filtered reports whether the caller may read the table, but only
// through a data filter (so only through the SQL endpoint).
func (h *Handler) filtered(r *http.Request, wh string, id catalog.Ident) bool {
	c, err := h.caller(r)
	if err != nil || c.unrestricted {
		return false
	}
	fs, err := c.pol.ReadFilters(c.sub, authz.Table(wh, id))
	return err == nil && fs != nil
}

// callerName is the principal name of the request's caller ("" when none).
func callerName(r *http.Request) string {
	if c, ok := auth.ClaimsFrom(r.Context()); ok {
		return c.Principal
	}
	return ""
}

// visibleFilter returns, for a listing inside container, nil when the
// caller may see every child (it holds DESCRIBE on the container), else a
// function that says whether it may see one child securable.
func (h *Handler) visibleFilter(r *http.Request, container authz.Securable) (func(authz.Securable) bool, error) {
	c, err := h.caller(r)
	if err != nil {
		return nil, err
	}
	if c.unrestricted || c.pol.Effective(c.sub, container).Has(authz.Describe) {
		return nil, nil
	}
	return func(s authz.Securable) bool { return c.pol.Effective(c.sub, s) != 0 }, nil
}

// listDenied is the error for a listing that shows the caller nothing
// because it holds no DESCRIBE on the container nor on anything inside.
func (h *Handler) listDenied(r *http.Request, container authz.Securable) error {
	return h.require(r, authz.Describe, container)
}

// listPage returns one page of at most limit items (all when limit is 0)
// after the key after, keeping only those visible passes (all when it is
// nil), and whether more follow. It fetches from the store in batches
// until the page is full, so that filtering never shortens a page that
// could be filled.
func listPage[T any](fetch func(after string, limit int) ([]T, error), key func(T) string,
	visible func(T) bool, after string, limit int) (page []T, more bool, err error) {
	if visible == nil {
		n := limit
		if n > 0 {
			n++ // one extra tells whether another page follows
		}
		items, err := fetch(after, n)
		if err != nil {
			return nil, false, err
		}
		if limit > 0 && len(items) > limit {
			return items[:limit], true, nil
		}
		return items, false, nil
	}
	batch := 0
	if limit > 0 {
		batch = max(limit+1, 256)
	}
	for {
		items, err := fetch(after, batch)
		if err != nil {
			return nil, false, err
		}
		for _, it := range items {
			if !visible(it) {
				continue
			}
			if limit > 0 && len(page) == limit {
				return page, true, nil
			}
			page = append(page, it)
		}
		if batch == 0 || len(items) < batch {
			return page, false, nil
		}
		after = key(items[len(items)-1])
	}
}

// writeDenial says why a caller that may read a table's files may not
// write them: it lacks MODIFY, or its token is read-only.
func (h *Handler) writeDenial(r *http.Request, wh string, id catalog.Ident) error {
	if err := h.require(r, authz.Modify, authz.Table(wh, id)); err != nil {
		return err
	}
	return floe.E(floe.Forbidden, "privilege", "the token is read-only (scope catalog:read): it may read but not write table %s", id)
}
