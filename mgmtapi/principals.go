package mgmtapi

import (
	"net/http"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
)

// Whoami is the answer of GET /whoami.
type Whoami struct {
	Principal   string   `json:"principal"`
	PrincipalID string   `json:"principal_id"`
	Admin       bool     `json:"admin"`
	Roles       []string `json:"roles"`
	Scopes      []string `json:"scopes"`
}

func (h *Handler) whoami(c *call) error {
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, Whoami{Principal: c.sub.Principal, PrincipalID: c.sub.PrincipalID, Admin: c.sub.Admin,
		Roles: strs(p.RolesOf(c.sub.Principal)), Scopes: strs(c.scopes)})
}

// Privileges is the answer of GET /privileges: what a principal may do on
// one securable, and how it may read a table or view.
type Privileges struct {
	Principal  string    `json:"principal"`
	Admin      bool      `json:"admin"`
	Securable  Securable `json:"securable"`
	Privileges []string  `json:"privileges"`
	// Filters are the data filters that restrict its reads of a table or
	// view (a row is visible if any admits it); null when it reads
	// unrestricted or holds no SELECT.
	Filters []Filter `json:"filters"`
	// FileAccess says whether it may read whole data files (and so receive
	// storage credentials); set for tables and views only.
	FileAccess *bool `json:"file_access,omitempty"`
	// Reason says why not, when FileAccess is false.
	Reason string `json:"reason,omitempty"`
}

func (h *Handler) privileges(c *call) error {
	s, err := securableQuery(c.r.URL.Query(), h.opts.DefaultWarehouse)
	if err != nil {
		return err
	}
	sub := c.sub
	if name := c.r.URL.Query().Get("principal"); name != "" && name != sub.Principal {
		if err := requireAdmin(sub, "inspecting the privileges of another principal"); err != nil {
			return err
		}
		pr, err := h.principalByName(c, name)
		if err != nil {
			return err
		}
		sub = authz.Subject{PrincipalID: pr.ID, Principal: pr.Name, Admin: pr.Admin}
	}
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	out := Privileges{Principal: sub.Principal, Admin: sub.Admin, Securable: securableJSON(s), Privileges: []string{}}
	for _, pr := range p.Effective(sub, s).Privileges() {
		out.Privileges = append(out.Privileges, pr.String())
	}
	if s.IsData() {
		fa := true
		if filters, err := p.ReadFilters(sub, s); err == nil {
			for i := range filters {
				out.Filters = append(out.Filters, *filterJSON(&filters[i]))
			}
		}
		if err := p.CheckFileAccess(sub, s); err != nil {
			fa, out.Reason = false, floe.PublicMessage(err)
		}
		out.FileAccess = &fa
	}
	return reply(c, http.StatusOK, out)
}

// Principal is the JSON form of a principal (never with its secret).
type Principal struct {
	Name        string    `json:"name"`
	PrincipalID string    `json:"principal_id"`
	ClientID    string    `json:"client_id"`
	Scopes      []string  `json:"scopes"`
	Admin       bool      `json:"admin"`
	Disabled    bool      `json:"disabled"`
	CreatedAt   time.Time `json:"created_at"`
	// AllowedCIDRs is its network allowlist; empty allows any address.
	AllowedCIDRs []string `json:"allowed_cidrs"`
	// Roles is set when one principal is shown.
	Roles []string `json:"roles,omitempty"`
}

// NewPrincipal is the answer of POST /principals: the principal and its
// client secret, shown only this once.
type NewPrincipal struct {
	Principal
	ClientSecret string `json:"client_secret"`
}

// PrincipalRequest is the body of POST /principals.
type PrincipalRequest struct {
	Name   string   `json:"name"`
	Admin  bool     `json:"admin,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	// AllowedCIDRs is its network allowlist (CIDR prefixes or addresses);
	// empty allows any address.
	AllowedCIDRs []string `json:"allowed_cidrs,omitempty"`
}

// AllowedCIDRsRequest is the body of PUT /principals/{name}/allowed-cidrs.
type AllowedCIDRsRequest struct {
	AllowedCIDRs []string `json:"allowed_cidrs"`
}

func principalJSON(p auth.Principal) Principal {
	return Principal{Name: p.Name, PrincipalID: p.ID, ClientID: p.ClientID, Scopes: strs(p.Scopes), Admin: p.Admin,
		Disabled: p.Disabled, CreatedAt: p.CreatedAt.UTC(), AllowedCIDRs: strs(p.AllowedCIDRs)}
}

const managingPrincipals = "managing principals"

func (h *Handler) principalsFor(c *call) (Principals, error) {
	if err := requireAdmin(c.sub, managingPrincipals); err != nil {
		return nil, err
	}
	if h.opts.Principals == nil {
		return nil, floe.E(floe.Unsupported, "principal", "this server does not manage principals")
	}
	return h.opts.Principals, nil
}

func (h *Handler) principalByName(c *call, name string) (auth.Principal, error) {
	if h.opts.Principals == nil {
		return auth.Principal{}, floe.E(floe.Unsupported, "principal", "this server does not manage principals")
	}
	return h.opts.Principals.PrincipalByName(c.ctx, name)
}

func (h *Handler) listPrincipals(c *call) error {
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	ps, err := reg.ListPrincipals(c.ctx)
	if err != nil {
		return err
	}
	out := struct {
		Principals []Principal `json:"principals"`
	}{Principals: make([]Principal, 0, len(ps))}
	for _, p := range ps {
		out.Principals = append(out.Principals, principalJSON(p))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) createPrincipal(c *call) error {
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	var req PrincipalRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return missing("name")
	}
	c.resource = "principal:" + req.Name
	c.note("name", req.Name, "admin", req.Admin, "scopes", req.Scopes)
	if len(req.AllowedCIDRs) > 0 {
		// Checked before the principal exists, so that a bad list creates nothing.
		if _, err := auth.CanonicalCIDRs(req.AllowedCIDRs); err != nil {
			return err
		}
	}
	p, secret, err := reg.CreatePrincipal(c.ctx, req.Name, req.Scopes, req.Admin)
	if err != nil {
		return err
	}
	if len(req.AllowedCIDRs) > 0 {
		if p.AllowedCIDRs, err = reg.SetPrincipalAllowedCIDRs(c.ctx, p.Name, req.AllowedCIDRs); err != nil {
			return err
		}
		c.note("allowed_cidrs", p.AllowedCIDRs)
	}
	c.note("client_id", p.ClientID, "principal_id", p.ID, "scopes", p.Scopes)
	c.w.Header().Set("Cache-Control", "no-store")
	return reply(c, http.StatusCreated, NewPrincipal{Principal: principalJSON(p), ClientSecret: secret})
}

func (h *Handler) getPrincipal(c *call) error {
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	p, err := reg.PrincipalByName(c.ctx, c.r.PathValue("name"))
	if err != nil {
		return err
	}
	pol, err := h.policy(c)
	if err != nil {
		return err
	}
	out := principalJSON(p)
	out.Roles = strs(pol.RolesOf(p.Name))
	return reply(c, http.StatusOK, out)
}

func (h *Handler) disablePrincipal(c *call) error { return h.setDisabled(c, true) }

func (h *Handler) enablePrincipal(c *call) error { return h.setDisabled(c, false) }

func (h *Handler) setDisabled(c *call, disabled bool) error {
	name := c.r.PathValue("name")
	c.resource = "principal:" + name
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	if err := reg.SetPrincipalDisabled(c.ctx, name, disabled); err != nil {
		return err
	}
	p, err := reg.PrincipalByName(c.ctx, name)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, principalJSON(p))
}

// setAllowedCIDRs replaces a principal's network allowlist: token
// issuance, its bearer tokens, the storage credentials vended from now on
// and its SQL logins are refused from other addresses.
func (h *Handler) setAllowedCIDRs(c *call) error {
	name := c.r.PathValue("name")
	c.resource = "principal:" + name
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	var req AllowedCIDRsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	cidrs, err := reg.SetPrincipalAllowedCIDRs(c.ctx, name, req.AllowedCIDRs)
	if err != nil {
		return err
	}
	c.note("allowed_cidrs", strs(cidrs))
	p, err := reg.PrincipalByName(c.ctx, name)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, principalJSON(p))
}

// RotateSecretRequest is the body of POST /principals/{name}/rotate-secret.
type RotateSecretRequest struct {
	// GraceSeconds is how long the old secret keeps working (absent or 0:
	// it is refused at once).
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

// RevokedPrincipalTokens is the answer of POST
// /principals/{name}/revoke-tokens.
type RevokedPrincipalTokens struct {
	Name string `json:"name"`
	// TokensNotBefore: every token issued before it is refused.
	TokensNotBefore time.Time `json:"tokens_not_before"`
}

// rotateSecret gives a principal a new client secret, shown only in this
// answer; the old one is refused at once or after grace_seconds.
func (h *Handler) rotateSecret(c *call) error {
	name := c.r.PathValue("name")
	c.resource = "principal:" + name
	reg, err := h.principalsFor(c)
	if err != nil {
		return err
	}
	var req RotateSecretRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	var grace time.Duration
	if req.GraceSeconds != nil {
		if *req.GraceSeconds < 0 || *req.GraceSeconds > int64(auth.MaxSecretGrace/time.Second) {
			return floe.E(floe.Invalid, "principal", "grace_seconds must be 0 to %d", int64(auth.MaxSecretGrace/time.Second))
		}
		grace = time.Duration(*req.GraceSeconds) * time.Second
	}
	c.note("grace_seconds", int64(grace/time.Second))
	p, secret, err := reg.RotateSecret(c.ctx, name, grace)
	if err != nil {
		return err
	}
	c.note("client_id", p.ClientID, "principal_id", p.ID)
	c.w.Header().Set("Cache-Control", "no-store")
	return reply(c, http.StatusOK, NewPrincipal{Principal: principalJSON(p), ClientSecret: secret})
}

// revokeTokens refuses every token issued to a principal until now, with
// what was derived from them; administrators, and a principal for itself.
func (h *Handler) revokeTokens(c *call) error {
	name := c.r.PathValue("name")
	c.resource = "principal:" + name
	if c.sub.Principal != name {
		if err := requireAdmin(c.sub, managingPrincipals); err != nil {
			return err
		}
	}
	if h.opts.Principals == nil {
		return floe.E(floe.Unsupported, "principal", "this server does not manage principals")
	}
	nb, err := h.opts.Principals.RevokeTokens(c.ctx, name)
	if err != nil {
		return err
	}
	c.note("tokens_not_before", nb.UTC())
	return reply(c, http.StatusOK, RevokedPrincipalTokens{Name: name, TokensNotBefore: nb.UTC()})
}
