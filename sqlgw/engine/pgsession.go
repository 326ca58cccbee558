package engine

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
)

// Tools (psql, SQLAlchemy, pgJDBC, dbt) ask the server who and where they
// are: current_user, current_database(), version(), current_schema(). DuckDB
// answers "duckdb", "memory", its own version and "main". The session's
// database is therefore attached under the warehouse's name (so that
// current_database(), pg_database and information_schema's catalog columns
// name the warehouse), and the session functions are per-session macros
// (floe_*) that pgCompat substitutes for the PostgreSQL spellings.

// sessionIdentity is what the session functions answer.
type sessionIdentity struct {
	user      string // the principal the session logged in as
	warehouse string
	version   string // server_version, e.g. "16.0 (Floe)"
	pid       uint32 // the process id of BackendKeyData
}

// duckCatalogs are names DuckDB gives its own databases; a warehouse of
// one of these names is not attached under it (current_database() still
// names the warehouse, catalog columns then say "memory").
var duckCatalogs = setOf("memory", "system", "temp", "main")

// attachStatements make the session's database answer to the warehouse's
// name: an in-memory database attached as the warehouse becomes the
// default and DuckDB's "memory" is detached.
func attachStatements(warehouse string) []string {
	if duckCatalogs[strings.ToLower(warehouse)] {
		return nil
	}
	return []string{
		"ATTACH ':memory:' AS " + quoteIdent(warehouse),
		"USE " + quoteIdent(warehouse),
		"DETACH memory",
	}
}

// pgVersion is version()'s answer: tools parse its leading "PostgreSQL N.N".
func pgVersion(serverVersion string) string {
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	}
	osName := runtime.GOOS
	if osName == "linux" {
		osName = "linux-gnu"
	}
	return fmt.Sprintf("PostgreSQL %s on %s-pc-%s, compiled by Go, 64-bit", serverVersion, arch, osName)
}

// sessionMacros are the macros (name: parameters and body) answering the
// session functions for id. Every value enters as a quoted literal.
func sessionMacros(id sessionIdentity) map[string]string {
	return map[string]string{
		"floe_current_user":     "() AS " + sqlString(id.user),
		"floe_current_database": "() AS " + sqlString(id.warehouse),
		"floe_version":          "() AS " + sqlString(pgVersion(id.version)),
		"pg_backend_pid":        fmt.Sprintf("() AS %d", id.pid),
		// Floe resolves no unqualified table name: the search path names
		// no schema, as in PostgreSQL when none of its entries exists.
		"floe_current_schema":  "() AS NULL::VARCHAR",
		"floe_current_schemas": "(implicit) AS CASE WHEN implicit THEN ['pg_catalog'] ELSE []::VARCHAR[] END",
	}
}

// sessionMacroStatements returns the CREATE MACRO statements of
// sessionMacros, in a stable order.
func sessionMacroStatements(id sessionIdentity) []string {
	m := sessionMacros(id)
	out := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, "CREATE MACRO "+name+m[name])
	}
	return out
}

// sessionColumnRefs are PostgreSQL's keyword functions, written without
// parentheses, which DuckDB parses as column references: by the macro
// answering them.
var sessionColumnRefs = map[string]string{
	"current_user":    "floe_current_user",
	"session_user":    "floe_current_user",
	"user":            "floe_current_user",
	"current_role":    "floe_current_user",
	"current_catalog": "floe_current_database",
	"current_schema":  "floe_current_schema",
}

// sessionFunctions are session functions called with parentheses
// (unqualified or in pg_catalog): by the macro answering them; and
// PostgreSQL functions DuckDB has under another name.
var sessionFunctions = map[string]string{
	"current_user":     "floe_current_user",
	"session_user":     "floe_current_user",
	"current_role":     "floe_current_user",
	"user":             "floe_current_user",
	"current_database": "floe_current_database",
	"current_catalog":  "floe_current_database",
	"version":          "floe_version",
	"current_schema":   "floe_current_schema",
	"current_schemas":  "floe_current_schemas",
	// Not session functions, but PostgreSQL names of DuckDB functions
	// (SQLAlchemy's get_columns builds JSON objects).
	"json_build_object":  "floe_json_build_object",
	"jsonb_build_object": "floe_json_build_object",
}

// jsonBuildObject is PostgreSQL's json_build_object(key, value, ...) for
// up to 16 pairs. DuckDB's json_object takes only constant keys, and a
// statement whose keys are parameters (as SQLAlchemy sends them) cannot be
// described before it runs, nor can one calling to_json on a parameter;
// this builds the JSON text instead.
var jsonBuildObject = func() string {
	var defs []string
	for pairs := 0; pairs <= 16; pairs++ {
		var params, parts []string
		for i := range pairs {
			params = append(params, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
			parts = append(parts, fmt.Sprintf("floe_j_string(k%[1]d) || ':' || floe_j_value(v%[1]d)", i))
		}
		body := "'{}'"
		if pairs > 0 {
			body = "'{' || " + strings.Join(parts, " || ',' || ") + " || '}'"
		}
		defs = append(defs, "("+strings.Join(params, ", ")+") AS CAST("+body+" AS JSON)")
	}
	return strings.Join(defs, ", ")
}()

// sessionCompat rewrites a reference to a session function in n to a call
// of its macro. A column reference is rewritten only when written without
// quotes (its length in the text is the name's): "user" stays a column, as
// in PostgreSQL.
func sessionCompat(n node) {
	switch n["class"] {
	case "COLUMN_REF":
		names, _ := n["column_names"].([]any)
		if len(names) == 3 {
			// pg_catalog.pg_namespace.nspname (SQLAlchemy's spelling): the
			// view is a subquery named pg_namespace once patched.
			schema, _ := names[0].(string)
			view, _ := names[1].(string)
			if systemViews[strings.ToLower(schema)][strings.ToLower(view)] {
				n["column_names"] = names[1:]
			}
			return
		}
		if len(names) != 1 {
			return
		}
		name, _ := names[0].(string)
		macro, ok := sessionColumnRefs[strings.ToLower(name)]
		if !ok || fmt.Sprint(n["query_location_length"]) != fmt.Sprint(len(name)) {
			return
		}
		alias, _ := n["alias"].(string)
		if alias == "" {
			alias = strings.ToLower(name)
		}
		loc, locLen := n["query_location"], n["query_location_length"]
		clear(n)
		maps.Copy(n, node{
			"class": "FUNCTION", "type": "FUNCTION", "alias": alias,
			"query_location": loc, "query_location_length": locLen,
			"function_name": macro, "schema": "", "catalog": "",
			"qualified_name": node{"path": []any{macro}},
			"children":       []any{}, "filter": nil,
			"order_bys": node{"type": "ORDER_MODIFIER", "orders": []any{}},
			"distinct":  false, "is_operator": false, "export_state": false,
		})
	case "FUNCTION":
		name, _ := n["function_name"].(string)
		macro, ok := sessionFunctions[strings.ToLower(name)]
		schema, _ := n["schema"].(string)
		if !ok || schema != "" && schema != "pg_catalog" {
			return
		}
		if alias, _ := n["alias"].(string); alias == "" {
			n["alias"] = strings.ToLower(name)
		}
		n["function_name"] = macro
		n["schema"] = ""
		n["catalog"] = ""
		n["qualified_name"] = node{"path": []any{macro}}
	}
}

// pgUser stands in for pg_catalog.pg_user: the session's principal.
const pgUser = "SELECT floe_current_user() AS usename, 11::BIGINT AS usesysid, false AS usecreatedb, false AS usesuper, " +
	"false AS userepl, false AS usebypassrls, '********' AS passwd, NULL::TIMESTAMPTZ AS valuntil, NULL::VARCHAR[] AS useconfig"

// pgAuthMembers stands in for pg_catalog.pg_auth_members (psql's \du): no
// role memberships.
const pgAuthMembers = "SELECT 0::BIGINT AS oid, 0::BIGINT AS roleid, 0::BIGINT AS member, 0::BIGINT AS grantor, " +
	"false AS admin_option, true AS inherit_option, true AS set_option WHERE false"

// pgDatabase is pg_catalog.pg_database with one database, the warehouse,
// and the columns psql's \l and pgJDBC read.
const pgDatabase = "SELECT oid, floe_current_database() AS datname, 10::BIGINT AS datdba, 6 AS encoding, 'c' AS datlocprovider, " +
	"false AS datistemplate, true AS datallowconn, -1 AS datconnlimit, 0::BIGINT AS datfrozenxid, 0::BIGINT AS datminmxid, " +
	"0::BIGINT AS dattablespace, 'C.UTF-8' AS datcollate, 'C.UTF-8' AS datctype, NULL::VARCHAR AS daticulocale, " +
	"NULL::VARCHAR AS datlocale, NULL::VARCHAR AS daticurules, NULL::VARCHAR AS datcollversion, NULL::VARCHAR[] AS datacl " +
	"FROM pg_catalog.pg_database WHERE datname = current_database()"

// pgNamespace is pg_catalog.pg_namespace without DuckDB's "main" schema:
// the namespaces the principal may describe.
const pgNamespace = "SELECT * REPLACE (10::BIGINT AS nspowner) FROM pg_catalog.pg_namespace WHERE nspname <> 'main'"

// pgProc is an empty pg_catalog.pg_proc: DuckDB's lists its own functions,
// which are not the warehouse's (psql's \df shows none).
const pgProc = "SELECT * FROM pg_catalog.pg_proc WHERE false"

// infoSchemata is information_schema.schemata with the namespaces the
// principal may describe (in the warehouse's catalog) and PostgreSQL's
// system schemas; not DuckDB's "main" schemas or its other databases.
const infoSchemata = "SELECT * REPLACE (floe_current_database() AS catalog_name, 'floe' AS schema_owner) FROM information_schema.schemata " +
	"WHERE catalog_name = current_database() AND schema_name <> 'main' " +
	"OR catalog_name = 'system' AND schema_name IN ('pg_catalog', 'information_schema')"

// pgIndex is pg_catalog.pg_index with PostgreSQL's array columns as arrays
// (SQLAlchemy unnests indkey) and indnullsnotdistinct (PostgreSQL 15).
// Stand-ins have no indexes: it is empty.
const pgIndex = "SELECT * REPLACE (CAST(indkey AS SMALLINT[]) AS indkey, CAST(indclass AS BIGINT[]) AS indclass, " +
	"CAST(indoption AS SMALLINT[]) AS indoption, CAST(indcollation AS BIGINT[]) AS indcollation), " +
	"false AS indnullsnotdistinct FROM pg_catalog.pg_index"

// regclassParam rewrites CAST($n AS regclass) (SQLAlchemy's
// get_table_comment) to a lookup of the name in pg_class, as
// rewriteRegclass does for literals: DuckDB has no regclass type, and the
// parameter would be read as an integer.
func regclassParam(n node) {
	if n["class"] != "CAST" {
		return
	}
	te, _ := n["type_expr"].(node)
	child, _ := n["child"].(node)
	tn, _ := te["type_name"].(string)
	if te == nil || child == nil || child["class"] != "PARAMETER" || !strings.HasPrefix(strings.ToLower(tn), "reg") {
		return
	}
	te["type_name"] = "VARCHAR"
	te["schema"] = ""
	te["catalog"] = ""
	te["qualified_name"] = node{"path": []any{"VARCHAR"}}
	cast := maps.Clone(n)
	cast["alias"] = ""
	alias, _ := n["alias"].(string)
	clear(n)
	maps.Copy(n, node{
		"class": "FUNCTION", "type": "FUNCTION", "alias": alias,
		"query_location": cast["query_location"], "query_location_length": cast["query_location_length"],
		"function_name": "floe_regclass", "schema": "", "catalog": "",
		"qualified_name": node{"path": []any{"floe_regclass"}},
		"children":       []any{cast}, "filter": nil,
		"order_bys": node{"type": "ORDER_MODIFIER", "orders": []any{}},
		"distinct":  false, "is_operator": false, "export_state": false,
	})
}

// qualifiedColumns rewrites column references qualified by a Floe table's
// full name (namespace.table.column, as SQLAlchemy and pandas'
// read_sql_table write them) to table.column: the table becomes a
// subquery named after its last part. Only tables written without an
// alias qualify, as in PostgreSQL.
func qualifiedColumns(stmt node, refs []*tableRef) {
	names := map[string]bool{}
	for _, r := range refs {
		if alias, _ := r.n["alias"].(string); alias == "" && len(r.path) >= 2 {
			names[strings.ToLower(strings.Join(r.path, "."))] = true
		}
	}
	if len(names) == 0 {
		return
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, c := range x {
				walk(c)
			}
		case node:
			if x["class"] == "COLUMN_REF" {
				cols, _ := x["column_names"].([]any)
				if len(cols) >= 3 {
					parts := make([]string, len(cols)-1)
					for i, c := range cols[:len(cols)-1] {
						parts[i], _ = c.(string)
					}
					if names[strings.ToLower(strings.Join(parts, "."))] {
						x["column_names"] = cols[len(cols)-2:]
					}
				}
				return
			}
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(stmt)
}

// lazyMacros are macros created in a session only when a statement first
// calls them (the key): creating them costs more than the rest of a login
// (json_build_object's 17 overloads take ~18 ms to bind). Each lists its
// statements, those of the macros it calls first.
var lazyMacros = map[string][]string{
	"floe_json_build_object": {
		`CREATE MACRO floe_j_string(s) AS '"' || replace(replace(replace(replace(CAST(s AS VARCHAR), '\', '\\'), '"', '\"'), chr(10), '\n'), chr(13), '\r') || '"'`,
		"CREATE MACRO floe_j_value(v) AS CASE WHEN v IS NULL THEN 'null' " +
			"WHEN typeof(v) IN ('BOOLEAN', 'TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'FLOAT', 'DOUBLE') " +
			"OR typeof(v) LIKE 'DECIMAL%' OR typeof(v) = 'JSON' THEN CAST(v AS VARCHAR) ELSE floe_j_string(v) END",
		"CREATE MACRO floe_json_build_object" + jsonBuildObject,
	},
	"to_regtype": {"CREATE MACRO to_regtype(n) AS (SELECT min(oid) FROM pg_catalog.pg_type WHERE typname = n)"},
}

// createLazyMacros creates the lazyMacros a statement calls that the
// session does not have yet. A session holds at most len(lazyMacros).
func (ss *session) createLazyMacros(ctx context.Context, names map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if ss.lazyMade[name] {
			continue
		}
		for _, q := range lazyMacros[name] {
			if _, err := ss.conn.ExecContext(ctx, q, nil); err != nil {
				return fmt.Errorf("create macro %s: %w", name, err)
			}
		}
		if ss.lazyMade == nil {
			ss.lazyMade = make(map[string]bool, len(lazyMacros))
		}
		ss.lazyMade[name] = true
	}
	return nil
}
