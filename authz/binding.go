package authz

import (
	"cmp"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// TagScope is the ColumnBinding scope of column tags: a tag set on a
// column by name follows the field that name was bound to.
const TagScope = "tags"

// AbsentField is the FieldID of a binding whose name the table did not
// have when it was bound: the name never matches a column of that table
// later (a column added under it is a new column).
const AbsentField = -1

// ColumnBinding records that, for one scope (the ID of a grant with a data
// filter, or TagScope) and one table (by its Iceberg table UUID), the column
// name Name stands for the Iceberg field FieldID (or AbsentField). Bindings
// are made once, the first time the scope meets the table (when the grant
// or tag is made, else at the first read), and never change afterwards, so
// that renaming, dropping and re-adding columns cannot move a filter or a
// tag onto another column.
type ColumnBinding struct {
	Scope   string
	Table   string
	Name    string
	FieldID int
}

type bindKey struct{ scope, table, name string }

// Field is a top-level column of a table schema: its Iceberg field id and
// name.
type Field struct {
	ID   int
	Name string
}

// TableColumns is what the binding of filters needs to know of the table
// being read: its UUID, the schema the read uses, and every schema its
// metadata holds (in any order; they are ordered by schema id).
type TableColumns struct {
	UUID    string
	Current []Field
	// Schemas holds each schema of the metadata: its schema id and fields.
	Schemas []TableSchema
}

// TableSchema is one schema of a table's metadata.
type TableSchema struct {
	ID     int
	Fields []Field
}

// nameOf returns the name of field id in the current schema.
func (tc *TableColumns) nameOf(id int) (string, bool) {
	for _, f := range tc.Current {
		if f.ID == id {
			return f.Name, true
		}
	}
	return "", false
}

// NameOf returns the name the field id has in the schema being read.
func (tc *TableColumns) NameOf(id int) (string, bool) { return tc.nameOf(id) }

// resolve returns the field id name stands for in a new binding: when
// current is set (a binding made as the grant or tag is made), the id it
// has in the current schema, else the id the name had in the oldest schema
// of the metadata that has it (a binding made at a first read, after which
// a rename may already have happened); AbsentField when no schema has it.
// Names are matched exactly, then, if no schema has the exact name,
// case-insensitively (as SQL identifiers are), ids in order.
func (tc *TableColumns) resolve(name string, current bool) int {
	schemas := []TableSchema{{Fields: tc.Current}}
	if !current {
		schemas = slices.SortedFunc(slices.Values(tc.Schemas), func(a, b TableSchema) int { return cmp.Compare(a.ID, b.ID) })
		schemas = append(schemas, TableSchema{Fields: tc.Current})
	}
	for _, fold := range []bool{false, true} {
		for _, s := range schemas {
			for _, f := range s.Fields {
				if f.Name == name || fold && strings.EqualFold(f.Name, name) {
					return f.ID
				}
			}
		}
	}
	return AbsentField
}

// BoundFilter is a data filter resolved against one table by field id.
type BoundFilter struct {
	// Grant is the ID of the grant the filter comes from and Describe its
	// description, for messages.
	Grant    string
	Describe string
	// RowFilter is the row filter as written ("" for none).
	RowFilter string
	// Include, when not nil, is the set of field ids shown (only those);
	// Exclude is the set of field ids hidden.
	Include map[int]bool
	Exclude map[int]bool
	// refs maps the lower-cased identifiers of the row filter to the field
	// ids they were bound to.
	refs map[string]int
}

// Shows reports whether the filter shows the column with field id id.
func (f *BoundFilter) Shows(id int) bool {
	if f.Exclude[id] {
		return false
	}
	return f.Include == nil || f.Include[id]
}

// RowColumn returns the field id a column reference of the row filter (an
// identifier, compared case-insensitively) was bound to; false when the
// filter's binding has no such name (the table never had the column).
func (f *BoundFilter) RowColumn(ref string) (int, bool) {
	id, ok := f.refs[strings.ToLower(ref)]
	return id, ok && id != AbsentField
}

// Bound is the outcome of Policy.BindFilters.
type Bound struct {
	// Filters are the caller's filters on the table, by field id; nil
	// when it may read the table without restriction.
	Filters []BoundFilter
	// New are bindings made now, not yet stored: the caller must store
	// them (Authorizer.Bind) before it relies on Filters, so that later
	// reads use the same binding whatever the schema becomes.
	New []ColumnBinding
}

// binder makes and looks up the bindings of one table.
type binder struct {
	p       *Policy
	tc      *TableColumns
	current bool
	made    map[bindKey]int
	out     []ColumnBinding
}

func (b *binder) id(scope, name string) int {
	k := bindKey{scope: scope, table: b.tc.UUID, name: name}
	if id, ok := b.p.bindings[k]; ok {
		return id
	}
	if id, ok := b.made[k]; ok {
		return id
	}
	id := b.tc.resolve(name, b.current)
	if b.made == nil {
		b.made = map[bindKey]int{}
	}
	b.made[k] = id
	b.out = append(b.out, ColumnBinding{Scope: scope, Table: b.tc.UUID, Name: name, FieldID: id})
	return id
}

// include returns the ids the names were bound to.
func (b *binder) include(scope string, names []string) map[int]bool {
	out := make(map[int]bool, len(names))
	for _, n := range names {
		if id := b.id(scope, n); id != AbsentField {
			out[id] = true
		}
	}
	return out
}

// exclude returns the ids the names were bound to and those the names
// have now: hiding a column added later under an excluded name as well.
func (b *binder) exclude(scope string, names []string) map[int]bool {
	out := b.include(scope, names)
	for _, n := range names {
		for _, f := range b.tc.Current {
			if f.Name == n {
				out[f.ID] = true
			}
		}
	}
	return out
}

// BindFilters is ReadFilters for a table whose columns are tc: each filter
// resolved by field id through the bindings of its grant (and the column
// tags through theirs), making the missing bindings from tc (see
// ColumnBinding; they are returned in Bound.New to be stored). Column names
// of a filter or tag thus keep meaning the column they meant when first
// bound, whatever renames, drops and re-adds came after.
func (p *Policy) BindFilters(sub Subject, s Securable, tc *TableColumns) (*Bound, error) {
	return p.bindFilters(sub, s, tc, false)
}

// BindNow makes the bindings of scope (a grant ID or TagScope) for names
// against the table's current schema, as a grant or tag is made, and
// returns those not stored yet.
func (p *Policy) BindNow(scope string, tc *TableColumns, names []string) []ColumnBinding {
	b := &binder{p: p, tc: tc, current: true}
	for _, n := range names {
		b.id(scope, n)
	}
	return b.out
}

func (p *Policy) bindFilters(sub Subject, s Securable, tc *TableColumns, current bool) (*Bound, error) {
	if !s.IsData() {
		return nil, floe.E(floe.Invalid, "securable", "data filters apply to tables and views, not to a %s", s.Kind)
	}
	if sub.Admin {
		return &Bound{}, nil
	}
	if tc == nil || tc.UUID == "" {
		return nil, floe.E(floe.Internal, "filter", "authz: no table to bind filters to")
	}
	c := p.newCheck(s)
	b := &binder{p: p, tc: tc, current: current}
	var filters []BoundFilter
	full, emptied := false, false
	bind := func(g *Grant, tagInclude, tagExclude []string) {
		f := BoundFilter{Grant: g.ID, Describe: g.Describe()}
		if g.Filter != nil {
			f.RowFilter = g.Filter.RowFilter
			if g.Filter.IncludeColumns != nil {
				f.Include = b.include(g.ID, g.Filter.IncludeColumns)
			}
			f.Exclude = b.exclude(g.ID, g.Filter.ExcludeColumns)
			if f.RowFilter != "" {
				f.refs = map[string]int{}
				for _, ident := range Identifiers(f.RowFilter) {
					f.refs[strings.ToLower(ident)] = b.id(g.ID, ident)
				}
			}
		}
		if tagInclude != nil {
			ids := b.include(TagScope, tagInclude)
			if f.Include == nil {
				f.Include = ids
			} else {
				for id := range f.Include {
					if !ids[id] {
						delete(f.Include, id)
					}
				}
			}
		}
		if len(tagExclude) > 0 {
			if f.Exclude == nil {
				f.Exclude = map[int]bool{}
			}
			for id := range b.exclude(TagScope, tagExclude) {
				f.Exclude[id] = true
			}
		}
		if f.Include != nil && len(f.Include) == 0 {
			emptied = true // no column left to read: this grant gives nothing
			return
		}
		if f.Include == nil && len(f.Exclude) == 0 && strings.TrimSpace(f.RowFilter) == "" {
			full = true
			return
		}
		filters = append(filters, f)
	}
	p.eachSelectGrant(sub, s, c, func() bool { return full }, bind)
	if full {
		return &Bound{New: b.out}, nil
	}
	if len(filters) == 0 && emptied {
		return nil, floe.E(floe.Forbidden, "privilege", "%s may read no column of %s: the column filters of its SELECT grants leave none", sub, s)
	}
	if len(filters) == 0 {
		return nil, denial(sub, Select, s, p.Effective(sub, s))
	}
	return &Bound{Filters: filters, New: b.out}, nil
}

// Identifiers returns the words of a row filter that may name columns:
// bare identifiers and double-quoted ones, outside string literals and
// comments, without duplicates. It over-approximates (keywords and
// function names are included), which costs only unused bindings.
func Identifiers(sql string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'':
			i++
			for i < len(sql) {
				if sql[i] == '\'' {
					if i+1 < len(sql) && sql[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
		case c == '"':
			var b strings.Builder
			i++
			for i < len(sql) {
				if sql[i] == '"' {
					if i+1 < len(sql) && sql[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					break
				}
				b.WriteByte(sql[i])
				i++
			}
			i++
			add(b.String())
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				i = len(sql)
			} else {
				i += end + 4
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] == '$' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' ||
				sql[j] >= '0' && sql[j] <= '9' || sql[j] >= 0x80) {
				j++
			}
			add(sql[i:j])
			i = j
		case c >= '0' && c <= '9':
			for i < len(sql) && (sql[i] >= '0' && sql[i] <= '9' || sql[i] == '.' || sql[i] == 'e' || sql[i] == 'E' || sql[i] == '_') {
				i++
			}
		default:
			i++
		}
	}
	return out
}

// ColumnsOf returns the columns of a table's metadata: its UUID, current
// schema and every schema it holds (top-level fields).
func ColumnsOf(md table.Metadata) *TableColumns {
	tc := &TableColumns{UUID: md.TableUUID().String(), Current: fieldsOf(md.CurrentSchema())}
	for _, s := range md.Schemas() {
		tc.Schemas = append(tc.Schemas, TableSchema{ID: s.ID, Fields: fieldsOf(s)})
	}
	return tc
}

func fieldsOf(s *iceberg.Schema) []Field {
	if s == nil {
		return nil
	}
	out := make([]Field, 0, s.NumFields())
	for _, f := range s.Fields() {
		out = append(out, Field{ID: f.ID, Name: f.Name})
	}
	return out
}
