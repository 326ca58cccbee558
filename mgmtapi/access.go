package mgmtapi

import (
	"net/http"
	"slices"

	"github.com/floe-lake/floe/authz"
)

// AccessEntry is one grant through which a principal or role reaches a
// table: the grant, and how it reaches it.
type AccessEntry struct {
	Grant
	// Via is how the grant reaches the table: "direct" (a grant on the
	// table), "owner" (one its grantee got as the table's creator),
	// "namespace" or "warehouse" (an all-tables grant on a container), or
	// "tag" (a tag expression matching the table's effective tags).
	Via string `json:"via"`
	// Columns, for a tag grant, are the columns it covers when it covers
	// only some (Partial), or the tagged columns it leaves out.
	Columns []string `json:"columns,omitempty"`
	// Partial is set when a tag grant covers only some of the columns.
	Partial bool `json:"partial,omitempty"`
	// Members are a role's members (shown to administrators and holders of
	// MANAGE_GRANTS on the table).
	Members []string `json:"members,omitempty"`
}

// TableAccess is the answer of GET .../access: who has access to a table
// and why.
type TableAccess struct {
	Table   string        `json:"table"`
	Entries []AccessEntry `json:"entries"`
	// Administrators hold every privilege without a grant (shown to
	// administrators and holders of MANAGE_GRANTS on the table).
	Administrators []string `json:"administrators,omitempty"`
}

// tableAccess explains who reaches a table and by which grant (DESCRIBE on
// the table). Like GET /grants, it lists only the grants the caller may
// see: all of them for an administrator or a holder of MANAGE_GRANTS on
// them, otherwise the caller's own and its roles'.
func (h *Handler) tableAccess(c *call) error {
	wh, id, err := tableParams(c)
	if err != nil {
		return err
	}
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	s := authz.Table(wh, id)
	if err := p.Check(c.sub, authz.Describe, s); err != nil {
		return err
	}
	steward := c.sub.Admin || p.Effective(c.sub, s).Has(authz.ManageGrants)
	out := TableAccess{Table: id.String(), Entries: []AccessEntry{}}
	for _, r := range p.Reaching(s) {
		if !visible(p, c.sub, &r.Grant) {
			continue
		}
		e := AccessEntry{Grant: grantJSON(&r.Grant), Via: r.Via, Columns: r.Columns, Partial: r.Partial}
		if steward && r.Grant.Grantee.Kind == authz.GranteeRole {
			e.Members = p.Members(r.Grant.Grantee.Name)
		}
		out.Entries = append(out.Entries, e)
	}
	if steward && h.opts.Principals != nil {
		ps, err := h.opts.Principals.ListPrincipals(c.ctx)
		if err != nil {
			return err
		}
		for _, pr := range ps {
			if pr.Admin && !pr.Disabled {
				out.Administrators = append(out.Administrators, pr.Name)
			}
		}
		slices.Sort(out.Administrators)
	}
	return reply(c, http.StatusOK, out)
}
