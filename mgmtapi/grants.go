package mgmtapi

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
)

// AuditResource names a securable in audit events: "warehouse:floe",
// "namespace:floe/crm", "table:floe/crm.accounts".
func AuditResource(s authz.Securable) string {
	if s.Kind == authz.KindWarehouse {
		return "warehouse:" + s.Warehouse
	}
	return s.Kind.String() + ":" + s.Warehouse + "/" + s.Path()
}

// noteGrant puts what identifies g into the audit detail of c.
func noteGrant(c *call, g *authz.Grant) {
	c.resource = AuditResource(g.On)
	c.note("grant", g.Describe(), "grantee", g.Grantee.String(), "privilege", g.Privilege.String(),
		"all_tables", g.AllTables)
	if g.ID != "" {
		c.note("grant_id", g.ID)
	}
	if g.TagExpr != "" {
		c.note("tag_expression", g.TagExpr)
	}
	if f := g.FilterJSON(); f != "" {
		c.note("filter", f)
	}
}

// visible reports whether sub may see g in listings: it may manage it, or
// g is granted to it or to one of its roles.
func visible(p *authz.Policy, sub authz.Subject, g *authz.Grant) bool {
	if sub.Admin || p.CheckGrantAdmin(sub, g) == nil {
		return true
	}
	switch g.Grantee.Kind {
	case authz.GranteePrincipal:
		return g.Grantee.Name == sub.Principal
	case authz.GranteeRole:
		return slices.Contains(p.RolesOf(sub.Principal), g.Grantee.Name)
	}
	return false
}

// GrantFilter builds the grant listing filter of the query parameters
// grantee_kind, grantee, privilege, warehouse, namespace (the grant's
// securable is that namespace or inside it), table and view.
func GrantFilter(q url.Values) (func(*authz.Grant) bool, error) {
	var keep []func(*authz.Grant) bool
	if v := q.Get("grantee_kind"); v != "" {
		k, err := authz.ParseGranteeKind(v)
		if err != nil {
			return nil, err
		}
		keep = append(keep, func(g *authz.Grant) bool { return g.Grantee.Kind == k })
	}
	if v := q.Get("grantee"); v != "" {
		keep = append(keep, func(g *authz.Grant) bool { return g.Grantee.Name == v })
	}
	if v := q.Get("privilege"); v != "" {
		p, err := authz.ParsePrivilege(v)
		if err != nil {
			return nil, err
		}
		keep = append(keep, func(g *authz.Grant) bool { return g.Privilege == p })
	}
	if v := q.Get("warehouse"); v != "" {
		keep = append(keep, func(g *authz.Grant) bool { return g.On.Warehouse == v })
	}
	if ns := ParseNamespace(q.Get("namespace")); len(ns) > 0 {
		keep = append(keep, func(g *authz.Grant) bool {
			return len(g.On.Namespace) >= len(ns) && slices.Equal(g.On.Namespace[:len(ns)], ns)
		})
	}
	table, view := q.Get("table"), q.Get("view")
	switch {
	case table != "" && view != "":
		return nil, floe.E(floe.Invalid, "securable", "give table or view, not both")
	case table != "":
		keep = append(keep, func(g *authz.Grant) bool { return g.On.Kind == authz.KindTable && g.On.Name == table })
	case view != "":
		keep = append(keep, func(g *authz.Grant) bool { return g.On.Kind == authz.KindView && g.On.Name == view })
	}
	return func(g *authz.Grant) bool {
		for _, k := range keep {
			if !k(g) {
				return false
			}
		}
		return true
	}, nil
}

func (h *Handler) listGrants(c *call) error {
	keep, err := GrantFilter(c.r.URL.Query())
	if err != nil {
		return err
	}
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	out := struct {
		Grants []Grant `json:"grants"`
	}{Grants: []Grant{}}
	for _, g := range p.Grants(func(g *authz.Grant) bool { return keep(g) && visible(p, c.sub, g) }) {
		gj := grantJSON(&g)
		gj.Warnings = h.opts.Authz.FilterWarnings(c.ctx, p, &g)
		out.Grants = append(out.Grants, gj)
	}
	return reply(c, http.StatusOK, out)
}

// readGrant decodes a grant body and checks that the caller may make or
// revoke it.
func (h *Handler) readGrant(c *call) (authz.Grant, error) {
	var req GrantRequest
	if err := decode(c, &req); err != nil {
		return authz.Grant{}, err
	}
	g, err := req.grant(h.opts.DefaultWarehouse)
	if err != nil {
		return authz.Grant{}, err
	}
	noteGrant(c, &g)
	p, err := h.policy(c)
	if err != nil {
		return authz.Grant{}, err
	}
	if err := p.CheckGrantAdmin(c.sub, &g); err != nil {
		return authz.Grant{}, err
	}
	return g, nil
}

func (h *Handler) createGrant(c *call) error {
	g, err := h.readGrant(c)
	if err != nil {
		return err
	}
	g.CreatedBy = c.sub.Principal
	stored, err := h.opts.Authz.Grant(c.ctx, g)
	if err != nil {
		return err
	}
	noteGrant(c, &stored)
	return reply(c, http.StatusCreated, grantJSON(&stored))
}

func (h *Handler) revokeGrant(c *call) error {
	g, err := h.readGrant(c)
	if err != nil {
		return err
	}
	if err := h.opts.Authz.Revoke(c.ctx, g); err != nil {
		return err
	}
	return noContent(c)
}

// deleteGrant revokes a grant by id. A grant the caller may not see is
// answered as absent, so that ids do not reveal grants; one it may see but
// not manage (a grant to itself) is refused with the authz message.
func (h *Handler) deleteGrant(c *call) error {
	id := c.r.PathValue("id")
	c.resource = "grant:" + id
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	gs := p.Grants(func(g *authz.Grant) bool { return g.ID == id })
	if len(gs) == 0 || !visible(p, c.sub, &gs[0]) {
		return floe.E(floe.NotFound, "grant", "Grant does not exist: %s", id)
	}
	g := gs[0]
	noteGrant(c, &g)
	if err := p.CheckGrantAdmin(c.sub, &g); err != nil {
		return err
	}
	if err := h.opts.Authz.RevokeID(c.ctx, id); err != nil {
		return err
	}
	return noContent(c)
}
