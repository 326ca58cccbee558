// Package viewrename rewrites the SQL of a view so that it reads tables
// under other names: a share catalog serves a shared view to its
// recipients with the tables it reads renamed to their aliases in the
// share, and refuses a view that reads anything the share does not hold.
//
// The rewrite is exact or refused. DuckDB's parser (the SQL endpoint's)
// finds every table the query reads and where its name is written; the
// names are replaced in the text as written (comments, spacing and every
// other token stay); and the rewritten text is parsed again: its tree must
// be the original's with only those table names changed. A view in Spark's
// dialect is checked the same way, through a same-length translation of
// its quoting into DuckDB's (backticks to double quotes, double-quoted
// strings to single-quoted ones); text whose meaning could differ between
// the two (backslashes in strings, quotes inside quoted text) is refused.
package viewrename

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe"
)

// Dialects of view representations this package rewrites.
const (
	DuckDB = "duckdb"
	Spark  = "spark"
	// Trino is quoted as DuckDB is ("identifiers", 'strings'); a Trino
	// view's names are usually qualified with the Trino catalog (Name.Catalog).
	Trino = "trino"
)

// MaxSQLBytes bounds the SQL of one representation.
const MaxSQLBytes = 256 << 10

// Name is a table's name: a one-level namespace and a name, and a catalog
// qualifier to write before them ("" for none).
type Name struct {
	Catalog, Namespace, Name string
}

// Renamer returns the new name of the table the query reads as namespace
// ns (the view's default namespace for an unqualified name) and name, or
// false when the query may not read it.
type Renamer func(ns []string, name string) (Name, bool)

// ErrNotShared is wrapped by the error of a view that reads a table the
// Renamer refuses.
var ErrNotShared = floe.E(floe.Forbidden, "view", "the view reads a table that is not shared with it")

// Rewriter rewrites views on one in-memory DuckDB connection, opened on
// first use; it is safe for concurrent use (calls take turns).
type Rewriter struct {
	mu  sync.Mutex
	db  *sql.DB
	err error
}

// New returns a Rewriter. It opens nothing until the first call.
func New() *Rewriter { return &Rewriter{} }

// Close closes the DuckDB connection, if one was opened.
func (r *Rewriter) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db, r.err = nil, fmt.Errorf("viewrename: closed")
	return err
}

func (r *Rewriter) open() (*sql.DB, error) {
	if r.db != nil || r.err != nil {
		return r.db, r.err
	}
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("viewrename: open duckdb: %w", err)
	}
	r.db = sql.OpenDB(c)
	r.db.SetMaxOpenConns(1)
	r.db.SetMaxIdleConns(1)
	return r.db, nil
}

type node = map[string]any

// ref is one table the query reads: where its name starts in the text and
// its new name.
type ref struct {
	loc   int
	to    Name
	alias string // an alias to add: the old name, which columns may be qualified with
}

// Rename returns query (a view representation's SQL in dialect DuckDB or
// Spark) with every table it reads renamed by rename, fully qualified.
// Unqualified names resolve in defaultNS; a catalog qualifier is dropped.
// The error wraps ErrNotShared when rename refuses a table, and is Invalid
// when the query is not one SELECT DuckDB parses or cannot be rewritten
// exactly.
func (r *Rewriter) Rename(ctx context.Context, query, dialect string, defaultNS []string, rename Renamer) (string, error) {
	if len(query) > MaxSQLBytes || !utf8.ValidString(query) || strings.ContainsRune(query, 0) {
		return "", floe.E(floe.Invalid, "view", "the view's SQL is not valid UTF-8 text of at most %d bytes", MaxSQLBytes)
	}
	work := query
	if dialect == Spark {
		var err error
		if work, err = sparkToDuckDB(query); err != nil {
			return "", err
		}
	} else if dialect != DuckDB && dialect != Trino {
		return "", floe.E(floe.Invalid, "view", "views in dialect %q are not rewritten", dialect)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tree, err := r.parse(ctx, work)
	if err != nil {
		return "", err
	}
	ctes := map[string]bool{}
	collectCTEs(tree, ctes)
	qualifiers := map[string]bool{}
	collectQualifiers(tree, qualifiers)
	var refs []ref
	var refuse error
	visitTables(tree, func(t node) {
		if refuse != nil {
			return
		}
		catalog, _ := t["catalog_name"].(string)
		schema, _ := t["schema_name"].(string)
		name, _ := t["table_name"].(string)
		if catalog == "" && schema == "" && ctes[strings.ToLower(name)] {
			return // a CTE of the query
		}
		ns := defaultNS
		if schema != "" {
			ns = []string{schema}
		}
		to, ok := rename(ns, name)
		if !ok {
			refuse = ErrNotShared
			return
		}
		loc, ok := location(t)
		if !ok || loc < 0 || loc >= len(work) {
			refuse = floe.E(floe.Invalid, "view", "the view's SQL cannot be rewritten: a table reference has no position")
			return
		}
		rf := ref{loc: loc, to: to}
		if a, _ := t["alias"].(string); a == "" && to.Name != name && qualifiers[strings.ToLower(name)] {
			// Columns are qualified with the table's name: it stays the
			// reference's name, as an alias.
			rf.alias = name
			t["alias"] = name
		}
		t["catalog_name"], t["schema_name"], t["table_name"] = to.Catalog, to.Namespace, to.Name
		if _, ok := t["qualified_name"]; ok {
			path := []any{to.Namespace, to.Name}
			if to.Catalog != "" {
				path = []any{to.Catalog, to.Namespace, to.Name}
			}
			t["qualified_name"] = node{"path": path}
		}
		refs = append(refs, rf)
	})
	if refuse != nil {
		return "", refuse
	}
	if longColumnRefs(tree) {
		return "", floe.E(floe.Invalid, "view", "the view's SQL qualifies a column with a schema or catalog, which cannot be renamed")
	}
	out, err := replace(query, work, refs, dialect)
	if err != nil {
		return "", err
	}
	check := out
	if dialect == Spark {
		if check, err = sparkToDuckDB(out); err != nil {
			return "", err
		}
	}
	got, err := r.parse(ctx, check)
	if err != nil {
		return "", floe.Wrap(floe.Invalid, err, "the view's SQL cannot be rewritten exactly")
	}
	stripLocations(tree)
	stripLocations(got)
	if !reflect.DeepEqual(tree, got) {
		return "", floe.E(floe.Invalid, "view", "the view's SQL cannot be rewritten exactly (a renamed name is also written where it is not a table)")
	}
	return out, nil
}

// parse returns the parsed tree of one SELECT statement.
func (r *Rewriter) parse(ctx context.Context, query string) (node, error) {
	db, err := r.open()
	if err != nil {
		return nil, err
	}
	var js string
	if err := db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql($1::VARCHAR) AS VARCHAR)", query).Scan(&js); err != nil {
		return nil, fmt.Errorf("viewrename: parse: %w", err)
	}
	var out struct {
		Error        bool              `json:"error"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("viewrename: json_serialize_sql: %w", err)
	}
	if out.Error {
		return nil, floe.E(floe.Invalid, "view", "the view's SQL is not a query this server can read: %s", out.ErrorMessage)
	}
	if len(out.Statements) != 1 {
		return nil, floe.E(floe.Invalid, "view", "the view's SQL is not one query")
	}
	var stmt node
	d := json.NewDecoder(bytes.NewReader(out.Statements[0]))
	d.UseNumber()
	if err := d.Decode(&stmt); err != nil {
		return nil, fmt.Errorf("viewrename: json_serialize_sql: %w", err)
	}
	return stmt, nil
}

// collectCTEs adds the lower-case names of every CTE in v.
func collectCTEs(v any, out map[string]bool) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			collectCTEs(c, out)
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
			collectCTEs(c, out)
		}
	}
}

// visitTables calls fn for every base table reference under v.
func visitTables(v any, fn func(node)) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			visitTables(c, fn)
		}
	case node:
		if x["type"] == "BASE_TABLE" {
			fn(x)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a deterministic order of visits
		for _, k := range keys {
			visitTables(x[k], fn)
		}
	}
}

func location(t node) (int, bool) {
	n, ok := t["query_location"].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i > int64(MaxSQLBytes) {
		return 0, false
	}
	return int(i), true
}

// collectQualifiers adds the lower-case qualifiers of every two-part
// column reference in v (t.col).
func collectQualifiers(v any, out map[string]bool) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			collectQualifiers(c, out)
		}
	case node:
		if x["class"] == "COLUMN_REF" {
			if names, _ := x["column_names"].([]any); len(names) == 2 {
				if q, ok := names[0].(string); ok {
					out[strings.ToLower(q)] = true
				}
			}
			return
		}
		for _, c := range x {
			collectQualifiers(c, out)
		}
	}
}

// longColumnRefs reports a column reference of three or more parts (a
// schema- or catalog-qualified column).
func longColumnRefs(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if longColumnRefs(c) {
				return true
			}
		}
	case node:
		if x["class"] == "COLUMN_REF" {
			names, _ := x["column_names"].([]any)
			return len(names) >= 3
		}
		for _, c := range x {
			if longColumnRefs(c) {
				return true
			}
		}
	}
	return false
}

// stripLocations removes every query_location and query_location_length
// (positions change with the names).
func stripLocations(v any) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			stripLocations(c)
		}
	case node:
		delete(x, "query_location")
		delete(x, "query_location_length")
		for _, c := range x {
			stripLocations(c)
		}
	}
}

// replace writes each ref's new name over the dotted name written at its
// location in work (positions are the same in query).
func replace(query, work string, refs []ref, dialect string) (string, error) {
	sort.Slice(refs, func(i, j int) bool { return refs[i].loc > refs[j].loc })
	out := query
	last := len(work) + 1
	for _, rf := range refs {
		end, ok := dottedName(work, rf.loc)
		if !ok || end > last {
			return "", floe.E(floe.Invalid, "view", "the view's SQL cannot be rewritten: no table name at a table reference's position")
		}
		last = rf.loc
		name := quote(rf.to.Namespace, dialect) + "." + quote(rf.to.Name, dialect)
		if rf.to.Catalog != "" {
			name = quote(rf.to.Catalog, dialect) + "." + name
		}
		if rf.alias != "" {
			name += " AS " + quote(rf.alias, dialect)
		}
		out = out[:rf.loc] + name + out[end:]
	}
	return out, nil
}

func quote(s, dialect string) string {
	if dialect == Spark {
		return "`" + strings.ReplaceAll(s, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// dottedName returns the end of the name of up to three dotted parts that
// starts at i in work (DuckDB quoting).
func dottedName(work string, i int) (int, bool) {
	end, ok := identifier(work, i)
	if !ok {
		return 0, false
	}
	for parts := 1; parts < 3; parts++ {
		j := skipSpace(work, end)
		if j >= len(work) || work[j] != '.' {
			break
		}
		k, ok := identifier(work, skipSpace(work, j+1))
		if !ok {
			break
		}
		end = k
	}
	return end, true
}

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

// identifier returns the end of the bare or "quoted" identifier at i.
func identifier(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	if s[i] == '"' {
		for j := i + 1; j < len(s); j++ {
			if s[j] == '"' {
				if j+1 < len(s) && s[j+1] == '"' {
					j++
					continue
				}
				return j + 1, true
			}
		}
		return 0, false
	}
	j := i
	for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' ||
		s[j] >= '0' && s[j] <= '9' || s[j] >= 0x80) {
		j++
	}
	if j == i || s[i] >= '0' && s[i] <= '9' || s[i] == '$' {
		return 0, false
	}
	return j, true
}

// SparkToDuckDB translates Spark SQL's quoting into DuckDB's, as the
// checks of Rename do (see sparkToDuckDB): the error is Invalid when the
// text's meaning could differ.
func SparkToDuckDB(q string) (string, error) { return sparkToDuckDB(q) }

// sparkToDuckDB translates Spark SQL's quoting into DuckDB's without
// changing any position: `identifiers` become "identifiers" and "strings"
// 'strings'. Text whose meaning could differ is refused: backslashes or the
// other quote inside a string, quotes inside an identifier.
func sparkToDuckDB(q string) (string, error) {
	b := []byte(q)
	bad := func(what string) error {
		return floe.E(floe.Invalid, "view", "the view's Spark SQL cannot be checked: %s", what)
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '-' && i+1 < len(b) && b[i+1] == '-':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			j := bytes.Index(b[i+2:], []byte("*/"))
			if j < 0 {
				return "", bad("an unterminated comment")
			}
			i += j + 3
		case c == '\'' || c == '"' || c == '`':
			j := bytes.IndexByte(b[i+1:], c)
			if j < 0 {
				return "", bad("an unterminated quote")
			}
			inner := b[i+1 : i+1+j]
			if bytes.ContainsAny(inner, "\\'\"`") || i+j+2 < len(b) && b[i+j+2] == c {
				return "", bad("a backslash or quote inside quoted text")
			}
			switch c {
			case '"':
				b[i], b[i+1+j] = '\'', '\''
			case '`':
				b[i], b[i+1+j] = '"', '"'
			}
			i += j + 1
		case c == '\\':
			return "", bad("a backslash")
		}
	}
	return string(b), nil
}
