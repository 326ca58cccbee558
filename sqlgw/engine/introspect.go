package engine

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// standIn is an empty table the session's database holds for a Floe table
// the caller may describe, so that DuckDB's pg_catalog and
// information_schema views list it with its columns.
type standIn struct {
	schema string // namespace levels joined by "."
	name   string
	cols   []column
	view   bool // an Iceberg view: stands in as a DuckDB view
}

// syncCatalog makes the session's stand-in tables match the tables of the
// default warehouse the caller may describe (with the columns it may
// read), rebuilding them when the listing or the policy changed.
func (ss *session) syncCatalog(ctx context.Context) error {
	e := ss.e
	wh := e.opts.Warehouse
	var pol *authz.Policy
	if !ss.unrestricted {
		var err error
		if pol, err = e.opts.Policies.Policy(ctx); err != nil {
			return floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
	}
	nss, err := ss.allNamespaces(ctx, wh, nil)
	if err != nil {
		return err
	}
	var (
		tables []standIn
		sig    strings.Builder
	)
	if pol != nil {
		fmt.Fprintf(&sig, "policy %d\n", pol.Version())
	}
	for _, ns := range nss {
		if reservedSchemas[strings.ToLower(ns.String())] {
			continue // DuckDB's own catalogs and schemas: a stand-in would clash (queries still reach the table)
		}
		names, err := e.opts.Catalog.List(ctx, wh, ns, catalog.KindTable, "", 0)
		if err != nil {
			if floe.KindOf(err) == floe.NotFound {
				continue
			}
			return err
		}
		for _, name := range names {
			id := catalog.Ident{Namespace: ns, Name: name}
			var filters []authz.DataFilter
			if pol != nil {
				sec := authz.Table(wh, id)
				if pol.Check(ss.sub, authz.Describe, sec) != nil {
					continue
				}
				filters, _ = pol.ReadFilters(ss.sub, sec)
			}
			tbl, err := e.opts.Tables.LoadTable(ctx, wh, id)
			if err != nil {
				if floe.KindOf(err) == floe.NotFound {
					continue
				}
				return err
			}
			cols, err := columnsOf(tbl.Schema())
			if err != nil {
				continue // a type the endpoint cannot read: leave the table out
			}
			if filters != nil {
				bound, _, err := ss.e.boundFilters(ctx, ss, wh, id, tbl)
				if err != nil {
					continue // no column it may read: leave the table out
				}
				if bound != nil {
					cols = slices.DeleteFunc(cols, func(c column) bool { return !anyShows(bound, c.id) })
				}
			}
			tables = append(tables, standIn{schema: ns.String(), name: name, cols: cols})
			fmt.Fprintf(&sig, "%s\x00%s\x00%s\n", ns.Key(), name, tbl.MetadataLocation())
		}
		views, err := ss.viewStandIns(ctx, pol, wh, ns, &sig)
		if err != nil {
			return err
		}
		tables = append(tables, views...)
	}
	if sig.String() == ss.catalogSig && ss.catalogSig != "" {
		return nil
	}
	if err := ss.buildStandIns(ctx, tables); err != nil {
		return err
	}
	ss.catalogSig = sig.String()
	return nil
}

// viewStandIns lists the views of ns the caller may describe, with the
// columns of their current schema, so that pg_views, information_schema
// and tools (dbt asks whether a model's view exists) see them.
func (ss *session) viewStandIns(ctx context.Context, pol *authz.Policy, wh string, ns catalog.Namespace, sig *strings.Builder) ([]standIn, error) {
	vc, ok := ss.e.opts.DDL.(viewCatalog)
	if !ok {
		return nil, nil
	}
	names, err := ss.e.opts.Catalog.List(ctx, wh, ns, catalog.KindView, "", 0)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, nil
		}
		return nil, err
	}
	var out []standIn
	for _, name := range names {
		id := catalog.Ident{Namespace: ns, Name: name}
		if pol != nil && pol.Check(ss.sub, authz.Describe, authz.View(wh, id)) != nil {
			continue
		}
		v, err := vc.LoadView(ctx, wh, id)
		if err != nil {
			if floe.KindOf(err) == floe.NotFound {
				continue
			}
			return nil, err
		}
		cols, err := columnsOf(v.Metadata.CurrentSchema())
		if err != nil {
			continue // a type the endpoint cannot read: leave the view out
		}
		out = append(out, standIn{schema: ns.String(), name: name, cols: cols, view: true})
		fmt.Fprintf(sig, "view\x00%s\x00%s\x00%s\n", ns.Key(), name, v.Location)
	}
	return out, nil
}

// reservedSchemas are names DuckDB gives its own catalogs and schemas; a
// namespace of that name (such as Floe's "system") has no stand-in schema,
// which would make DuckDB's catalog views ambiguous.
var reservedSchemas = map[string]bool{"system": true, "temp": true, "memory": true, "main": true,
	"pg_catalog": true, "information_schema": true}

func anyShows(filters []authz.BoundFilter, id int) bool {
	return slices.ContainsFunc(filters, func(f authz.BoundFilter) bool { return f.Shows(id) })
}

// allNamespaces lists the namespaces under parent, depth first.
func (ss *session) allNamespaces(ctx context.Context, wh string, parent catalog.Namespace) ([]catalog.Namespace, error) {
	children, err := ss.e.opts.Catalog.ListNamespaces(ctx, wh, parent, "", 0)
	if err != nil {
		return nil, err
	}
	var out []catalog.Namespace
	for _, ns := range children {
		out = append(out, ns)
		if len(ns) < catalog.MaxNamespaceDepth {
			sub, err := ss.allNamespaces(ctx, wh, ns)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

// buildStandIns replaces the session's schemas with the given tables.
func (ss *session) buildStandIns(ctx context.Context, tables []standIn) error {
	rows, err := ss.conn.QueryContext(ctx, "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = current_database() AND schema_name NOT IN ('main', 'pg_catalog', 'information_schema')", nil)
	if err != nil {
		return err
	}
	var old []string
	vals := make([]driver.Value, 1)
	for rows.Next(vals) == nil {
		if s, ok := vals[0].(string); ok {
			old = append(old, s)
		}
	}
	_ = rows.Close()
	var b strings.Builder
	for _, s := range old {
		b.WriteString("DROP SCHEMA " + quoteIdent(s) + " CASCADE;\n")
	}
	made := map[string]bool{}
	for _, t := range tables {
		if !made[t.schema] {
			made[t.schema] = true
			b.WriteString("CREATE SCHEMA " + quoteIdent(t.schema) + ";\n")
		}
		if t.view {
			sel := make([]string, len(t.cols))
			for i, c := range t.cols {
				sel[i] = "NULL::" + c.typ + " AS " + quoteIdent(c.name)
			}
			if len(sel) == 0 {
				sel = []string{"NULL AS " + quoteIdent("?column?")}
			}
			fmt.Fprintf(&b, "CREATE VIEW %s.%s AS SELECT %s WHERE false;\n", quoteIdent(t.schema), quoteIdent(t.name), strings.Join(sel, ", "))
			continue
		}
		defs := make([]string, len(t.cols))
		for i, c := range t.cols {
			defs[i] = quoteIdent(c.name) + " " + c.typ
			if c.required {
				defs[i] += " NOT NULL"
			}
		}
		fmt.Fprintf(&b, "CREATE TABLE %s.%s (%s);\n", quoteIdent(t.schema), quoteIdent(t.name), strings.Join(defs, ", "))
	}
	if b.Len() == 0 {
		return nil
	}
	if _, err := ss.conn.ExecContext(ctx, b.String(), nil); err != nil {
		return fmt.Errorf("catalog stand-ins: %w", err)
	}
	return nil
}

// pgRoles stands in for pg_catalog.pg_roles, which DuckDB lacks: the owner
// pg_get_userbyid names, and the session's principal.
const pgRoles = "SELECT 10::BIGINT AS oid, 'floe' AS rolname, false AS rolsuper, true AS rolinherit, false AS rolcreaterole, " +
	"false AS rolcreatedb, false AS rolcanlogin, false AS rolreplication, -1 AS rolconnlimit, NULL::TIMESTAMPTZ AS rolvaliduntil, " +
	"false AS rolbypassrls, NULL::VARCHAR[] AS rolconfig " +
	"UNION ALL SELECT 11::BIGINT, floe_current_user(), false, true, false, false, true, false, -1, NULL::TIMESTAMPTZ, false, NULL::VARCHAR[] " +
	"WHERE floe_current_user() <> 'floe'"

// arrayToString is PostgreSQL's array_to_string(array, separator) (NULL
// elements skipped). DuckDB's own pg_catalog.array_to_string does not bind
// when called by its qualified name, as psql's \d calls it; the session's
// macro of the same name is called instead.
const arrayToString = "(arr, sep) AS CASE WHEN len(CAST(arr AS VARCHAR[])) = 0 THEN '' ELSE list_aggr(CAST(arr AS VARCHAR[]), 'string_agg', sep) END"

// generatorFunctions are table functions a query may call: they only
// compute rows from their arguments. Only what psql needs is let through
// (its \d calls pg_catalog.generate_series); other table functions stay
// refused.
var generatorFunctions = setOf("generate_series", "unnest")

// generatorFunction reports whether a TABLE_FUNCTION node calls one of the
// generatorFunctions, unqualified or in pg_catalog; it drops a pg_catalog
// qualifier, which DuckDB does not know for them.
func generatorFunction(n node) bool {
	f, ok := n["function"].(node)
	if !ok || f["class"] != "FUNCTION" {
		return false
	}
	name, _ := f["function_name"].(string)
	schema, _ := f["schema"].(string)
	catalog, _ := f["catalog"].(string)
	if !generatorFunctions[name] || catalog != "" || schema != "" && schema != "pg_catalog" {
		return false
	}
	f["schema"] = ""
	f["qualified_name"] = node{"path": []any{name}}
	return true
}
