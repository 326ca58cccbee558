// Package rowfilter parses the row filter of a grant's data filter with
// DuckDB's own parser (the parser of the SQL endpoint that enforces it),
// so that a grant whose filter is not one SQL boolean expression, or that
// names a column its table does not have, is refused when it is made
// rather than failing later for its grantee (authz.RowFilterParser).
package rowfilter

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe"
)

// prefix wraps a filter into the statement the SQL endpoint checks it in.
const prefix = "SELECT * FROM t WHERE (\n"

// Parser parses row filters on one in-memory DuckDB connection, opened on
// first use; it is safe for concurrent use (calls take turns).
type Parser struct {
	mu  sync.Mutex
	db  *sql.DB
	err error
}

// New returns a Parser. It opens nothing until the first call.
func New() *Parser { return &Parser{} }

// Close closes the DuckDB connection, if one was opened.
func (p *Parser) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.db == nil {
		return nil
	}
	err := p.db.Close()
	p.db, p.err = nil, fmt.Errorf("rowfilter: closed")
	return err
}

func (p *Parser) open() (*sql.DB, error) {
	if p.db != nil || p.err != nil {
		return p.db, p.err
	}
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("rowfilter: open duckdb: %w", err)
	}
	p.db = sql.OpenDB(c)
	p.db.SetMaxOpenConns(1) // one parser connection, whatever the number of callers
	p.db.SetMaxIdleConns(1)
	return p.db, nil
}

// serialized is what json_serialize_sql returns.
type serialized struct {
	Error        bool              `json:"error"`
	ErrorMessage string            `json:"error_message"`
	Statements   []json.RawMessage `json:"statements"`
}

type node = map[string]any

// Columns returns the columns the row filter refers to, in the order they
// first appear, without a "t." qualifier and, for a struct field access,
// the top-level column. It is Invalid (entity "filter") when the filter is
// empty, is not valid SQL, is more than one boolean expression (it would
// change the statement it is put into) or holds a subquery.
func (p *Parser) Columns(ctx context.Context, rowFilter string) ([]string, error) {
	rf := strings.TrimSpace(rowFilter)
	if rf == "" {
		return nil, floe.E(floe.Invalid, "filter", "the row filter is empty")
	}
	if !utf8.ValidString(rf) || strings.ContainsRune(rf, 0) {
		return nil, floe.E(floe.Invalid, "filter", "the row filter is not valid UTF-8 text")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	db, err := p.open()
	if err != nil {
		return nil, err
	}
	var js string
	err = db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql($1::VARCHAR) AS VARCHAR)", prefix+rf+"\n)").Scan(&js)
	if err != nil {
		return nil, fmt.Errorf("rowfilter: parse: %w", err)
	}
	var out serialized
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("rowfilter: json_serialize_sql: %w", err)
	}
	if out.Error {
		return nil, floe.E(floe.Invalid, "filter", "the row filter is not valid SQL: %s", out.ErrorMessage)
	}
	if len(out.Statements) != 1 {
		return nil, notOne
	}
	var stmt node
	d := json.NewDecoder(bytes.NewReader(out.Statements[0]))
	d.UseNumber()
	if err := d.Decode(&stmt); err != nil {
		return nil, fmt.Errorf("rowfilter: json_serialize_sql: %w", err)
	}
	n, _ := stmt["node"].(node)
	if n == nil || n["type"] != "SELECT_NODE" || n["where_clause"] == nil {
		return nil, notOne
	}
	if ft, _ := n["from_table"].(node); ft == nil || ft["type"] != "BASE_TABLE" || ft["table_name"] != "t" {
		return nil, notOne
	}
	for _, k := range []string{"group_expressions", "modifiers"} {
		if l, _ := n[k].([]any); len(l) > 0 {
			return nil, notOne
		}
	}
	if n["having"] != nil || n["qualify"] != nil || n["sample"] != nil {
		return nil, notOne
	}
	if g, _ := n["group_sets"].([]any); len(g) > 0 {
		return nil, notOne
	}
	var cols []string
	seen := map[string]bool{}
	if err := walk(n["where_clause"], func(name string) {
		if !seen[name] {
			seen[name] = true
			cols = append(cols, name)
		}
	}); err != nil {
		return nil, err
	}
	if cols == nil {
		cols = []string{}
	}
	return cols, nil
}

var notOne = floe.E(floe.Invalid, "filter", "the row filter must be one SQL boolean expression over the table's columns")

// walk calls col for each column reference under v and refuses subqueries.
func walk(v any, col func(string)) error {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if err := walk(c, col); err != nil {
				return err
			}
		}
	case node:
		if x["class"] == "SUBQUERY" || x["type"] == "SUBQUERY" {
			return floe.E(floe.Invalid, "filter", "the row filter may not hold a subquery")
		}
		if x["class"] == "COLUMN_REF" {
			names, _ := x["column_names"].([]any)
			i := 0
			if len(names) > 1 {
				if q, _ := names[0].(string); strings.EqualFold(q, "t") {
					i = 1
				}
			}
			if i < len(names) {
				if s, _ := names[i].(string); s != "" {
					col(s)
				}
			}
			return nil
		}
		for _, c := range x {
			if err := walk(c, col); err != nil {
				return err
			}
		}
	}
	return nil
}
