package engine

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// File pruning: the WHERE conjuncts of a SELECT that compare one column of
// one of its tables with constants become an Iceberg row filter, with which
// iceberg-go's planner skips the data files whose partition values or
// column statistics (manifest lower/upper bounds, null counts) rule every
// row out. Only conjuncts are used (dropping one only keeps more files),
// only over FROM clauses of base tables and inner joins (an outer join's
// NULL-extended rows could satisfy a predicate its pruned files did not),
// and only constants whose meaning in DuckDB and in Iceberg agree exactly.

// pruneTerm is a WHERE conjunct about one column: column op constants.
type pruneTerm struct {
	col  string // as written
	op   iceberg.Operation
	vals []constant // one for comparisons, several for IN, none for IS [NOT] NULL
}

// constant is a literal of the syntax tree, possibly cast to a type.
type constant struct {
	kind, text, cast string
}

// attachPruning gives every table reference of refs the conjuncts of the
// WHERE clause of the SELECT whose FROM it is in that concern it alone.
func attachPruning(stmt any, refs []*tableRef) {
	byNode := make(map[uintptr]*tableRef, len(refs))
	for _, r := range refs {
		byNode[reflect.ValueOf(r.n).Pointer()] = r
	}
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case node:
			if x["type"] == "SELECT_NODE" {
				collectTerms(x, byNode)
			}
			for _, c := range x {
				visit(c)
			}
		case []any:
			for _, c := range x {
				visit(c)
			}
		}
	}
	visit(stmt)
}

// collectTerms assigns the WHERE conjuncts of one SELECT node.
func collectTerms(sel node, byNode map[uintptr]*tableRef) {
	where, _ := sel["where_clause"].(node)
	from, _ := sel["from_table"].(node)
	if where == nil || from == nil {
		return
	}
	bases, ok := innerBases(from)
	if !ok || len(bases) == 0 {
		return
	}
	alias := make(map[string]node, len(bases))
	for _, b := range bases {
		name, _ := b["alias"].(string)
		if name == "" {
			name, _ = b["table_name"].(string)
		}
		alias[strings.ToLower(name)] = b
	}
	for _, c := range conjuncts(where) {
		qual, terms := termsOf(c)
		if len(terms) == 0 {
			continue
		}
		var b node
		switch {
		case qual == "" && len(bases) == 1:
			b = bases[0]
		case qual != "":
			b = alias[qual]
		}
		if b == nil {
			continue
		}
		if r := byNode[reflect.ValueOf(b).Pointer()]; r != nil {
			r.prune = append(r.prune, terms...)
		}
	}
}

// innerBases lists the base tables of a FROM tree made of base tables and
// inner (or cross) joins; false for any other shape.
func innerBases(n node) ([]node, bool) {
	switch n["type"] {
	case "BASE_TABLE":
		return []node{n}, true
	case "JOIN":
		if n["join_type"] != "INNER" || (n["ref_type"] != "REGULAR" && n["ref_type"] != "CROSS") {
			return nil, false
		}
		l, _ := n["left"].(node)
		r, _ := n["right"].(node)
		if l == nil || r == nil {
			return nil, false
		}
		lb, ok := innerBases(l)
		if !ok {
			return nil, false
		}
		rb, ok := innerBases(r)
		return append(lb, rb...), ok
	}
	return nil, false
}

// conjuncts flattens AND.
func conjuncts(e node) []node {
	if e["class"] == "CONJUNCTION" && e["type"] == "CONJUNCTION_AND" {
		var out []node
		for _, c := range asNodes(e["children"]) {
			out = append(out, conjuncts(c)...)
		}
		return out
	}
	return []node{e}
}

func asNodes(v any) []node {
	list, _ := v.([]any)
	out := make([]node, 0, len(list))
	for _, x := range list {
		if n, ok := x.(node); ok {
			out = append(out, n)
		}
	}
	return out
}

// comparisons maps DuckDB comparison types to Iceberg operations, and to
// the operation with the operands swapped.
var comparisons = map[string][2]iceberg.Operation{
	"COMPARE_EQUAL":                {iceberg.OpEQ, iceberg.OpEQ},
	"COMPARE_LESSTHAN":             {iceberg.OpLT, iceberg.OpGT},
	"COMPARE_LESSTHANOREQUALTO":    {iceberg.OpLTEQ, iceberg.OpGTEQ},
	"COMPARE_GREATERTHAN":          {iceberg.OpGT, iceberg.OpLT},
	"COMPARE_GREATERTHANOREQUALTO": {iceberg.OpGTEQ, iceberg.OpLTEQ},
}

// termsOf reads one conjunct: the qualifier of its column (lower case, ""
// when unqualified) and its terms; none when it is not of a usable form.
func termsOf(e node) (string, []pruneTerm) {
	switch e["class"] {
	case "COMPARISON":
		ops, ok := comparisons[fmt.Sprint(e["type"])]
		if !ok {
			return "", nil
		}
		l, _ := e["left"].(node)
		r, _ := e["right"].(node)
		if q, col, ok := columnOf(l); ok {
			if c, ok := constantOf(r); ok {
				return q, []pruneTerm{{col: col, op: ops[0], vals: []constant{c}}}
			}
		}
		if q, col, ok := columnOf(r); ok {
			if c, ok := constantOf(l); ok {
				return q, []pruneTerm{{col: col, op: ops[1], vals: []constant{c}}}
			}
		}
	case "BETWEEN":
		in, _ := e["input"].(node)
		lo, lok := constantOf(asNode(e["lower"]))
		hi, hok := constantOf(asNode(e["upper"]))
		if q, col, ok := columnOf(in); ok && lok && hok {
			return q, []pruneTerm{{col: col, op: iceberg.OpGTEQ, vals: []constant{lo}}, {col: col, op: iceberg.OpLTEQ, vals: []constant{hi}}}
		}
	case "OPERATOR":
		ch := asNodes(e["children"])
		if len(ch) == 0 {
			return "", nil
		}
		q, col, ok := columnOf(ch[0])
		if !ok {
			return "", nil
		}
		switch e["type"] {
		case "OPERATOR_IS_NULL":
			return q, []pruneTerm{{col: col, op: iceberg.OpIsNull}}
		case "OPERATOR_IS_NOT_NULL":
			return q, []pruneTerm{{col: col, op: iceberg.OpNotNull}}
		case "COMPARE_IN":
			var vals []constant
			for _, x := range ch[1:] {
				c, ok := constantOf(x)
				if !ok {
					return "", nil
				}
				vals = append(vals, c)
			}
			if len(vals) > 0 {
				return q, []pruneTerm{{col: col, op: iceberg.OpIn, vals: vals}}
			}
		}
	}
	return "", nil
}

func asNode(v any) node { n, _ := v.(node); return n }

// columnOf reads a column reference: column or qualifier.column.
func columnOf(e node) (qual, col string, ok bool) {
	if e == nil || e["class"] != "COLUMN_REF" {
		return "", "", false
	}
	names, _ := e["column_names"].([]any)
	switch len(names) {
	case 1:
		col, ok = names[0].(string)
		return "", col, ok
	case 2:
		q, ok1 := names[0].(string)
		col, ok2 := names[1].(string)
		return strings.ToLower(q), col, ok1 && ok2
	}
	return "", "", false
}

// constantOf reads a literal, or a literal cast to DATE.
func constantOf(e node) (constant, bool) {
	cast := ""
	if e != nil && e["class"] == "CAST" {
		if e["try_cast"] == true {
			return constant{}, false
		}
		te, _ := e["type_expr"].(node)
		cast, _ = te["type_name"].(string)
		if !strings.EqualFold(cast, "DATE") {
			return constant{}, false
		}
		e, _ = e["child"].(node)
	}
	if e == nil || e["class"] != "CONSTANT" {
		return constant{}, false
	}
	lit, _ := e["literal"].(node)
	kind, _ := lit["kind"].(string)
	text, ok := lit["text"].(string)
	if !ok || kind == "" {
		return constant{}, false
	}
	return constant{kind: kind, text: text, cast: strings.ToUpper(cast)}, true
}

// rowFilter turns the terms into an Iceberg expression over schema's
// columns, leaving out terms whose column is missing (a correlated outer
// column) or whose constants do not convert exactly; nil when none is left.
func rowFilter(schema *iceberg.Schema, terms []pruneTerm) iceberg.BooleanExpression {
	var exprs []iceberg.BooleanExpression
	for _, t := range terms {
		f, ok := schema.FindFieldByNameCaseInsensitive(t.col)
		if !ok {
			continue
		}
		ref := iceberg.Reference(f.Name)
		switch t.op {
		case iceberg.OpIsNull, iceberg.OpNotNull:
			exprs = append(exprs, iceberg.UnaryPredicate(t.op, ref))
			continue
		}
		lits := make([]iceberg.Literal, 0, len(t.vals))
		for _, c := range t.vals {
			l, ok := literalFor(f.Type, c)
			if !ok {
				break
			}
			lits = append(lits, l)
		}
		if len(lits) != len(t.vals) {
			continue
		}
		if t.op == iceberg.OpIn {
			exprs = append(exprs, iceberg.SetPredicate(iceberg.OpIn, ref, lits))
		} else {
			exprs = append(exprs, iceberg.LiteralPredicate(t.op, ref, lits[0]))
		}
	}
	switch len(exprs) {
	case 0:
		return nil
	case 1:
		return exprs[0]
	}
	return iceberg.NewAnd(exprs[0], exprs[1], exprs[2:]...)
}

// literalFor converts a constant to an Iceberg literal of column type typ
// when DuckDB compares the two exactly as Iceberg's bounds do: integers
// with integer columns, numbers with double and (no extra digits) decimal
// columns, strings with string columns, dates with date columns.
func literalFor(typ iceberg.Type, c constant) (iceberg.Literal, bool) {
	if c.cast != "" {
		if _, ok := typ.(iceberg.DateType); !ok || c.kind != "STRING" {
			return nil, false
		}
	}
	switch t := typ.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		if c.kind != "INTEGER" {
			return nil, false
		}
		n, err := strconv.ParseInt(c.text, 10, 64)
		if err != nil {
			return nil, false
		}
		if _, ok := typ.(iceberg.Int32Type); ok && (n < -1<<31 || n > 1<<31-1) {
			return nil, false
		}
		return iceberg.NewLiteral(n), true
	case iceberg.Float64Type:
		if c.kind != "INTEGER" && c.kind != "NUMERIC" {
			return nil, false
		}
		f, err := strconv.ParseFloat(c.text, 64)
		if err != nil {
			return nil, false
		}
		return iceberg.NewLiteral(f), true
	case iceberg.DecimalType:
		if c.kind != "INTEGER" && c.kind != "NUMERIC" {
			return nil, false
		}
		if _, frac, ok := strings.Cut(c.text, "."); ok && len(frac) > t.Scale() {
			return nil, false
		}
		v, err := decimal128.FromString(c.text, int32(t.Precision()), int32(t.Scale()))
		if err != nil {
			return nil, false
		}
		return iceberg.NewLiteral(iceberg.Decimal{Val: v, Scale: t.Scale()}), true
	case iceberg.StringType:
		if c.kind != "STRING" || c.cast != "" {
			return nil, false
		}
		return iceberg.NewLiteral(c.text), true
	case iceberg.DateType:
		if c.kind != "STRING" {
			return nil, false
		}
		d, err := time.Parse("2006-01-02", c.text)
		if err != nil {
			return nil, false
		}
		return iceberg.NewLiteral(iceberg.Date(d.Unix() / 86400)), true
	}
	return nil, false
}
