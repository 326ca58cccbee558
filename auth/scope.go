package auth

import (
	"slices"
	"strings"

	"github.com/floe-lake/floe"
)

// Scopes Floe understands.
const (
	// ScopeCatalog is the default scope: the catalog, limited by grants.
	ScopeCatalog = "catalog"
	// ScopeCatalogRead allows reading the catalog only: a token with it
	// (and without ScopeCatalog) can never commit, create, drop, rename or
	// register, nor receive write credentials.
	ScopeCatalogRead = "catalog:read"
	// scopeAllRoles is what Polaris-style clients request to mean "all my roles".
	scopeAllRoles = "PRINCIPAL_ROLE:ALL"
)

// validScope reports whether s is an RFC 6749 §3.3 scope-token.
func validScope(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

// NarrowScopes returns the scopes a token for p may carry when the client
// requests the space-separated scopes requested: an empty request yields
// p's scopes; each requested scope must be held by p, or be implied by one
// it holds (catalog implies catalog:read). "catalog" and
// "PRINCIPAL_ROLE:ALL", which Iceberg clients send by default, mean "what I
// am allowed" and map to p's own catalog scopes. Scopes are never widened;
// anything else is a Forbidden error (entity "scope").
func NarrowScopes(p Principal, requested string) ([]string, error) {
	req := strings.Fields(requested)
	if len(req) == 0 {
		return slices.Clone(p.Scopes), nil
	}
	var out []string
	for _, r := range req {
		switch {
		case slices.Contains(p.Scopes, r):
			out = append(out, r)
		case r == ScopeCatalogRead && slices.Contains(p.Scopes, ScopeCatalog):
			out = append(out, r)
		case r == ScopeCatalog || r == scopeAllRoles:
			n := len(out)
			for _, s := range p.Scopes {
				if s == ScopeCatalog || s == ScopeCatalogRead {
					out = append(out, s)
				}
			}
			if len(out) == n {
				return nil, floe.E(floe.Forbidden, "scope", "scope %q is not granted to principal %q", r, p.Name)
			}
		default:
			return nil, floe.E(floe.Forbidden, "scope", "scope %q is not granted to principal %q", r, p.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CanReadCatalog reports whether the token may read the catalog.
func (c Claims) CanReadCatalog() bool {
	return c.HasScope(ScopeCatalog) || c.HasScope(ScopeCatalogRead)
}

// CanWriteCatalog reports whether the token may change the catalog (still
// subject to grants).
func (c Claims) CanWriteCatalog() bool { return c.HasScope(ScopeCatalog) }

// Permit returns nil if the token's scopes allow the catalog operation op
// (a change when write is set, a read otherwise), or else a Forbidden error
// (entity "scope") naming the scopes and op.
func (c Claims) Permit(write bool, op string) error {
	if (write && c.CanWriteCatalog()) || (!write && c.CanReadCatalog()) {
		return nil
	}
	sc := strings.Join(c.Scopes, " ")
	if sc == "" {
		sc = "(none)"
	}
	return floe.E(floe.Forbidden, "scope", "token scope %s does not allow %s", sc, op)
}
