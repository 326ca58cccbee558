package authz

import (
	"context"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/attribute"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Store persists grants, roles, memberships and tags. Every mutation
// increments the authorization version in the same transaction, so that
// each node's Authorizer notices it with one cheap read. Errors are
// *floe.Error values of the kinds documented per method.
type Store interface {
	// AuthzVersion returns the current authorization version (0 before the
	// first mutation). It must be one indexed read.
	AuthzVersion(ctx context.Context) (int64, error)
	// LoadAuthz reads everything, consistently, with the version it is at.
	LoadAuthz(ctx context.Context) (*Snapshot, error)
	// CreateRole adds a role: AlreadyExists (entity "role") if the name is taken.
	CreateRole(ctx context.Context, r RoleInfo) error
	// DropRole removes a role with its memberships and the grants to it:
	// NotFound (entity "role").
	DropRole(ctx context.Context, name string) error
	// AddRoleMember makes a principal a member of a role: NotFound (entity
	// "role") if there is no such role, AlreadyExists (entity "role member")
	// if it is a member already.
	AddRoleMember(ctx context.Context, role, principal string) error
	// RemoveRoleMember removes a membership: NotFound (entity "role member").
	RemoveRoleMember(ctx context.Context, role, principal string) error
	// PutGrant stores a normalized grant (its ID set): AlreadyExists (entity
	// "grant") if a grant with that ID exists, NotFound (entity "role") if it
	// is given to a role that does not exist.
	PutGrant(ctx context.Context, g Grant) error
	// PutGrants stores normalized grants in one transaction, skipping those
	// whose ID exists: NotFound (entity "role") if one is given to a role
	// that does not exist.
	PutGrants(ctx context.Context, gs []Grant) error
	// DeleteGrant removes the grant with that ID: NotFound (entity "grant").
	DeleteGrant(ctx context.Context, id string) error
	// DeleteGrantsOn removes the grants naming s (not tag-based grants) and
	// the tags on s and its columns, and returns how many grants it removed.
	// It does not touch securables inside s.
	DeleteGrantsOn(ctx context.Context, s Securable) (int, error)
	// MoveGrantsOn re-points, in one transaction, the grants naming from
	// (not tag-based grants) and the tags on from and its columns to to,
	// and returns how many grants it moved. A moved grant equal to one on
	// to already is merged with it.
	MoveGrantsOn(ctx context.Context, from, to Securable) (int, error)
	// SetTags sets (adds or replaces) the given keys of t's own tags.
	SetTags(ctx context.Context, t TagTarget, tags map[string]string) error
	// DeleteTags removes the given keys of t's own tags and returns how many
	// existed.
	DeleteTags(ctx context.Context, t TagTarget, keys []string) (int, error)
	// PutColumnBindings stores column bindings, keeping (not replacing) any
	// binding of the same scope, table and name stored before, and
	// increments the version only when it stored one.
	PutColumnBindings(ctx context.Context, bs []ColumnBinding) error
}

// Options configures an Authorizer. Zero values mean defaults.
type Options struct {
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tables gives the columns of a table, to bind the column names of a
	// grant's filter or of a column tag to field ids as the grant or tag
	// is made; nil leaves the binding to the first read.
	Tables TableColumnsSource
	// RowFilters parses the row filter of a grant as it is made, to refuse
	// one that is not an SQL boolean expression or that names a column the
	// table does not have; nil leaves row filters to be checked at the
	// first read (the SQL endpoint fails closed on a bad one).
	RowFilters RowFilterParser
}

// RowFilterParser finds the column references of a row filter.
type RowFilterParser interface {
	// Columns returns the column names the row filter refers to (without
	// a table qualifier), or Invalid (entity "filter") if the filter is
	// not one SQL boolean expression the SQL endpoint accepts.
	Columns(ctx context.Context, rowFilter string) ([]string, error)
}

// TableColumnsSource gives the columns of a table: NotFound if there is
// none.
type TableColumnsSource interface {
	TableColumns(ctx context.Context, wh string, id catalog.Ident) (*TableColumns, error)
}

// Authorizer holds the current Policy and keeps it fresh, and applies
// validated mutations to the store. It is safe for concurrent use.
type Authorizer struct {
	store  Store
	tables TableColumnsSource
	rows   RowFilterParser
	log    *slog.Logger
	now    func() time.Time
	cur    atomic.Pointer[Policy]
	mu     sync.Mutex // serializes reloads
}

// New returns an Authorizer over store. The policy is loaded on first use.
func New(store Store, opts Options) *Authorizer {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Authorizer{store: store, tables: opts.Tables, rows: opts.RowFilters, log: opts.Logger, now: opts.Now}
}

// Policy returns the current policy. It reads the store's authorization
// version (one indexed read) and reloads the whole policy only when the
// version changed, so a mutation made on any node is seen by every node on
// its next request.
func (a *Authorizer) Policy(ctx context.Context) (*Policy, error) {
	v, err := a.store.AuthzVersion(ctx)
	if err != nil {
		return nil, err
	}
	return a.PolicyAt(ctx, v)
}

// PolicyAt is Policy for a caller that has just read the store's policy
// version v itself (with the token's state, say): it returns the cached
// policy if it is at least at version v, else loads the current one.
func (a *Authorizer) PolicyAt(ctx context.Context, v int64) (*Policy, error) {
	if p := a.cur.Load(); p != nil && p.version >= v {
		return p, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.cur.Load(); p != nil && p.version >= v {
		return p, nil
	}
	start := time.Now()
	snap, err := a.store.LoadAuthz(ctx)
	if err != nil {
		return nil, err
	}
	p, err := NewPolicy(snap)
	if err != nil {
		return nil, err
	}
	a.cur.Store(p)
	a.log.DebugContext(ctx, "authz: policy loaded", "version", p.version, "grants", len(p.grants),
		"roles", len(p.roles), "tags", p.tagsCount, "took", time.Since(start))
	return p, nil
}

// Check loads the current policy and checks sub's priv on s (see Policy.Check).
func (a *Authorizer) Check(ctx context.Context, sub Subject, priv Privilege, s Securable) (err error) {
	end := TraceCheck(ctx, priv)
	defer func() { end(err) }()
	p, err := a.Policy(ctx)
	if err != nil {
		return err
	}
	return p.Check(sub, priv, s)
}

// TraceCheck starts an authz.check span under the span ctx carries and
// returns the function that ends it with the privilege and the decision
// (allow when its error is nil, else deny). With tracing off it starts
// nothing and returns a function that does nothing.
func TraceCheck(ctx context.Context, priv Privilege) func(error) {
	if !spans.On(ctx) {
		return noCheckSpan
	}
	_, span := spans.Start(ctx, "authz.check")
	return func(err error) {
		decision := "allow"
		if err != nil {
			decision = "deny"
		}
		span.SetAttributes(attribute.String("floe.authz.privilege", string(priv)), attribute.String("floe.authz.decision", decision))
		span.End()
	}
}

func noCheckSpan(error) {}

// Grant validates and normalizes g (canonical tag expression, sorted filter
// columns, ID from its content), stores it and returns it. A zero CreatedAt
// is set to now.
func (a *Authorizer) Grant(ctx context.Context, g Grant) (Grant, error) {
	if err := g.normalize(); err != nil {
		return Grant{}, err
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = a.now()
	}
	if err := a.checkFilter(ctx, &g); err != nil {
		return Grant{}, err
	}
	if err := a.store.PutGrant(ctx, g); err != nil {
		return Grant{}, err
	}
	return g, nil
}

// GrantOwner grants the principal of sub what the creator of s needs on it
// (see the package documentation), in one store transaction. It does
// nothing for administrators, who need no grants, or subjects without a
// principal name.
func (a *Authorizer) GrantOwner(ctx context.Context, sub Subject, s Securable) error {
	if sub.Admin || sub.Principal == "" {
		return nil
	}
	set := ownerNamespace
	switch s.Kind {
	case KindTable, KindView:
		set = ownerTable
	case KindNamespace:
	default:
		return floe.E(floe.Invalid, "grant", "owner grants apply to namespaces, tables and views, not to a %s", s.Kind)
	}
	now := a.now()
	gs := make([]Grant, 0, 6)
	for _, p := range set.Privileges() {
		g := Grant{Grantee: Principal(sub.Principal), Privilege: p, On: s, CreatedAt: now, CreatedBy: sub.Principal}
		if err := g.normalize(); err != nil {
			return err
		}
		gs = append(gs, g)
	}
	return a.store.PutGrants(ctx, gs)
}

// Revoke removes the grant equal to g (same grantee, privilege, securable or
// tag expression, AllTables and filter): NotFound (entity "grant") if there
// is none.
func (a *Authorizer) Revoke(ctx context.Context, g Grant) error {
	if err := g.normalize(); err != nil {
		return err
	}
	err := a.store.DeleteGrant(ctx, g.ID)
	if floe.KindOf(err) == floe.NotFound {
		return floe.E(floe.NotFound, "grant", "no grant of %s", g.Describe())
	}
	return err
}

// RevokeID removes the grant with that ID: NotFound (entity "grant").
func (a *Authorizer) RevokeID(ctx context.Context, id string) error {
	if id == "" {
		return floe.E(floe.Invalid, "grant", "grant id must not be empty")
	}
	return a.store.DeleteGrant(ctx, id)
}

// DeleteGrantsOn removes the grants naming s and the tags on s (and its
// columns); the catalog calls it when s is dropped. Renaming a table or view
// is a drop followed by a create for authorization: its named grants and
// tags do not follow it (as in Lake Formation), while AllTables and
// tag-based grants cover it under its new name as they cover any object.
func (a *Authorizer) DeleteGrantsOn(ctx context.Context, s Securable) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	return a.store.DeleteGrantsOn(ctx, s)
}

// MoveGrantsOn moves the grants naming from and the tags on from (and its
// columns) to to; the catalog calls it when a table or view is renamed, so
// that the object keeps who may use it and how it is classified, and no
// principal gains access through the move (a tag-based grant matches the
// moved object as before, unless its inherited tags change with a new
// namespace). Both must be tables or both views.
func (a *Authorizer) MoveGrantsOn(ctx context.Context, from, to Securable) (int, error) {
	if err := from.Validate(); err != nil {
		return 0, err
	}
	if err := to.Validate(); err != nil {
		return 0, err
	}
	if from.Kind != to.Kind || !from.IsData() {
		return 0, floe.E(floe.Invalid, "grant", "grants move between two tables or two views, not from %s to %s", from, to)
	}
	return a.store.MoveGrantsOn(ctx, from, to)
}

// ListGrants returns the current grants for which keep returns true (all when
// keep is nil), sorted by ID.
func (a *Authorizer) ListGrants(ctx context.Context, keep func(*Grant) bool) ([]Grant, error) {
	p, err := a.Policy(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(p.Grants(keep)), nil
}

// MaxDescriptionLength is the longest role description accepted.
const MaxDescriptionLength = 1024

// CreateRole validates and stores a role. A zero CreatedAt is set to now.
func (a *Authorizer) CreateRole(ctx context.Context, r RoleInfo) error {
	if err := validateName("role", r.Name); err != nil {
		return err
	}
	if len(r.Description) > MaxDescriptionLength {
		return floe.E(floe.Invalid, "role", "role description is longer than %d bytes", MaxDescriptionLength)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = a.now()
	}
	return a.store.CreateRole(ctx, r)
}

// DropRole removes a role, its memberships and the grants to it.
func (a *Authorizer) DropRole(ctx context.Context, name string) error {
	if err := validateName("role", name); err != nil {
		return err
	}
	return a.store.DropRole(ctx, name)
}

// AddMember makes the principal (by name) a member of role. Whether the
// principal exists is not checked here: a membership of an unknown
// principal grants nothing until a principal of that name exists.
func (a *Authorizer) AddMember(ctx context.Context, role, principal string) error {
	if err := validateName("role", role); err != nil {
		return err
	}
	if err := validateName("principal", principal); err != nil {
		return err
	}
	return a.store.AddRoleMember(ctx, role, principal)
}

// RemoveMember removes the principal from role.
func (a *Authorizer) RemoveMember(ctx context.Context, role, principal string) error {
	if err := validateName("role", role); err != nil {
		return err
	}
	if err := validateName("principal", principal); err != nil {
		return err
	}
	return a.store.RemoveRoleMember(ctx, role, principal)
}

// MaxTagsPerTarget bounds how many tags one SetTags call may set.
const MaxTagsPerTarget = 50

// SetTags validates and sets tags on t (other keys of t are kept).
func (a *Authorizer) SetTags(ctx context.Context, t TagTarget, tags map[string]string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if len(tags) == 0 {
		return floe.E(floe.Invalid, "tag", "no tags to set")
	}
	if len(tags) > MaxTagsPerTarget {
		return floe.E(floe.Invalid, "tag", "more than %d tags at once", MaxTagsPerTarget)
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if err := ValidateTagKey(k); err != nil {
			return err
		}
		if err := ValidateTagValue(tags[k]); err != nil {
			return err
		}
	}
	if t.Column != "" && t.On.Kind == KindTable {
		if err := a.bindNow(ctx, TagScope, t.On, []string{t.Column}); err != nil {
			return err
		}
	}
	return a.store.SetTags(ctx, t, tags)
}

// checkFilter validates a grant's data filter as it is made: its row
// filter must parse (when a RowFilterParser is set) and, on a table that
// exists, every column it names, includes or excludes must be a column of
// the table's current schema; then its names are bound (see bindNow). A
// grant on a namespace, warehouse or tag expression, or on a table not
// created yet, is bound and checked per table at the first read.
func (a *Authorizer) checkFilter(ctx context.Context, g *Grant) error {
	if g.Filter == nil {
		return nil
	}
	var rowCols []string
	if rf := strings.TrimSpace(g.Filter.RowFilter); rf != "" && a.rows != nil {
		cols, err := a.rows.Columns(ctx, rf)
		if err != nil {
			if floe.KindOf(err) == floe.Invalid {
				return err
			}
			return fmt.Errorf("check the row filter: %w", err)
		}
		rowCols = cols
	}
	if g.On.Kind != KindTable || a.tables == nil {
		return nil
	}
	tc, err := a.tables.TableColumns(ctx, g.On.Warehouse, catalog.Ident{Namespace: g.On.Namespace, Name: g.On.Name})
	if floe.KindOf(err) == floe.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check the columns of %s: %w", g.On, err)
	}
	unknown := func(what, col string) error {
		names := make([]string, len(tc.Current))
		for i, f := range tc.Current {
			names[i] = f.Name
		}
		return floe.E(floe.Invalid, "filter", "%s %q, which is not a column of %s (its columns: %s)",
			what, col, g.On, strings.Join(names, ", "))
	}
	for _, c := range rowCols {
		if tc.resolve(c, true) == AbsentField {
			return unknown("the row filter refers to column", c)
		}
	}
	for _, c := range g.Filter.IncludeColumns {
		if tc.resolve(c, true) == AbsentField {
			return unknown("the filter includes column", c)
		}
	}
	for _, c := range g.Filter.ExcludeColumns {
		if tc.resolve(c, true) == AbsentField {
			return unknown("the filter excludes column", c)
		}
	}
	p, err := a.Policy(ctx)
	if err != nil {
		return err
	}
	return a.Bind(ctx, p.BindNow(g.ID, tc, g.Filter.ColumnNames()))
}

// bindNow binds names for scope on the table s against its current schema
// (see ColumnBinding), before the grant or tag that uses them is stored. A
// table that does not exist (yet) is bound at its first read.
func (a *Authorizer) bindNow(ctx context.Context, scope string, s Securable, names []string) error {
	if a.tables == nil || len(names) == 0 {
		return nil
	}
	tc, err := a.tables.TableColumns(ctx, s.Warehouse, catalog.Ident{Namespace: s.Namespace, Name: s.Name})
	if floe.KindOf(err) == floe.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bind the columns of %s: %w", s, err)
	}
	p, err := a.Policy(ctx)
	if err != nil {
		return err
	}
	return a.Bind(ctx, p.BindNow(scope, tc, names))
}

// BindTable binds, against the table's current columns tc, every name of
// every data filter that may apply to the table (grants on it, AllTables
// grants on its namespaces and warehouse, tag-based grants in its
// warehouse) and of its column tags, keeping bindings made before. The
// catalog calls it before a commit changes the table's schema, so that no
// rename, drop or removal of old schemas can happen before a filter is
// bound: a binding made at a first read after that is never needed.
func (a *Authorizer) BindTable(ctx context.Context, wh string, id catalog.Ident, tc *TableColumns) error {
	p, err := a.Policy(ctx)
	if err != nil {
		return err
	}
	s := Table(wh, id)
	c := p.newCheck(s)
	var bs []ColumnBinding
	for i := range p.grants {
		g := &p.grants[i]
		if g.Filter == nil || g.Privilege != Select || g.On.Warehouse != wh {
			continue
		}
		applies := g.IsTagGrant()
		if !applies {
			k := g.On.key()
			for j, ck := range c.chain {
				if ck == k && (j == len(c.chain)-1 || g.AllTables) {
					applies = true
				}
			}
		}
		if applies {
			bs = append(bs, p.BindNow(g.ID, tc, g.Filter.ColumnNames())...)
		}
	}
	if cols := p.colTags[s.key()]; len(cols) > 0 {
		bs = append(bs, p.BindNow(TagScope, tc, slices.Sorted(maps.Keys(cols)))...)
	}
	return a.Bind(ctx, bs)
}

// FilterWarnings returns what is wrong with the data filter of a grant on
// one table, for listings: each column its row filter was bound to that
// the table no longer has (reads through the grant then fail closed). It
// returns nil for other grants, when the table cannot be loaded or the
// filter is not bound yet.
func (a *Authorizer) FilterWarnings(ctx context.Context, p *Policy, g *Grant) []string {
	if a.tables == nil || g.On.Kind != KindTable || g.Filter == nil || strings.TrimSpace(g.Filter.RowFilter) == "" {
		return nil
	}
	tc, err := a.tables.TableColumns(ctx, g.On.Warehouse, catalog.Ident{Namespace: g.On.Namespace, Name: g.On.Name})
	if err != nil {
		return nil
	}
	var out []string
	for _, ident := range Identifiers(g.Filter.RowFilter) {
		id, ok := p.bindings[bindKey{scope: g.ID, table: tc.UUID, name: ident}]
		if !ok || id == AbsentField {
			continue
		}
		if _, ok := tc.NameOf(id); !ok {
			out = append(out, fmt.Sprintf("the row filter's column %q (field id %d) no longer exists in %s: reads through this grant are refused until it is replaced", ident, id, g.On))
		}
	}
	return out
}

// Bind stores column bindings made by Policy.BindFilters or BindNow,
// keeping any binding stored before for the same scope, table and name.
func (a *Authorizer) Bind(ctx context.Context, bs []ColumnBinding) error {
	if len(bs) == 0 {
		return nil
	}
	if err := a.store.PutColumnBindings(ctx, bs); err != nil {
		return fmt.Errorf("store column bindings: %w", err)
	}
	return nil
}

// DeleteTags removes the given keys from t's own tags: NotFound (entity
// "tag") if none of them was set.
func (a *Authorizer) DeleteTags(ctx context.Context, t TagTarget, keys ...string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return floe.E(floe.Invalid, "tag", "no tag keys to delete")
	}
	for _, k := range keys {
		if err := ValidateTagKey(k); err != nil {
			return err
		}
	}
	n, err := a.store.DeleteTags(ctx, t, keys)
	if err != nil {
		return err
	}
	if n == 0 {
		return floe.E(floe.NotFound, "tag", "%s has no tag %s", t, quote(keys[0]))
	}
	return nil
}

// CheckGrantAdmin returns nil if sub may make or revoke g: MANAGE_GRANTS on
// the securable g names (on the warehouse for a tag-based grant).
func (p *Policy) CheckGrantAdmin(sub Subject, g *Grant) error {
	return p.Check(sub, ManageGrants, g.On)
}

// CheckTagAdmin returns nil if sub may set or delete tags on t: MANAGE_GRANTS
// on the securable (tags decide tag-based access, so they are governed like
// grants).
func (p *Policy) CheckTagAdmin(sub Subject, t TagTarget) error {
	return p.Check(sub, ManageGrants, t.On)
}
