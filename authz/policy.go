package authz

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// Subject is who asks: a principal, by id and name, and whether it is an
// administrator. Its roles are resolved from the Policy.
type Subject struct {
	PrincipalID string
	Principal   string // principal name; grants and role memberships refer to it
	Admin       bool
}

// SubjectOf returns the subject of verified token claims.
func SubjectOf(c auth.Claims) Subject {
	return Subject{PrincipalID: c.PrincipalID, Principal: c.Principal, Admin: c.Admin}
}

// String renders the subject as in messages: `principal "bi"`.
func (s Subject) String() string {
	name := s.Principal
	if name == "" {
		name = s.PrincipalID
	}
	return "principal " + quote(name)
}

// allPrivileges is the set of every privilege.
const allPrivileges = Set(1<<numPrivileges - 1)

// Policy is an immutable, indexed snapshot of all grants, roles, role
// memberships and tags, at one store version. It answers authorization
// questions without I/O and is safe for concurrent use.
type Policy struct {
	version   int64
	roles     map[string]RoleInfo
	memberOf  map[string][]string // principal name -> role names, sorted
	members   map[string][]string // role name -> principal names, sorted
	grantees  map[Grantee]*granteeGrants
	tags      map[resKey]map[string]string            // own tags of securables
	colTags   map[resKey]map[string]map[string]string // table/view -> column -> own tags
	grants    []Grant                                 // sorted by ID
	tagsCount int
	bindings  map[bindKey]int // column bindings: scope, table UUID, name -> field id
}

// granteeGrants indexes the grants of one grantee.
type granteeGrants struct {
	named map[resKey]*namedEntry
	// tagged holds the tag-based grants by warehouse.
	tagged map[string][]tagGrant
}

// namedEntry is what one grantee holds on one named securable.
type namedEntry struct {
	direct    Set // every privilege granted on the securable itself
	allTables Set // privileges granted with AllTables (they also cover the tables inside)
	grants    []*Grant
}

type tagGrant struct {
	g    *Grant
	expr *Expr
}

// NewPolicy indexes a snapshot. It fails (Internal) only if the snapshot
// holds a grant or tag that could not have been stored through a Service.
func NewPolicy(snap *Snapshot) (*Policy, error) {
	p := &Policy{
		version:  snap.Version,
		roles:    make(map[string]RoleInfo, len(snap.Roles)),
		memberOf: map[string][]string{},
		members:  map[string][]string{},
		grantees: map[Grantee]*granteeGrants{},
		tags:     map[resKey]map[string]string{},
		colTags:  map[resKey]map[string]map[string]string{},
		grants:   slices.Clone(snap.Grants),
		bindings: make(map[bindKey]int, len(snap.Bindings)),
	}
	for _, b := range snap.Bindings {
		p.bindings[bindKey{scope: b.Scope, table: b.Table, name: b.Name}] = b.FieldID
	}
	for _, r := range snap.Roles {
		p.roles[r.Name] = r
	}
	for _, m := range snap.Members {
		p.memberOf[m.Principal] = append(p.memberOf[m.Principal], m.Role)
		p.members[m.Role] = append(p.members[m.Role], m.Principal)
	}
	for _, l := range p.memberOf {
		slices.Sort(l)
	}
	for _, l := range p.members {
		slices.Sort(l)
	}
	slices.SortFunc(p.grants, func(a, b Grant) int { return cmp.Compare(a.ID, b.ID) })
	exprs := map[string]*Expr{}
	for i := range p.grants {
		g := &p.grants[i]
		gg := p.grantees[g.Grantee]
		if gg == nil {
			gg = &granteeGrants{named: map[resKey]*namedEntry{}}
			p.grantees[g.Grantee] = gg
		}
		if g.TagExpr != "" {
			e := exprs[g.TagExpr]
			if e == nil {
				var err error
				if e, err = ParseExpr(g.TagExpr); err != nil {
					return nil, floe.Wrap(floe.Internal, err, "authz: stored grant %s has a bad tag expression", g.ID)
				}
				exprs[g.TagExpr] = e
			}
			if gg.tagged == nil {
				gg.tagged = map[string][]tagGrant{}
			}
			gg.tagged[g.On.Warehouse] = append(gg.tagged[g.On.Warehouse], tagGrant{g: g, expr: e})
			continue
		}
		k := g.On.key()
		ne := gg.named[k]
		if ne == nil {
			ne = &namedEntry{}
			gg.named[k] = ne
		}
		ne.direct = ne.direct.With(g.Privilege)
		if g.AllTables {
			ne.allTables = ne.allTables.With(g.Privilege)
		}
		ne.grants = append(ne.grants, g)
	}
	for _, t := range snap.Tags {
		k := t.On.key()
		if t.Column != "" {
			cols := p.colTags[k]
			if cols == nil {
				cols = map[string]map[string]string{}
				p.colTags[k] = cols
			}
			if cols[t.Column] == nil {
				cols[t.Column] = map[string]string{}
			}
			cols[t.Column][t.Key] = t.Value
		} else {
			if p.tags[k] == nil {
				p.tags[k] = map[string]string{}
			}
			p.tags[k][t.Key] = t.Value
		}
		p.tagsCount++
	}
	return p, nil
}

// Version returns the store version the policy was loaded at.
func (p *Policy) Version() int64 { return p.version }

// check is the state of one decision: the securable's chain of keys and
// its effective tags, computed once and shared by the subject's grantees.
type check struct {
	p     *Policy
	s     Securable
	chain []resKey // warehouse, outermost namespace, ..., the securable itself
	tags  map[string]string
	tagOK bool
	cols  map[string]map[string]string
	colOK bool
	buf   [4]resKey // room for the chain of a table two namespaces deep
}

func (p *Policy) newCheck(s Securable) *check {
	c := &check{p: p, s: s}
	c.chain = append(c.buf[:0], resKey{kind: KindWarehouse, wh: s.Warehouse})
	if s.Kind == KindWarehouse {
		return c
	}
	for i := 1; i <= len(s.Namespace); i++ {
		c.chain = append(c.chain, nsKey(s.Warehouse, s.Namespace[:i]))
	}
	if s.IsData() {
		c.chain = append(c.chain, resKey{kind: s.Kind, wh: s.Warehouse, ns: c.chain[len(c.chain)-1].ns, name: s.Name})
	}
	return c
}

// effectiveTags returns the merged tags of the chain, lower levels winning.
// The result must not be modified.
func (c *check) effectiveTags() map[string]string {
	if c.tagOK {
		return c.tags
	}
	c.tagOK = true
	var levels []map[string]string
	for _, k := range c.chain {
		if t := c.p.tags[k]; len(t) > 0 {
			levels = append(levels, t)
		}
	}
	switch len(levels) {
	case 0:
	case 1:
		c.tags = levels[0]
	default:
		m := maps.Clone(levels[0])
		for _, l := range levels[1:] {
			maps.Copy(m, l)
		}
		c.tags = m
	}
	return c.tags
}

// columnTags returns the effective tags of each tagged column of the table.
func (c *check) columnTags() map[string]map[string]string {
	if c.colOK {
		return c.cols
	}
	c.colOK = true
	cols := c.p.colTags[c.chain[len(c.chain)-1]]
	if len(cols) == 0 {
		return nil
	}
	base := c.effectiveTags()
	out := make(map[string]map[string]string, len(cols))
	for col, own := range cols {
		m := maps.Clone(base)
		if m == nil {
			m = make(map[string]string, len(own))
		}
		maps.Copy(m, own)
		out[col] = m
	}
	c.cols = out
	return out
}

// tagMatch says how a tag-based grant covers a table or view: not at all,
// wholly, or only some of its columns.
type tagMatch uint8

const (
	matchNone tagMatch = iota
	matchAll
	matchColumns
)

// matchTable reports how expr covers the table or view of c; for
// matchColumns, cols lists the covered columns; for matchAll, cols lists
// the tagged columns it does not cover.
func (c *check) matchTable(expr *Expr) (m tagMatch, cols []string) {
	tableOK := expr.Match(c.effectiveTags())
	for col, tags := range c.columnTags() {
		if expr.Match(tags) != tableOK {
			cols = append(cols, col)
		}
	}
	slices.Sort(cols)
	switch {
	case tableOK:
		return matchAll, cols
	case len(cols) > 0:
		return matchColumns, cols
	}
	return matchNone, nil
}

// forGrantees calls fn for the subject's own grants and those of its roles.
func (p *Policy) forGrantees(sub Subject, fn func(gg *granteeGrants)) {
	if gg := p.grantees[Grantee{Kind: GranteePrincipal, Name: sub.Principal}]; gg != nil {
		fn(gg)
	}
	for _, r := range p.memberOf[sub.Principal] {
		if gg := p.grantees[Grantee{Kind: GranteeRole, Name: r}]; gg != nil {
			fn(gg)
		}
	}
}

// held returns the privileges one grantee holds on c.s.
func (c *check) held(gg *granteeGrants) Set {
	var set Set
	last := len(c.chain) - 1
	for i, k := range c.chain {
		ne := gg.named[k]
		if ne == nil {
			continue
		}
		if i == last || !c.s.IsData() {
			// The securable itself, or an ancestor of a namespace.
			set |= ne.direct
		} else {
			set |= ne.allTables
		}
	}
	for _, tg := range gg.tagged[c.s.Warehouse] {
		if set.Has(tg.g.Privilege) {
			continue
		}
		if !c.s.IsData() {
			if c.s.Kind == KindNamespace && tg.expr.Match(c.effectiveTags()) {
				set = set.With(tg.g.Privilege)
			}
			continue
		}
		switch m, _ := c.matchTable(tg.expr); m {
		case matchAll:
			set = set.With(tg.g.Privilege)
		case matchColumns:
			if tg.g.Privilege == Select || tg.g.Privilege == Describe {
				set = set.With(tg.g.Privilege)
			}
		}
	}
	return set
}

// Effective returns the privileges sub holds on s: every privilege for an
// administrator; otherwise those granted to the principal or its roles on s,
// on its containers (for tables and views only through AllTables grants) and
// through tag expressions matching s. Holding any privilege on s implies
// DESCRIBE on s.
func (p *Policy) Effective(sub Subject, s Securable) Set {
	if sub.Admin {
		return allPrivileges
	}
	c := p.newCheck(s)
	var set Set
	p.forGrantees(sub, func(gg *granteeGrants) { set |= c.held(gg) })
	if set != 0 {
		set = set.With(Describe)
	}
	return set
}

// Check returns nil if sub holds priv on s, else a floe.Forbidden error
// (entity "privilege") that says what is missing and what sub does hold, e.g.
// `principal "bi" lacks SELECT on table "crm.accounts" (it has DESCRIBE)`.
//
// Creating a namespace, table or view is checked on its container (the
// parent namespace, or the warehouse for a top-level namespace).
func (p *Policy) Check(sub Subject, priv Privilege, s Securable) error {
	set := p.Effective(sub, s)
	if set.Has(priv) {
		return nil
	}
	return denial(sub, priv, s, set)
}

func denial(sub Subject, priv Privilege, s Securable, held Set) error {
	if held == 0 {
		return floe.E(floe.Forbidden, "privilege", "%s lacks %s on %s", sub, priv, s)
	}
	return floe.E(floe.Forbidden, "privilege", "%s lacks %s on %s (it has %s)", sub, priv, s, held)
}

// ReadFilters reports how sub may read the table or view s: nil and no error
// when some grant gives it SELECT without restriction (or it is an
// administrator), so that it may read whole data files; otherwise one filter
// per restricting SELECT grant (a row is visible if any filter admits it,
// with that filter's columns). A tag-based SELECT grant that matches only
// some columns (column tags) restricts the columns it covers. Without SELECT
// it returns the error of Check.
func (p *Policy) ReadFilters(sub Subject, s Securable) ([]DataFilter, error) {
	if !s.IsData() {
		return nil, floe.E(floe.Invalid, "securable", "data filters apply to tables and views, not to a %s", s.Kind)
	}
	if sub.Admin {
		return nil, nil
	}
	c := p.newCheck(s)
	var filters []DataFilter
	full := false
	emptied := false
	add := func(f *DataFilter) {
		if f != nil && f.IncludeColumns != nil && len(f.IncludeColumns) == 0 {
			emptied = true // no column left to read: this grant gives nothing
			return
		}
		if f.IsZero() {
			full = true
			return
		}
		if !slices.ContainsFunc(filters, func(x DataFilter) bool { return equalFilter(&x, f) }) {
			filters = append(filters, *f)
		}
	}
	p.eachSelectGrant(sub, s, c, func() bool { return full }, func(g *Grant, tagInclude, tagExclude []string) {
		add(restrictColumns(g.Filter, tagInclude, tagExclude))
	})
	if full {
		return nil, nil
	}
	if len(filters) == 0 && emptied {
		return nil, floe.E(floe.Forbidden, "privilege", "%s may read no column of %s: the column filters of its SELECT grants leave none", sub, s)
	}
	if len(filters) == 0 {
		return nil, denial(sub, Select, s, p.Effective(sub, s))
	}
	return filters, nil
}

// restrictColumns narrows f to the columns in include (if not nil) and out
// of exclude.
func restrictColumns(f *DataFilter, include, exclude []string) *DataFilter {
	if include == nil && len(exclude) == 0 {
		return f
	}
	out := DataFilter{}
	if f != nil {
		out = DataFilter{RowFilter: f.RowFilter, IncludeColumns: slices.Clone(f.IncludeColumns), ExcludeColumns: slices.Clone(f.ExcludeColumns)}
	}
	switch {
	case include != nil && len(out.IncludeColumns) > 0:
		out.IncludeColumns = slices.DeleteFunc(out.IncludeColumns, func(c string) bool { return !slices.Contains(include, c) })
		if len(out.IncludeColumns) == 0 {
			// Nothing left to read: an empty inclusion that still excludes everything.
			out.IncludeColumns = []string{}
		}
	case include != nil:
		out.IncludeColumns = slices.DeleteFunc(slices.Clone(include), func(c string) bool { return slices.Contains(out.ExcludeColumns, c) })
		out.ExcludeColumns = nil
	case len(out.IncludeColumns) > 0:
		out.IncludeColumns = slices.DeleteFunc(out.IncludeColumns, func(c string) bool { return slices.Contains(exclude, c) })
	default:
		out.ExcludeColumns = append(out.ExcludeColumns, exclude...)
		slices.Sort(out.ExcludeColumns)
		out.ExcludeColumns = slices.Compact(out.ExcludeColumns)
	}
	return &out
}

func equalFilter(a, b *DataFilter) bool {
	return a.RowFilter == b.RowFilter && slices.Equal(a.IncludeColumns, b.IncludeColumns) && slices.Equal(a.ExcludeColumns, b.ExcludeColumns)
}

// CheckFileAccess returns nil if sub may read whole data files of the table
// or view s (so that storage credentials may be vended), the Check error if
// it lacks SELECT, and a Forbidden error pointing to the SQL endpoint if its
// SELECT is restricted by a data filter.
func (p *Policy) CheckFileAccess(sub Subject, s Securable) error {
	filters, err := p.ReadFilters(sub, s)
	if err != nil {
		return err
	}
	if filters != nil {
		return floe.E(floe.Forbidden, "privilege",
			"%s may read %s only through a data filter (row filter or column restriction), so no storage credentials are vended for it; query it through the SQL endpoint, which enforces the filter",
			sub, s)
	}
	return nil
}

// Grants returns the grants, sorted by ID, for which keep returns true (all
// of them when keep is nil). The result must not be modified.
func (p *Policy) Grants(keep func(*Grant) bool) []Grant {
	if keep == nil {
		return p.grants
	}
	var out []Grant
	for i := range p.grants {
		if keep(&p.grants[i]) {
			out = append(out, p.grants[i])
		}
	}
	return out
}

// GrantCount returns the number of grants.
func (p *Policy) GrantCount() int { return len(p.grants) }

// TagCount returns the number of tags (on securables and columns).
func (p *Policy) TagCount() int { return p.tagsCount }

// Roles returns the roles sorted by name.
func (p *Policy) Roles() []RoleInfo {
	out := slices.Collect(maps.Values(p.roles))
	slices.SortFunc(out, func(a, b RoleInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Role returns the role named name.
func (p *Policy) Role(name string) (RoleInfo, bool) {
	r, ok := p.roles[name]
	return r, ok
}

// RolesOf returns the roles a principal (by name) is a member of, sorted.
func (p *Policy) RolesOf(principal string) []string { return slices.Clone(p.memberOf[principal]) }

// Members returns the principals in a role, sorted.
func (p *Policy) Members(role string) []string { return slices.Clone(p.members[role]) }

// Tags returns the tags set on t itself (a copy).
func (p *Policy) Tags(t TagTarget) map[string]string {
	if t.Column != "" {
		return maps.Clone(p.colTags[t.On.key()][t.Column])
	}
	return maps.Clone(p.tags[t.On.key()])
}

// EffectiveTags returns the tags t carries with inheritance (warehouse,
// namespaces outermost first, table or view, column), a lower level
// overriding a key of a higher one.
func (p *Policy) EffectiveTags(t TagTarget) map[string]string {
	c := p.newCheck(t.On)
	out := maps.Clone(c.effectiveTags())
	if out == nil {
		out = map[string]string{}
	}
	if t.Column != "" {
		maps.Copy(out, p.colTags[t.On.key()][t.Column])
	}
	return out
}

// String summarizes the policy for logs.
func (p *Policy) String() string {
	return fmt.Sprintf("authz policy v%d: %d grants, %d roles, %d tags", p.version, len(p.grants), len(p.roles), p.tagsCount)
}

// eachSelectGrant calls visit for every SELECT grant of sub that covers the
// table or view s (checked as c): grants named on s or, with AllTables, on
// a container of it, then tag-based grants whose expression matches s. A
// tag grant that matches the whole table passes the columns its expression
// names by column tag as tagExclude (they are not covered); one that
// matches only some columns passes them as tagInclude. Named grants pass
// neither. Grants are skipped once stop reports true.
func (p *Policy) eachSelectGrant(sub Subject, s Securable, c *check, stop func() bool, visit func(g *Grant, tagInclude, tagExclude []string)) {
	last := len(c.chain) - 1
	p.forGrantees(sub, func(gg *granteeGrants) {
		for i, k := range c.chain {
			ne := gg.named[k]
			if ne == nil || stop() {
				continue
			}
			for _, g := range ne.grants {
				if g.Privilege == Select && (i == last || g.AllTables) {
					visit(g, nil, nil)
				}
			}
		}
		for _, tg := range gg.tagged[s.Warehouse] {
			if stop() || tg.g.Privilege != Select {
				continue
			}
			switch m, cols := c.matchTable(tg.expr); m {
			case matchAll:
				visit(tg.g, nil, cols)
			case matchColumns:
				visit(tg.g, cols, nil)
			}
		}
	})
}
