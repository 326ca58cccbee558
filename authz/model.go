package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
)

// GranteeKind says whether a grantee is a principal or a role.
type GranteeKind uint8

// The grantee kinds.
const (
	// GranteePrincipal is a principal, named by its (unique) name.
	GranteePrincipal GranteeKind = iota + 1
	// GranteeRole is a role.
	GranteeRole
)

// String returns "principal" or "role".
func (k GranteeKind) String() string {
	switch k {
	case GranteePrincipal:
		return "principal"
	case GranteeRole:
		return "role"
	}
	return "unknown"
}

// ParseGranteeKind parses "principal" or "role".
func ParseGranteeKind(s string) (GranteeKind, error) {
	switch strings.ToLower(s) {
	case "principal":
		return GranteePrincipal, nil
	case "role":
		return GranteeRole, nil
	}
	return 0, floe.E(floe.Invalid, "grantee", "unknown grantee kind %q (want principal or role)", s)
}

// Grantee is who a grant is given to.
type Grantee struct {
	Kind GranteeKind
	Name string
}

// Principal returns the grantee of the principal named name.
func Principal(name string) Grantee { return Grantee{Kind: GranteePrincipal, Name: name} }

// Role returns the grantee of the role named name.
func Role(name string) Grantee { return Grantee{Kind: GranteeRole, Name: name} }

// String renders the grantee as in messages: `role "analysts"`.
func (g Grantee) String() string { return g.Kind.String() + " " + quote(g.Name) }

// Validate checks the grantee.
func (g Grantee) Validate() error {
	if g.Kind != GranteePrincipal && g.Kind != GranteeRole {
		return floe.E(floe.Invalid, "grantee", "unknown grantee kind %d", g.Kind)
	}
	return validateName(g.Kind.String(), g.Name)
}

// Limits of data filters.
const (
	// MaxRowFilterLength is the longest row filter accepted, in bytes.
	MaxRowFilterLength = 4096
	// MaxFilterColumns is the most columns an inclusion or exclusion list may name.
	MaxFilterColumns = 1024
)

// DataFilter restricts what a SELECT grant lets its grantee read: a row
// filter (an SQL boolean expression, parsed and enforced by the SQL
// endpoint) and at most one of a column inclusion list (only these columns)
// or a column exclusion list (all but these). Column names are top-level
// column names, compared exactly.
type DataFilter struct {
	RowFilter      string   `json:"row_filter,omitempty"`
	IncludeColumns []string `json:"include_columns,omitempty"`
	ExcludeColumns []string `json:"exclude_columns,omitempty"`
}

// IsZero reports whether f restricts nothing. A non-nil empty inclusion
// list (computed when a filter's columns and a column tag leave nothing in
// common) restricts everything, so it is never zero.
func (f *DataFilter) IsZero() bool {
	return f == nil || strings.TrimSpace(f.RowFilter) == "" && f.IncludeColumns == nil && len(f.ExcludeColumns) == 0
}

// Validate checks the filter's lengths and characters. The row filter is not
// parsed here.
func (f *DataFilter) Validate() error {
	if f == nil {
		return nil
	}
	if len(f.RowFilter) > MaxRowFilterLength {
		return floe.E(floe.Invalid, "filter", "row filter is longer than %d bytes", MaxRowFilterLength)
	}
	if !utf8.ValidString(f.RowFilter) {
		return floe.E(floe.Invalid, "filter", "row filter is not valid UTF-8")
	}
	for _, r := range f.RowFilter {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return floe.E(floe.Invalid, "filter", "row filter contains a control character")
		}
	}
	if len(f.IncludeColumns) > 0 && len(f.ExcludeColumns) > 0 {
		return floe.E(floe.Invalid, "filter", "a filter has either included or excluded columns, not both")
	}
	for _, cols := range [][]string{f.IncludeColumns, f.ExcludeColumns} {
		if len(cols) > MaxFilterColumns {
			return floe.E(floe.Invalid, "filter", "a filter names more than %d columns", MaxFilterColumns)
		}
		seen := make(map[string]bool, len(cols))
		for _, c := range cols {
			if err := validateName("column", c); err != nil {
				return err
			}
			if seen[c] {
				return floe.E(floe.Invalid, "filter", "column %q is listed twice", c)
			}
			seen[c] = true
		}
	}
	return nil
}

// ColumnNames returns every name the filter may use for a column: the
// included and excluded columns and the identifiers of the row filter (see
// Identifiers). They are what a grant's binding binds.
func (f *DataFilter) ColumnNames() []string {
	if f == nil {
		return nil
	}
	out := slices.Concat(f.IncludeColumns, f.ExcludeColumns, Identifiers(f.RowFilter))
	slices.Sort(out)
	return slices.Compact(out)
}

// normalized returns nil for a filter that restricts nothing, else a copy
// with the row filter trimmed and the column lists sorted.
func (f *DataFilter) normalized() *DataFilter {
	if f.IsZero() {
		return nil
	}
	n := &DataFilter{RowFilter: strings.TrimSpace(f.RowFilter),
		IncludeColumns: slices.Sorted(slices.Values(f.IncludeColumns)),
		ExcludeColumns: slices.Sorted(slices.Values(f.ExcludeColumns))}
	if len(n.IncludeColumns) == 0 {
		n.IncludeColumns = nil
	}
	if len(n.ExcludeColumns) == 0 {
		n.ExcludeColumns = nil
	}
	if n.IsZero() { // e.g. {"include_columns": []}: given, but restricting nothing
		return nil
	}
	return n
}

// Grant gives a grantee one privilege on either a named securable (On) or,
// when TagExpr is set, on every namespace, table and view of the warehouse
// On.Warehouse whose effective tags match the expression (On is then the
// warehouse).
type Grant struct {
	// ID is derived from the grant's content (see Key); Service.Grant sets it.
	ID        string
	Grantee   Grantee
	Privilege Privilege
	On        Securable
	// TagExpr is the canonical tag expression of a tag-based grant.
	TagExpr string
	// AllTables extends a grant on a warehouse or namespace to every table
	// and view inside it, at any depth, including ones created later.
	AllTables bool
	// Filter restricts a SELECT grant; nil means none.
	Filter    *DataFilter
	CreatedAt time.Time
	// CreatedBy is the name of the principal that made the grant.
	CreatedBy string
}

// IsTagGrant reports whether g targets a tag expression.
func (g *Grant) IsTagGrant() bool { return g.TagExpr != "" }

// FilterJSON returns the JSON form of g.Filter, or "" when there is none.
func (g *Grant) FilterJSON() string {
	if g.Filter.IsZero() {
		return ""
	}
	b, err := json.Marshal(g.Filter.normalized())
	if err != nil {
		return ""
	}
	return string(b)
}

// ParseFilterJSON parses the stored form of a filter ("" means none).
func ParseFilterJSON(s string) (*DataFilter, error) {
	if s == "" {
		return nil, nil
	}
	var f DataFilter
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "invalid filter JSON")
	}
	return f.normalized(), nil
}

// Key returns the identity of g: a hex digest of its grantee, privilege,
// securable, tag expression, AllTables and filter. Two grants with the same
// key are the same grant; it is the grant's ID.
func (g *Grant) Key() string {
	h := sha256.New()
	for _, s := range []string{g.Grantee.Kind.String(), g.Grantee.Name, g.Privilege.String(), g.On.Kind.String(),
		g.On.Warehouse, g.On.Namespace.Key(), g.On.Name, g.TagExpr, strconv.FormatBool(g.AllTables), g.FilterJSON()} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Describe renders g for messages and listings, e.g.
// `SELECT on table "crm.accounts" to role "analysts"`.
func (g *Grant) Describe() string {
	var b strings.Builder
	b.WriteString(g.Privilege.String())
	b.WriteString(" on ")
	switch {
	case g.IsTagGrant():
		b.WriteString("objects tagged " + quote(g.TagExpr) + " in warehouse " + quote(g.On.Warehouse))
	case g.AllTables:
		b.WriteString("all tables in " + g.On.String())
	default:
		b.WriteString(g.On.String())
	}
	b.WriteString(" to ")
	b.WriteString(g.Grantee.String())
	if !g.Filter.IsZero() {
		b.WriteString(" with a data filter")
	}
	return b.String()
}

// normalize validates g, canonicalizes its tag expression and filter, and
// sets its ID.
func (g *Grant) normalize() error {
	if err := g.Grantee.Validate(); err != nil {
		return err
	}
	if !g.Privilege.Valid() {
		return floe.E(floe.Invalid, "grant", "unknown privilege %d", g.Privilege)
	}
	if err := g.On.Validate(); err != nil {
		return err
	}
	if g.TagExpr != "" {
		if g.On.Kind != KindWarehouse {
			return floe.E(floe.Invalid, "grant", "a tag-based grant is scoped to a warehouse, not to a %s", g.On.Kind)
		}
		if g.AllTables {
			return floe.E(floe.Invalid, "grant", "a tag-based grant covers the matching tables already; all_tables does not apply")
		}
		e, err := ParseExpr(g.TagExpr)
		if err != nil {
			return err
		}
		g.TagExpr = e.String()
	}
	if warehouseLevel.Has(g.Privilege) && (g.On.Kind != KindWarehouse || g.TagExpr != "" || g.AllTables) {
		return floe.E(floe.Invalid, "grant", "%s is granted on a warehouse only (not on a %s, a tag expression or all tables)", g.Privilege, g.On.Kind)
	}
	switch {
	case g.On.IsData():
		if g.AllTables {
			return floe.E(floe.Invalid, "grant", "all_tables applies to a warehouse or namespace, not to a %s", g.On.Kind)
		}
		if !tableLevel.Has(g.Privilege) {
			return floe.E(floe.Invalid, "grant", "%s cannot be granted on a %s (it applies to namespaces and warehouses)", g.Privilege, g.On.Kind)
		}
	case g.TagExpr == "" && !g.AllTables && dataLevel.Has(g.Privilege):
		return floe.E(floe.Invalid, "grant", "%s on a %s covers no table unless all_tables is set (grants are per named resource)", g.Privilege, g.On.Kind)
	}
	if err := g.Filter.Validate(); err != nil {
		return err
	}
	g.Filter = g.Filter.normalized()
	if g.Filter != nil && g.Privilege != Select {
		return floe.E(floe.Invalid, "grant", "a data filter applies only to SELECT, not to %s", g.Privilege)
	}
	g.ID = g.Key()
	return nil
}

// RoleInfo is a role: a named set of principals that grants can be given to.
// Roles do not nest.
type RoleInfo struct {
	Name        string
	Description string
	CreatedAt   time.Time
}

// Membership says that a principal (by name) is a member of a role.
type Membership struct {
	Role      string
	Principal string
}

// Tag is one key=value tag on a securable, or on a column of a table or view
// when Column is set.
type Tag struct {
	On     Securable
	Column string
	Key    string
	Value  string
}

// TagTarget names what tags are set on: a securable, or one of its columns.
type TagTarget struct {
	On     Securable
	Column string
}

// String renders the target as in messages: `column "email" of table "crm.accounts"`.
func (t TagTarget) String() string {
	if t.Column != "" {
		return "column " + quote(t.Column) + " of " + t.On.String()
	}
	return t.On.String()
}

// Validate checks the target.
func (t TagTarget) Validate() error {
	if err := t.On.Validate(); err != nil {
		return err
	}
	if t.Column != "" {
		if !t.On.IsData() {
			return floe.E(floe.Invalid, "tag", "columns belong to tables and views, not to a %s", t.On.Kind)
		}
		return validateName("column", t.Column)
	}
	return nil
}

// Snapshot is everything the store holds for authorization, read
// consistently at one version.
type Snapshot struct {
	Version int64
	Roles   []RoleInfo
	Members []Membership
	Grants  []Grant
	Tags    []Tag
	// Bindings are the column bindings of grants' filters and of column
	// tags (see ColumnBinding).
	Bindings []ColumnBinding
}
