package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// node is one object of DuckDB's JSON syntax tree (json_serialize_sql).
type node = map[string]any

// tableRef is a reference to a Floe table found in a statement: the tree
// node to replace, the name as written and its time-travel clause.
type tableRef struct {
	n     node
	path  []string // catalog, schema, table parts as written (1 to 3)
	at    *atClause
	prune []pruneTerm // WHERE conjuncts about this table alone (prune.go)
	// lineage is set when the statement names a row lineage column
	// (_row_id, _last_updated_sequence_number): a v3 table's view then
	// has them (lineage.go).
	lineage bool
	// tbl is the table, when loaded while looking for views (views.go).
	tbl *table.Table
	// rights is set for a name inside the expansion of a definer-rights
	// view: it is read with the view owner's rights (views.go).
	rights *viewRights
	// roomTable is the collaboration's configured table the name reads
	// (cleanroom.go): the query sees its configured columns only; nil
	// outside clean rooms.
	roomTable *cleanroom.ConfiguredTable
	// roomDP is set when the collaboration's privacy is on: the table is
	// read with its row bound and clamped ranges.
	roomDP bool
	// roomJoinKeys are the table's columns the statement joins on (under
	// differential privacy each must be unique in the snapshot read).
	roomJoinKeys []string
}

// atClause is a time-travel clause: AT (VERSION => n) or AT (TIMESTAMP => 'ts').
type atClause struct {
	version   int64
	timestamp string // as written; the engine converts it
}

// analysis is what checking a statement's tree found.
type analysis struct {
	refs []*tableRef
	// system is set when the statement reads the system catalog
	// (pg_catalog or information_schema).
	system bool
	// patched are system views replaced by a view with the columns
	// PostgreSQL clients expect (see systemPatches).
	patched []*tableRef
	// macros are the lazyMacros the statement calls.
	macros map[string]bool
	// temps are the session's temporary tables (lower case): a one-part
	// name among them is left to DuckDB, which holds them (temp.go).
	temps map[string]int64
	// definers are the expansions of definer-rights views (by node
	// identity, see nodeKey) and cur the rights of the node being walked.
	definers map[uintptr]*viewRights
	cur      *viewRights
}

// systemPatches complete DuckDB's pg_catalog views where psql and drivers
// need more (pgcatalog.go explains pg_attribute and pg_type).
var systemPatches = map[string]string{
	"pg_class":                 "SELECT * REPLACE (CAST(reloptions AS VARCHAR[]) AS reloptions), false AS relforcerowsecurity FROM pg_catalog.pg_class WHERE oid NOT IN " + temporaryOIDs,
	"pg_tables":                "SELECT t.* FROM pg_catalog.pg_tables t WHERE NOT EXISTS (SELECT 1 FROM duckdb_tables() d WHERE d.temporary AND d.schema_name = t.schemaname AND d.table_name = t.tablename)",
	"pg_policy":                "SELECT 0::BIGINT AS oid, ''::VARCHAR AS polname, 0::BIGINT AS polrelid, ''::VARCHAR AS polcmd, true AS polpermissive, NULL AS polroles, NULL::VARCHAR AS polqual, NULL::VARCHAR AS polwithcheck WHERE false",
	"pg_statistic_ext":         "SELECT 0::BIGINT AS oid, 0::BIGINT AS stxrelid, ''::VARCHAR AS stxname, 0::BIGINT AS stxnamespace, []::INTEGER[] AS stxkeys, []::VARCHAR[] AS stxkind, -1 AS stxstattarget, NULL::VARCHAR AS stxexprs WHERE false",
	"pg_publication":           "SELECT 0::BIGINT AS oid, ''::VARCHAR AS pubname, false AS puballtables, false AS pubinsert, false AS pubupdate, false AS pubdelete, false AS pubtruncate, false AS pubviaroot WHERE false",
	"pg_inherits":              "SELECT 0::BIGINT AS inhrelid, 0::BIGINT AS inhparent, 0 AS inhseqno, false AS inhdetachpending WHERE false",
	"pg_trigger":               "SELECT 0::BIGINT AS oid, 0::BIGINT AS tgrelid, 0::BIGINT AS tgparentid, ''::VARCHAR AS tgname, false AS tgisinternal, 'O' AS tgenabled WHERE false",
	"pg_rewrite":               "SELECT 0::BIGINT AS oid, ''::VARCHAR AS rulename, 0::BIGINT AS ev_class, 'O' AS ev_enabled, '1' AS ev_type WHERE false",
	"pg_partitioned_table":     "SELECT 0::BIGINT AS partrelid, 'r' AS partstrat WHERE false",
	"pg_matviews":              "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS matviewname, ''::VARCHAR AS matviewowner, NULL::VARCHAR AS tablespace, false AS hasindexes, true AS ispopulated, ''::VARCHAR AS definition WHERE false",
	"pg_depend":                "SELECT 0::BIGINT AS classid, 0::BIGINT AS objid, 0 AS objsubid, 0::BIGINT AS refclassid, 0::BIGINT AS refobjid, 0 AS refobjsubid, 'n' AS deptype WHERE false",
	"pg_foreign_table":         "SELECT 0::BIGINT AS ftrelid, 0::BIGINT AS ftserver, []::VARCHAR[] AS ftoptions WHERE false",
	"pg_publication_rel":       "SELECT 0::BIGINT AS oid, 0::BIGINT AS prpubid, 0::BIGINT AS prrelid, NULL::VARCHAR AS prqual, NULL::SMALLINT[] AS prattrs WHERE false",
	"pg_publication_namespace": "SELECT 0::BIGINT AS oid, 0::BIGINT AS pnpubid, 0::BIGINT AS pnnspid WHERE false",
	"pg_roles":                 pgRoles,
	"pg_user":                  pgUser,
	"pg_auth_members":          pgAuthMembers,
	"pg_database":              pgDatabase,
	"pg_namespace":             pgNamespace,
	"pg_proc":                  pgProc,
	"pg_index":                 pgIndex,
	"pg_opclass":               "SELECT 0::BIGINT AS oid, 0::BIGINT AS opcmethod, ''::VARCHAR AS opcname, 0::BIGINT AS opcnamespace, 0::BIGINT AS opcowner, 0::BIGINT AS opcfamily, 0::BIGINT AS opcintype, false AS opcdefault, 0::BIGINT AS opckeytype WHERE false",
	"pg_attribute":             pgAttributeView,
	"pg_type":                  pgTypeView,
}

// temporaryOIDs lists the session's temporary tables (kept small tables,
// DML working sets), which catalog views leave out: they are the engine's,
// not the principal's.
const temporaryOIDs = "(SELECT table_oid FROM duckdb_tables() WHERE temporary)"

// infoSchemaPatches are systemPatches for information_schema views.
var infoSchemaPatches = map[string]string{
	"tables":   "SELECT * REPLACE (floe_current_database() AS table_catalog) FROM information_schema.tables WHERE table_catalog <> 'temp'",
	"columns":  "SELECT * REPLACE (floe_current_database() AS table_catalog) FROM information_schema.columns WHERE table_catalog <> 'temp'",
	"views":    "SELECT * REPLACE (floe_current_database() AS table_catalog) FROM information_schema.views WHERE table_catalog <> 'temp'",
	"schemata": infoSchemata,
}

// systemPatch returns the patch replacing a system view reference (path is
// schema and view name, lower case), or "".
func systemPatch(path []string) string {
	switch path[0] {
	case "pg_catalog":
		return systemPatches[path[1]]
	case "information_schema":
		return infoSchemaPatches[path[1]]
	}
	return ""
}

// systemViews are the catalog views a statement may read: DuckDB answers
// them from the session's own database, which holds empty stand-ins of the
// tables the principal may see (see session.syncCatalog).
var systemViews = map[string]map[string]bool{
	"pg_catalog": setOf("pg_class", "pg_namespace", "pg_attribute", "pg_type", "pg_database", "pg_tables",
		"pg_views", "pg_index", "pg_constraint", "pg_description", "pg_am", "pg_attrdef", "pg_proc",
		"pg_inherits", "pg_roles", "pg_user", "pg_enum", "pg_range", "pg_collation", "pg_sequence",
		"pg_policy", "pg_trigger", "pg_rewrite", "pg_statistic_ext", "pg_publication", "pg_foreign_table",
		"pg_publication_rel", "pg_publication_namespace",
		"pg_partitioned_table", "pg_matviews", "pg_tablespace", "pg_settings_floe", "pg_auth_members", "pg_opclass",
		"pg_depend"),
	"information_schema": setOf("tables", "columns", "schemata", "views", "table_constraints",
		"key_column_usage", "referential_constraints", "character_sets"),
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// deniedFunctions are scalar functions a statement may not call: they read
// the server's environment or configuration. Table functions are refused
// as a whole.
var deniedFunctions = setOf("getenv", "current_setting", "error", "set_config", "pg_read_file", "pg_ls_dir",
	"pg_read_binary_file", "pg_stat_file")

// deniedPrefixes are prefixes of function names that are refused.
var deniedPrefixes = []string{"duckdb_", "pragma_", "read_", "parquet_", "sniff_", "glob", "iceberg_", "delta_"}

func refused(format string, args ...any) error {
	return &pgwire.Error{Code: pgwire.CodeInsufficientPrivilege, Message: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) error {
	return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: fmt.Sprintf(format, args...)}
}

// analyze checks the tree of one SELECT statement and collects its table
// references. It refuses anything that could read other than Floe tables
// through the engine's views: table functions, file names as tables,
// references to DuckDB's own catalog, and functions that read the
// environment.
func analyze(stmt node, temps map[string]int64) (*analysis, error) {
	return analyzeWith(stmt, temps, nil)
}

// analyzeWith is analyze with the expansions of definer-rights views: the
// names inside one are read with its owner's rights.
func analyzeWith(stmt node, temps map[string]int64, definers map[uintptr]*viewRights) (*analysis, error) {
	a := &analysis{temps: temps, definers: definers}
	if err := a.walk(stmt, nil); err != nil {
		return nil, err
	}
	return a, nil
}

// walk visits v with the CTE names in scope.
func (a *analysis) walk(v any, ctes []string) error {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if err := a.walk(c, ctes); err != nil {
				return err
			}
		}
		return nil
	case node:
		return a.walkNode(x, ctes)
	}
	return nil
}

func (a *analysis) walkNode(n node, ctes []string) error {
	if r, ok := a.definers[nodeKey(n)]; ok && len(a.definers) > 0 {
		saved := a.cur
		a.cur = r
		defer func() { a.cur = saved }()
	}
	pgCompat(n)
	// CTEs defined at this node are in scope for all of its parts.
	if cm, ok := n["cte_map"].(node); ok {
		if entries, ok := cm["map"].([]any); ok {
			for _, e := range entries {
				if en, ok := e.(node); ok {
					if k, ok := en["key"].(string); ok {
						ctes = append(ctes, strings.ToLower(k))
					}
				}
			}
		}
	}
	typ, _ := n["type"].(string)
	class, _ := n["class"].(string)
	switch {
	case typ == "TABLE_FUNCTION":
		if generatorFunction(n) {
			break // its arguments are checked below
		}
		name := "a table function"
		if f, ok := n["function"].(node); ok {
			if fn, ok := f["function_name"].(string); ok {
				name = "table function " + fn
			}
		}
		return refused("%s may not be used: the SQL endpoint reads only Floe tables", name)
	case typ == "SHOW_REF":
		return unsupported("SHOW, DESCRIBE and SUMMARIZE are not supported; query information_schema instead")
	case typ == "BASE_TABLE":
		return a.baseTable(n, ctes)
	case class == "FUNCTION":
		name, _ := n["function_name"].(string)
		name = strings.ToLower(name)
		if deniedFunctions[name] || hasDeniedPrefix(name) {
			return refused("function %s may not be used through the SQL endpoint", name)
		}
		if lazyMacros[name] != nil {
			if a.macros == nil {
				a.macros = map[string]bool{}
			}
			a.macros[name] = true
		}
	}
	for k, c := range n {
		if k == "cte_map" {
			// The CTE bodies see the CTEs (recursive ones see themselves).
			if err := a.walk(c, ctes); err != nil {
				return err
			}
			continue
		}
		if err := a.walk(c, ctes); err != nil {
			return err
		}
	}
	return nil
}

func hasDeniedPrefix(name string) bool {
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// tableRefPath returns the name parts of a BASE_TABLE node: its
// qualified name's path, else its catalog, schema and table names.
func tableRefPath(n node) []string {
	var path []string
	if qn, ok := n["qualified_name"].(node); ok {
		if p, ok := qn["path"].([]any); ok {
			for _, s := range p {
				str, _ := s.(string)
				path = append(path, str)
			}
		}
	}
	if len(path) == 0 {
		for _, k := range []string{"catalog_name", "schema_name", "table_name"} {
			if s, _ := n[k].(string); s != "" {
				path = append(path, s)
			}
		}
	}
	return path
}

// baseTable classifies a table reference: a CTE, a permitted system view,
// or a Floe table.
func (a *analysis) baseTable(n node, ctes []string) error {
	path := tableRefPath(n)
	if len(path) == 0 {
		return refused("table reference without a name")
	}
	at, err := parseAt(n["at_clause"])
	if err != nil {
		return err
	}
	if len(path) == 1 {
		name := strings.ToLower(path[0])
		for _, c := range ctes {
			if c == name && at == nil {
				return nil
			}
		}
		if _, ok := a.temps[name]; ok && at == nil {
			return nil
		}
		if systemViews["pg_catalog"][name] && at == nil {
			a.system = true
			a.patch(n, "pg_catalog", name)
			return nil
		}
		return &pgwire.Error{Code: pgwire.CodeUndefinedTable,
			Message: fmt.Sprintf("relation %q does not exist", path[0]),
			Hint:    "Name Floe tables as namespace.table or warehouse.namespace.table."}
	}
	if len(path) == 3 {
		if _, ok := systemViews[strings.ToLower(path[1])]; ok {
			// database.information_schema.columns (dbt names the
			// database): the system schemas are the session's own,
			// whatever database is named.
			n["catalog_name"] = ""
			path = path[1:]
		}
	}
	if len(path) == 2 {
		schema := strings.ToLower(path[0])
		if views, ok := systemViews[schema]; ok {
			if !views[strings.ToLower(path[1])] || at != nil {
				return refused("%s.%s may not be read through the SQL endpoint", path[0], path[1])
			}
			a.system = true
			a.patch(n, schema, strings.ToLower(path[1]))
			return nil
		}
	}
	if len(path) > 3 {
		return &pgwire.Error{Code: pgwire.CodeSyntaxError, Message: fmt.Sprintf("improper qualified name (too many dotted names): %s", strings.Join(path, "."))}
	}
	a.refs = append(a.refs, &tableRef{n: n, path: path, at: at, rights: a.cur})
	return nil
}

// nodeKey identifies a tree node (a map) by identity: replace keeps a
// reference's map when it turns it into a subquery.
func nodeKey(n node) uintptr { return uintptr(reflect.ValueOf(n).UnsafePointer()) }

// patch records a system view reference that systemPatches replaces.
func (a *analysis) patch(n node, schema, name string) {
	if systemPatch([]string{schema, name}) != "" {
		a.patched = append(a.patched, &tableRef{n: n, path: []string{schema, name}})
	}
}

// parseAt reads a time-travel clause: AT (VERSION => <integer>) or
// AT (TIMESTAMP => <string or typed literal>).
func parseAt(v any) (*atClause, error) {
	ac, ok := v.(node)
	if !ok || ac == nil {
		return nil, nil
	}
	unit, _ := ac["unit"].(string)
	expr, _ := ac["expr"].(node)
	for expr != nil && expr["class"] == "CAST" {
		expr, _ = expr["child"].(node)
	}
	var text string
	if expr != nil && expr["class"] == "CONSTANT" {
		if lit, ok := expr["literal"].(node); ok {
			text, _ = lit["text"].(string)
		}
	}
	if text == "" {
		return nil, unsupported("AT (%s => ...) takes a constant", unit)
	}
	switch strings.ToUpper(unit) {
	case "VERSION":
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: fmt.Sprintf("AT (VERSION => %s): a snapshot id is an integer", text)}
		}
		return &atClause{version: id}, nil
	case "TIMESTAMP":
		return &atClause{timestamp: text}, nil
	}
	return nil, unsupported("AT (%s => ...) is not supported; use VERSION or TIMESTAMP", unit)
}

// serialized is the answer of json_serialize_sql.
type serialized struct {
	Error        bool              `json:"error"`
	ErrorType    string            `json:"error_type"`
	ErrorMessage string            `json:"error_message"`
	Position     string            `json:"position"`
	Statements   []json.RawMessage `json:"statements"`
}

// pgCompat rewrites PostgreSQL spellings that psql and drivers send and
// DuckDB does not take: COLLATE pg_catalog.default (dropped) and
// OPERATOR(pg_catalog.~) (the plain operator).
func pgCompat(n node) {
	sessionCompat(n)
	for n["class"] == "COLLATE" {
		coll, _ := n["collation"].(string)
		switch strings.ToLower(strings.ReplaceAll(coll, `"`, "")) {
		case "pg_catalog.default", "default", "c", "pg_catalog.c", "posix", "pg_catalog.posix":
		default:
			return
		}
		child, ok := n["child"].(node)
		if !ok {
			return
		}
		clear(n)
		for k, v := range child {
			n[k] = v
		}
	}
	regclassParam(n)
	if n["class"] == "TYPE" {
		tn, _ := n["type_name"].(string)
		tn = strings.ToLower(tn)
		if strings.HasPrefix(tn, "reg") || n["schema"] == "pg_catalog" {
			if strings.HasPrefix(tn, "reg") {
				tn = "bigint"
			}
			n["type_name"] = tn
			n["schema"] = ""
			n["catalog"] = ""
			n["qualified_name"] = node{"path": []any{tn}}
		}
	}
	name, _ := n["function_name"].(string)
	known := pgMacros[name] != "" || lazyMacros[name] != nil
	if n["class"] == "FUNCTION" && (n["schema"] == "pg_catalog" && (n["is_operator"] == true || known) ||
		n["schema"] == "information_schema" && known) {
		n["schema"] = ""
		if name, ok := n["function_name"].(string); ok {
			n["qualified_name"] = node{"path": []any{name}}
		}
	}
}

// pgMacros are PostgreSQL catalog functions DuckDB lacks, defined in every
// session (by name: parameters and body).
var pgMacros = map[string]string{
	"pg_get_expr":                        "(e, r) AS NULL::VARCHAR, (e, r, p) AS NULL::VARCHAR",
	"pg_get_userbyid":                    "(id) AS 'floe'",
	"floe_regclass":                      "(n) AS (SELECT min(oid) FROM pg_catalog.pg_class WHERE relname = split_part(n, '.', -1))",
	"obj_description":                    "(id, cat) AS NULL::VARCHAR",
	"col_description":                    "(id, col) AS NULL::VARCHAR",
	"shobj_description":                  "(id, cat) AS NULL::VARCHAR",
	"pg_encoding_to_char":                "(e) AS 'UTF8'",
	"pg_get_indexdef":                    "(id, col, pretty) AS NULL::VARCHAR",
	"pg_get_constraintdef":               "(id, pretty) AS NULL::VARCHAR",
	"pg_get_statisticsobjdef_columns":    "(id) AS NULL::VARCHAR",
	"pg_relation_is_publishable":         "(id) AS false",
	"array_to_string":                    arrayToString,
	"pg_table_size":                      "(id) AS NULL::BIGINT",
	"pg_relation_size":                   "(id) AS NULL::BIGINT",
	"pg_total_relation_size":             "(id) AS NULL::BIGINT",
	"pg_indexes_size":                    "(id) AS NULL::BIGINT",
	"array_upper":                        "(arr, dim) AS CASE WHEN dim = 1 AND len(arr) > 0 THEN len(arr) END",
	"format_type":                        formatType,
	"pg_get_serial_sequence":             "(t, c) AS NULL::VARCHAR",
	"_pg_expandarray":                    "(arr) AS {'x': NULL::BIGINT, 'n': NULL::BIGINT}",
	"pg_get_function_result":             "(id) AS NULL::VARCHAR",
	"pg_get_function_arguments":          "(id) AS NULL::VARCHAR",
	"pg_get_function_identity_arguments": "(id) AS NULL::VARCHAR",
}
