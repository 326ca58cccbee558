package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/view"

	"github.com/floe-lake/floe/sqlgw/viewrename"
)

// A view the SQL endpoint creates carries, next to its duckdb
// representation, a "spark" one when its query means the same in Spark
// SQL, so that Spark (with the Iceberg runtime) can read the view too.
// Floe writes no general translator: the spark representation is the
// query as written, with "quoted" identifiers in Spark's `backticks` and
// the warehouse qualifier dropped (Spark resolves names in the catalog it
// loaded the view from), and it is written only when every construct of
// the query is one whose meaning both engines share (portable). Anything
// else — casts, window functions, DuckDB-only syntax or functions, string
// literals with escapes, LIMIT (NULL ordering differs) — leaves the view
// with its duckdb representation alone, as before: Spark then refuses to
// expand it, rather than computing something different.

// sparkDialect and trinoDialect are the dialect names Spark's and Trino's
// Iceberg views use.
const (
	sparkDialect = "spark"
	trinoDialect = "trino"
)

// portableFunctions are the functions (DuckDB's names in the parsed tree)
// with the same meaning in DuckDB and Spark SQL for the arguments a view
// gives them.
var portableFunctions = setOf("lower", "upper", "sum", "count", "count_star", "min", "max", "avg", "abs",
	"+", "-", "*", "/", "%", "||", "~~", "!~~", "nullif", "trim", "ltrim", "rtrim", "length")

// portableClasses are the expression classes a portable query may use.
var portableClasses = setOf("COLUMN_REF", "CONSTANT", "COMPARISON", "CONJUNCTION", "OPERATOR", "CASE",
	"FUNCTION", "STAR", "SUBQUERY", "BETWEEN")

// portableTypes are the values of "type" of the tree's other nodes (query
// nodes, table references, modifiers, operators) a portable query may have.
var portableTypes = setOf("SELECT_NODE", "SET_OPERATION_NODE", "CTE_NODE", "BASE_TABLE", "JOIN", "SUBQUERY",
	"EMPTY", "ORDER_MODIFIER", "DISTINCT_MODIFIER", "ASCENDING", "DESCENDING", "ORDER_DEFAULT",
	"NULLS_FIRST", "NULLS_LAST", "INNER", "LEFT", "RIGHT", "OUTER", "REGULAR", "CROSS",
	"UNION", "EXCEPT", "INTERSECT", "UNION_BY_NAME", "NONE")

// sparkView returns query in Spark's dialect for a view of warehouse wh,
// or "" when it is not portable.
func (ss *session) sparkView(ctx context.Context, query, wh string) string {
	stmts, err := ss.serialize(ctx, query)
	if err != nil || len(stmts) != 1 {
		return ""
	}
	sel, _ := stmts[0]["node"].(node)
	if sel == nil || !portableTree(sel) {
		return ""
	}
	out, ok := sparkText(query, wh)
	if !ok {
		return ""
	}
	return out
}

// portableTree reports whether every node under v is one whose meaning
// DuckDB and Spark share.
func portableTree(v any) bool { return unportable(v, sparkDialect) == "" }

// unportable returns what, under v, is outside the subset whose meaning
// DuckDB and dialect (spark or trino) share, "" when nothing is: it names
// the construct, as in "function date_format".
func unportable(v any, dialect string) string {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if why := unportable(c, dialect); why != "" {
				return why
			}
		}
	case node:
		if why := unportableNode(x, dialect); why != "" {
			return why
		}
		for k, c := range x {
			if k == "query_location" || k == "query_location_length" {
				continue
			}
			if why := unportable(c, dialect); why != "" {
				return why
			}
		}
	}
	return ""
}

func unportableNode(n node, dialect string) string {
	if class, ok := n["class"].(string); ok {
		if !portableClasses[class] {
			return "a " + strings.ToLower(strings.ReplaceAll(class, "_", " ")) + " expression"
		}
		switch class {
		case "FUNCTION":
			name, _ := n["function_name"].(string)
			schema, _ := n["schema"].(string)
			name = strings.ToLower(name)
			if !portableFunctions[name] || schema != "" || dialect == trinoDialect && name == "/" {
				// Trino divides integers as integers; DuckDB and Spark do not.
				return "function " + name
			}
			if n["filter"] != nil || n["order_bys"] != nil && !emptyOrders(n["order_bys"]) {
				return "an aggregate's FILTER or ORDER BY"
			}
		case "OPERATOR":
			switch n["type"] {
			case "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE":
			default:
				return "operator " + strings.ToLower(fmt.Sprint(n["type"]))
			}
		case "STAR":
			if !emptyList(n["exclude_list"]) || !emptyList(n["qualified_exclude_list"]) || !emptyList(n["replace_list"]) || !emptyList(n["rename_list"]) || n["columns"] == true || n["expr"] != nil {
				return "a * with EXCLUDE, REPLACE or COLUMNS"
			}
		case "CONSTANT":
			// The parser's literal as written: numbers, strings, NULL,
			// booleans (typed literals such as DATE '...' are casts).
			lit, _ := n["literal"].(node)
			kind, _ := lit["kind"].(string)
			switch kind {
			case "INTEGER", "DECIMAL", "DOUBLE", "FLOAT", "STRING", "NULL", "NULL_LITERAL", "BOOLEAN":
			default:
				return "a " + strings.ToLower(kind) + " literal"
			}
		}
		return ""
	}
	t, ok := n["type"].(string)
	if !ok {
		return "" // a plain container (a modifier's entries, a value)
	}
	if t == "LIMIT_MODIFIER" || t == "LIMIT_PERCENT_MODIFIER" {
		return "LIMIT"
	}
	if !portableTypes[t] && !isValueType(n) {
		return strings.ToLower(strings.ReplaceAll(t, "_", " "))
	}
	if t == "SELECT_NODE" {
		if h, _ := n["aggregate_handling"].(string); h != "" && h != "STANDARD_HANDLING" {
			return "GROUP BY ALL"
		}
		if n["qualify"] != nil || n["sample"] != nil {
			return "QUALIFY or a sample"
		}
	}
	return ""
}

// isValueType reports a CONSTANT's value or type node (its "type" is a
// node, not a string: not reached) or a logical type description.
func isValueType(n node) bool {
	_, hasID := n["id"]
	return hasID
}

func emptyList(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case node:
		return len(x) == 0
	}
	return false
}

func emptyOrders(v any) bool {
	m, ok := v.(node)
	if !ok {
		return emptyList(v)
	}
	return emptyList(m["orders"])
}

// sparkText rewrites query's quoted identifiers in Spark's backticks and
// drops a leading warehouse qualifier of three-part names. It refuses
// (false) text whose lexical meaning differs between the engines: string
// literals with a doubled quote or backslashes or an E prefix, "::" casts, $
// parameters or dollar quoting, and identifiers holding a backtick.
func sparkText(query, wh string) (string, bool) {
	type token struct {
		text  string // as written in Spark's dialect
		ident string // the identifier's name ("" for other tokens)
		quote bool
	}
	var toks []token
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(query[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			lit := query[i : i+j+2]
			if strings.ContainsRune(lit, '\\') || i+j+2 < len(query) && query[i+j+2] == '\'' {
				return "", false
			}
			if i > 0 && isIdentByte(query[i-1]) {
				return "", false // E'...', X'...' and the like
			}
			toks = append(toks, token{text: lit})
			i += j + 2
		case c == '"':
			var name strings.Builder
			j := i + 1
			for ; j < len(query); j++ {
				if query[j] == '"' {
					if j+1 < len(query) && query[j+1] == '"' {
						name.WriteByte('"')
						j++
						continue
					}
					break
				}
				name.WriteByte(query[j])
			}
			if j >= len(query) || strings.ContainsRune(name.String(), '`') {
				return "", false
			}
			toks = append(toks, token{text: "`" + name.String() + "`", ident: name.String(), quote: true})
			i = j + 1
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			toks = append(toks, token{text: query[i : i+j]})
			i += j
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				return "", false
			}
			toks = append(toks, token{text: query[i : i+j+4]})
			i += j + 4
		case c == ':' && strings.HasPrefix(query[i:], "::"), c == '$', c == '`', c == '\\':
			return "", false
		case isIdentByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(query) && isIdentByte(query[j]) {
				j++
			}
			toks = append(toks, token{text: query[i:j], ident: query[i:j]})
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j := i
			for j < len(query) && strings.IndexByte(" \t\n\r", query[j]) >= 0 {
				j++
			}
			toks = append(toks, token{text: query[i:j]})
			i = j
		default:
			toks = append(toks, token{text: query[i : i+1]})
			i++
		}
	}
	isWarehouse := func(t token) bool {
		return t.ident != "" && (t.quote && t.ident == wh || !t.quote && strings.EqualFold(t.ident, wh))
	}
	var b strings.Builder
	for i := 0; i < len(toks); i++ {
		// wh . ns . name (no spaces: the parser's usual form) -> ns . name
		if isWarehouse(toks[i]) && (i == 0 || toks[i-1].text != ".") && i+4 < len(toks) &&
			toks[i+1].text == "." && toks[i+2].ident != "" && toks[i+3].text == "." && toks[i+4].ident != "" {
			i++ // skip the qualifier and its dot
			continue
		}
		b.WriteString(toks[i].text)
	}
	return b.String(), true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// trinoView returns query in Trino's dialect for a view of warehouse wh,
// or "" when it is not portable: the text as written (Trino quotes as
// DuckDB does), each table named in full in the Trino catalog
// (Options.TrinoCatalog): Trino's Iceberg REST connector analyses a view
// in its default-catalog, which Floe's views leave unset, so a name must
// carry its catalog. The rewrite is checked on the parsed tree
// (viewrename).
func (ss *session) trinoView(ctx context.Context, query, wh string) string {
	stmts, err := ss.serialize(ctx, query)
	if err != nil || len(stmts) != 1 {
		return ""
	}
	sel, _ := stmts[0]["node"].(node)
	if sel == nil || unportable(sel, trinoDialect) != "" {
		return ""
	}
	if _, ok := sparkText(query, wh); !ok {
		return "" // lexically unsafe text (escapes, casts, parameters)
	}
	cat := ss.e.opts.TrinoCatalog
	out, err := ss.e.rewriter.Rename(ctx, query, viewrename.Trino, nil, func(ns []string, name string) (viewrename.Name, bool) {
		if len(ns) != 1 {
			return viewrename.Name{}, false
		}
		return viewrename.Name{Catalog: cat, Namespace: ns[0], Name: name}, true
	})
	if err != nil {
		return ""
	}
	return out
}

// foreignSQL turns the SQL of a view representation in Spark's or Trino's
// dialect into the DuckDB query it means, or says why it cannot ("" and
// the reason): the text is translated lexically (Spark's `identifiers`
// and "strings" to DuckDB's quoting, which Trino shares), parsed, and
// must be within the shared subset (unportable); on the tree, a table
// qualified with the view's default catalog (or the warehouse) loses the
// qualifier, and an unqualified one is placed in the view's default
// namespace. Any other catalog is refused. The query run is the tree
// checked, printed back by DuckDB.
func (ss *session) foreignSQL(ctx context.Context, rep view.Representation, ver *view.Version, wh string) (string, string) {
	work := rep.Sql
	if strings.EqualFold(rep.Dialect, sparkDialect) {
		var err error
		if work, err = viewrename.SparkToDuckDB(work); err != nil {
			return "", "quotes or escapes whose meaning differs"
		}
	}
	if _, ok := sparkText(work, wh); !ok {
		return "", "quotes, escapes, casts or parameters whose meaning differs"
	}
	stmts, err := ss.serialize(ctx, work)
	if err != nil || len(stmts) != 1 {
		return "", "SQL Floe cannot parse"
	}
	sel, _ := stmts[0]["node"].(node)
	if sel == nil {
		return "", "not one query"
	}
	if why := unportable(sel, strings.ToLower(rep.Dialect)); why != "" {
		return "", "uses " + why
	}
	ctes := map[string]bool{}
	collectCTENames(sel, ctes)
	var bad string
	visitBaseTables(sel, func(t node) {
		cat, _ := t["catalog_name"].(string)
		schema, _ := t["schema_name"].(string)
		name, _ := t["table_name"].(string)
		switch {
		case cat != "" && !strings.EqualFold(cat, ver.DefaultCatalog) && !strings.EqualFold(cat, wh):
			bad = "names catalog " + cat
		case schema == "" && ctes[strings.ToLower(name)]:
			return
		case schema == "" && len(ver.DefaultNamespace) != 1:
			bad = "names table " + name + " without a one-level default namespace"
		case schema == "":
			schema = ver.DefaultNamespace[0]
		}
		t["catalog_name"], t["schema_name"] = "", schema
		if _, ok := t["qualified_name"]; ok {
			t["qualified_name"] = node{"path": []any{schema, name}}
		}
	})
	if bad != "" {
		return "", bad
	}
	out, err := ss.deserialize(ctx, stmts[0])
	if err != nil {
		return "", "SQL Floe cannot print back"
	}
	return out, ""
}

// collectCTENames adds the lower-case names of every CTE under v.
func collectCTENames(v any, out map[string]bool) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			collectCTENames(c, out)
		}
	case node:
		if m, ok := x["cte_map"].(node); ok {
			if entries, ok := m["map"].([]any); ok {
				for _, e := range entries {
					if en, ok := e.(node); ok {
						if k, ok := en["key"].(string); ok {
							out[strings.ToLower(k)] = true
						}
					}
				}
			}
		}
		for _, c := range x {
			collectCTENames(c, out)
		}
	}
}

// visitBaseTables calls fn for every base table reference under v.
func visitBaseTables(v any, fn func(node)) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			visitBaseTables(c, fn)
		}
	case node:
		if x["type"] == "BASE_TABLE" {
			fn(x)
		}
		for _, c := range x {
			visitBaseTables(c, fn)
		}
	}
}
