package authz

import (
	"cmp"
	"slices"
)

// How a grant reaches a securable (Reach.Via).
const (
	// ViaDirect is a grant on the securable itself.
	ViaDirect = "direct"
	// ViaOwner is a grant on the securable itself that its grantee made to
	// itself: the grants a principal gets on what it creates.
	ViaOwner = "owner"
	// ViaNamespace is an all-tables grant on a namespace containing the
	// securable (or, for a namespace, a grant on an outer namespace).
	ViaNamespace = "namespace"
	// ViaWarehouse is a grant on the securable's warehouse (all tables for a
	// table or view).
	ViaWarehouse = "warehouse"
	// ViaTag is a tag-based grant whose expression matches the securable's
	// effective tags (or some of its columns' tags).
	ViaTag = "tag"
)

// Reach is one grant through which its grantee holds a privilege on a
// securable, and how it reaches it.
type Reach struct {
	Grant Grant
	// Via is how the grant reaches the securable (ViaDirect, ViaOwner,
	// ViaNamespace, ViaWarehouse or ViaTag).
	Via string
	// Columns, for a tag grant, are the columns it covers when it covers
	// only some (Partial), or the tagged columns it leaves out when it
	// covers the table.
	Columns []string
	// Partial is set when a tag grant covers only some columns of a table.
	Partial bool
}

// Reaching returns every grant that gives its grantee a privilege on s, with
// how it reaches s, in the order of the decision's chain (the warehouse,
// outer namespaces, the securable, then tag grants), by grant id within a
// level. It is the explanation of Effective for every grantee at once:
// administrators, who need no grants, are not in it.
func (p *Policy) Reaching(s Securable) []Reach {
	c := p.newCheck(s)
	level := make(map[resKey]int, len(c.chain))
	for i, k := range c.chain {
		level[k] = i
	}
	last := len(c.chain) - 1
	type ranked struct {
		r     Reach
		level int
	}
	var out []ranked
	for i := range p.grants {
		g := &p.grants[i]
		if g.TagExpr != "" {
			if g.On.Warehouse != s.Warehouse {
				continue
			}
			e, err := ParseExpr(g.TagExpr)
			if err != nil {
				continue // NewPolicy parsed every stored expression
			}
			if !s.IsData() {
				if s.Kind == KindNamespace && e.Match(c.effectiveTags()) {
					out = append(out, ranked{Reach{Grant: *g, Via: ViaTag}, len(c.chain)})
				}
				continue
			}
			switch m, cols := c.matchTable(e); m {
			case matchAll:
				out = append(out, ranked{Reach{Grant: *g, Via: ViaTag, Columns: cols}, len(c.chain)})
			case matchColumns:
				if g.Privilege == Select || g.Privilege == Describe {
					out = append(out, ranked{Reach{Grant: *g, Via: ViaTag, Columns: cols, Partial: true}, len(c.chain)})
				}
			}
			continue
		}
		i, ok := level[g.On.key()]
		if !ok {
			continue
		}
		if i != last && s.IsData() && !g.AllTables {
			continue // a container grant without all_tables does not reach tables
		}
		via := ViaNamespace
		switch {
		case i == last:
			via = ViaDirect
			if g.Grantee.Kind == GranteePrincipal && g.CreatedBy != "" && g.CreatedBy == g.Grantee.Name {
				via = ViaOwner
			}
		case g.On.Kind == KindWarehouse:
			via = ViaWarehouse
		}
		out = append(out, ranked{Reach{Grant: *g, Via: via}, i})
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.r.Grant.ID, b.r.Grant.ID))
	})
	rs := make([]Reach, len(out))
	for i, x := range out {
		rs[i] = x.r
	}
	return rs
}
