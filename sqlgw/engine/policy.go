package engine

import (
	"context"
	"fmt"
	"github.com/apache/iceberg-go"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// defaultFilterEntries bounds the cache of checked row filters: one entry
// per row filter text and naming of its columns.
const defaultFilterEntries = 1024

// newFilterCache returns the bounded cache of checked row filters.
func newFilterCache() (*lru.Cache[string, string], error) {
	return lru.New[string, string](defaultFilterEntries)
}

// Binder stores column bindings (*authz.Authorizer): a Policies that is
// one makes the bindings of a filter that meets a table for the first time
// permanent, so that later schema changes cannot move the filter.
type Binder interface {
	Bind(ctx context.Context, bs []authz.ColumnBinding) error
}

// boundFilters returns the caller's data filters on tbl by field id (see
// authz.Policy.BindFilters), storing the bindings made by this first read
// before they are used; nil when the caller may read the whole table.
func (e *Engine) boundFilters(ctx context.Context, ss *session, wh string, id catalog.Ident, tbl *table.Table) ([]authz.BoundFilter, *authz.TableColumns, error) {
	return e.boundFiltersOf(ctx, ss.sub, authz.Table(wh, id), authz.ColumnsOf(tbl.Metadata()))
}

// boundFiltersOf returns sub's data filters on the table or view sec, whose
// columns are tc, by field id (see boundFilters).
func (e *Engine) boundFiltersOf(ctx context.Context, sub authz.Subject, sec authz.Securable, tc *authz.TableColumns) ([]authz.BoundFilter, *authz.TableColumns, error) {
	for attempt := 0; ; attempt++ {
		pol, err := e.opts.Policies.Policy(ctx)
		if err != nil {
			return nil, nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
		b, err := pol.BindFilters(sub, sec, tc)
		if err != nil {
			return nil, nil, err
		}
		if len(b.New) == 0 || attempt > 0 {
			// On the second pass, bindings still missing are ones another
			// node has not made visible yet; the ones just made are those
			// it would store (first write wins, and this read made it).
			return b.Filters, tc, nil
		}
		binder, ok := e.opts.Policies.(Binder)
		if !ok {
			return b.Filters, tc, nil
		}
		if err := binder.Bind(ctx, b.New); err != nil {
			return nil, nil, floe.Wrap(floe.Unavailable, err, "cannot store the column bindings of a data filter")
		}
	}
}

// policySQL wraps the base rows in the caller's data filters (filters is
// the outcome of ReadFilters: nil for none), bound to the table's columns
// by field id: only rows some filter admits, only columns some filter
// shows, and a column's value only where a filter that shows it admits the
// row.
func (e *Engine) policySQL(ctx context.Context, ss *session, sub authz.Subject, wh string, id catalog.Ident, tbl *table.Table, base string, filters []authz.DataFilter, lineage bool) (string, error) {
	cols, err := columnsOf(tbl.Schema())
	if err != nil {
		return "", err
	}
	if filters == nil {
		return base, nil
	}
	return e.filterSQL(ctx, ss, sub, authz.Table(wh, id), id, authz.ColumnsOf(tbl.Metadata()), cols, base, lineage)
}

// filterSQL wraps base, the rows of the table or view sec with columns
// cols (tc by field id), in sub's data filters on it.
func (e *Engine) filterSQL(ctx context.Context, ss *session, sub authz.Subject, sec authz.Securable, id catalog.Ident, tc *authz.TableColumns, cols []column, base string, lineage bool) (string, error) {
	wh := sec.Warehouse
	bound, tc, err := e.boundFiltersOf(ctx, sub, sec, tc)
	if err != nil {
		return "", err
	}
	if bound == nil {
		return base, nil
	}
	preds := make([]string, len(bound)) // "" admits every row
	for i := range bound {
		f := &bound[i]
		rf := strings.TrimSpace(f.RowFilter)
		if rf == "" {
			continue
		}
		canon, err := e.checkRowFilter(ctx, ss, wh, id, tc, f)
		if err != nil {
			return "", err
		}
		preds[i] = canon
	}
	var proj []string
	for _, c := range cols {
		var when []string
		all := false
		for i := range bound {
			if !bound[i].Shows(c.id) {
				continue
			}
			if preds[i] == "" {
				all = true
				break
			}
			when = append(when, preds[i])
		}
		switch {
		case all:
			proj = append(proj, quoteIdent(c.name))
		case len(when) == len(bound):
			proj = append(proj, quoteIdent(c.name))
		case len(when) > 0:
			proj = append(proj, "CASE WHEN "+strings.Join(when, " OR ")+" THEN "+quoteIdent(c.name)+" END AS "+quoteIdent(c.name))
		}
	}
	if len(proj) == 0 {
		return "", floe.E(floe.Forbidden, "privilege", "%s may read no column of %s", sub, sec)
	}
	if lineage {
		// Row identity, not data: shown with every row the caller may see.
		proj = append(proj, quoteIdent(iceberg.RowIDColumnName), quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName))
	}
	var where []string
	for _, p := range preds {
		if p == "" {
			where = nil
			break
		}
		where = append(where, p)
	}
	sql := "SELECT " + strings.Join(proj, ", ") + " FROM (" + base + ") AS __floe_base"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " OR ")
	}
	return sql, nil
}

// checkRowFilter checks a grant's row filter before it is used and returns
// it as DuckDB prints it back (one parenthesized expression), its column
// references renamed to the names their bound field ids have in the
// schema read: it must be one boolean expression over the table's columns,
// without subqueries, table functions or refused functions. A filter that
// does not pass denies access (fail closed), and so does one whose column
// is no longer in the table (dropped, even if a new column took its name):
// the grantee gets an error naming the grant and column, and the grantor a
// warning in the log and the audit log.
func (e *Engine) checkRowFilter(ctx context.Context, ss *session, wh string, id catalog.Ident, tc *authz.TableColumns, f *authz.BoundFilter) (string, error) {
	rf := strings.TrimSpace(f.RowFilter)
	// The cache key: the filter and the current name of each column its
	// identifiers were bound to.
	var key strings.Builder
	key.WriteString(rf)
	idents := authz.Identifiers(rf)
	for _, ident := range idents {
		key.WriteString("\x00")
		if fid, ok := f.RowColumn(ident); ok {
			key.WriteString(strconv.Itoa(fid))
			key.WriteString("=")
			if name, ok := tc.NameOf(fid); ok {
				key.WriteString(name)
			}
		}
	}
	if canon, seen := e.filters.Get(key.String()); seen {
		if canon != "" {
			return canon, nil
		}
		return "", errBadFilter
	}
	const prefix = "SELECT * FROM t WHERE "
	var gone *columnGone
	canon, err := func() (string, error) {
		stmts, err := ss.serialize(ctx, prefix+"(\n"+rf+"\n)")
		if err != nil || len(stmts) != 1 {
			return "", errBadFilter
		}
		n, _ := stmts[0]["node"].(node)
		if n == nil || n["type"] != "SELECT_NODE" || n["where_clause"] == nil {
			return "", errBadFilter
		}
		if ft, _ := n["from_table"].(node); ft == nil || ft["type"] != "BASE_TABLE" || ft["table_name"] != "t" {
			return "", errBadFilter
		}
		for _, k := range []string{"group_expressions", "modifiers"} {
			if l, _ := n[k].([]any); len(l) > 0 {
				return "", errBadFilter
			}
		}
		if n["having"] != nil || n["qualify"] != nil || n["sample"] != nil {
			return "", errBadFilter
		}
		if hasSubquery(n["where_clause"]) {
			return "", errBadFilter
		}
		a := &analysis{}
		if err := a.walk(n["where_clause"], nil); err != nil || len(a.refs) > 0 || a.system {
			return "", errBadFilter
		}
		if gone = renameRefs(n["where_clause"], f, tc); gone != nil {
			return "", nil
		}
		text, err := ss.deserialize(ctx, stmts[0])
		if err != nil {
			return "", errBadFilter
		}
		expr, ok := strings.CutPrefix(text, prefix)
		if !ok || strings.TrimSpace(expr) == "" {
			return "", errBadFilter
		}
		return "(" + expr + ")", nil
	}()
	if gone != nil {
		// Not cached: the warning is given at each refused read.
		return "", e.filterBroken(ctx, ss, wh, id, f, gone)
	}
	e.filters.Add(key.String(), canon)
	return canon, err
}

// columnGone is a column reference of a row filter whose column is not in
// the schema read.
type columnGone struct {
	ref   string
	field int // AbsentField: the table never had it when the filter was bound
}

// renameRefs renames the column references of a row filter's parse tree
// to the names their bound field ids have in tc's current schema, and
// returns the first reference whose column is not there.
func renameRefs(v any, f *authz.BoundFilter, tc *authz.TableColumns) *columnGone {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if g := renameRefs(c, f, tc); g != nil {
				return g
			}
		}
	case node:
		if x["class"] == "COLUMN_REF" {
			names, _ := x["column_names"].([]any)
			i := 0
			if len(names) > 1 {
				if q, _ := names[0].(string); strings.EqualFold(q, "t") {
					i = 1 // t.column: the filter's table
				}
			}
			if i >= len(names) {
				return &columnGone{ref: fmt.Sprint(names), field: authz.AbsentField}
			}
			ref, _ := names[i].(string)
			fid, ok := f.RowColumn(ref)
			if !ok {
				return &columnGone{ref: ref, field: authz.AbsentField}
			}
			name, ok := tc.NameOf(fid)
			if !ok {
				return &columnGone{ref: ref, field: fid}
			}
			names[i] = name
			return nil
		}
		for _, c := range x {
			if g := renameRefs(c, f, tc); g != nil {
				return g
			}
		}
	}
	return nil
}

// filterBroken reports a row filter whose column is gone: a WARN log line
// and an audit event for the grantor, and the grantee's error.
func (e *Engine) filterBroken(ctx context.Context, ss *session, wh string, id catalog.Ident, f *authz.BoundFilter, g *columnGone) error {
	tableName := wh + "." + id.String()
	why := "no longer exists in table " + id.String()
	if g.field == authz.AbsentField {
		why = "is not a column of table " + id.String()
	}
	e.log.WarnContext(ctx, "sql: a data filter refers to a column that is gone; reads through it are refused until the grant is fixed",
		"grant", f.Grant, "grant_desc", f.Describe, "table", tableName, "column", g.ref, "field_id", g.field, "principal", ss.sub.Principal)
	if e.opts.Audit != nil {
		e.opts.Audit(context.WithoutCancel(ctx), audit.Event{
			RequestID: ss.requestID(ctx),
			Principal: ss.pg.Identity.Principal,
			Action:    "authz.filter_broken",
			Resource:  tableName,
			Outcome:   audit.OutcomeFailure,
			Detail: map[string]any{"grant": f.Grant, "grant_desc": f.Describe, "column": g.ref, "field_id": g.field,
				"reason": "the row filter's column " + why},
		})
	}
	return floe.E(floe.Forbidden, "privilege",
		"the row filter of grant %s (%s) refers to column %q, which %s (it was dropped or never there; a new column of the same name is another column), so access is denied; the grantor must fix the grant",
		f.Grant, f.Describe, g.ref, why)
}

var errBadFilter = floe.E(floe.Forbidden, "privilege", "a data filter of a grant on this table is not a valid row filter, so access is denied; an administrator must fix the grant")

func hasSubquery(v any) bool {
	switch x := v.(type) {
	case []any:
		return slices.ContainsFunc(x, hasSubquery)
	case node:
		if x["class"] == "SUBQUERY" || x["type"] == "SUBQUERY" {
			return true
		}
		for _, c := range x {
			if hasSubquery(c) {
				return true
			}
		}
	}
	return false
}
