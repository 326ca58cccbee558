package sharing

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/floe-lake/floe"
)

// Bounds of a partition filter.
const (
	// MaxPartitionFilterLength is the longest partition filter, in bytes.
	MaxPartitionFilterLength = 4096
	// maxFilterDepth bounds the nesting of a partition filter.
	maxFilterDepth = 32
	// maxFilterNodes bounds the nodes of a partition filter.
	maxFilterNodes = 512
)

// PartitionFilter is a parsed partition filter: a boolean predicate on a
// table's partition values, written as the provider wrote it, e.g.
//
//	region = 'EMEA' AND (year >= 2024 OR year IS NULL)
//	country IN ('FR', 'DE') AND NOT tier = 'internal'
//
// Grammar: OR of ANDs of [NOT] terms; a term is a parenthesised filter,
// `col OP literal` (OP one of = != <> < <= > >=), `col IN (lit, ...)`, or
// `col IS [NOT] NULL`. Columns are identifiers ([A-Za-z_][A-Za-z0-9_]*) or
// "double-quoted"; literals are 'single-quoted' strings (” escapes a
// quote), numbers and TRUE/FALSE. Keywords are case-insensitive.
type PartitionFilter struct {
	Root FilterNode
}

// FilterOp is the operator of a FilterNode.
type FilterOp string

// The operators of filter nodes.
const (
	OpAnd    FilterOp = "AND"
	OpOr     FilterOp = "OR"
	OpNot    FilterOp = "NOT"
	OpEq     FilterOp = "="
	OpNe     FilterOp = "<>"
	OpLt     FilterOp = "<"
	OpLe     FilterOp = "<="
	OpGt     FilterOp = ">"
	OpGe     FilterOp = ">="
	OpIn     FilterOp = "IN"
	OpIsNull FilterOp = "IS NULL"
)

// FilterNode is one node of a partition filter: AND/OR/NOT over Children,
// or a comparison of Column with Values (one value for =, <>, <, <=, >,
// >=; one or more for IN; none for IS NULL).
type FilterNode struct {
	Op       FilterOp
	Children []FilterNode
	Column   string
	Values   []Literal
}

// Literal is a literal of a partition filter.
type Literal struct {
	// Kind is "string", "number" or "bool".
	Kind string
	// Text is the literal's value as text (unquoted for a string; "true"
	// or "false" for a bool).
	Text string
}

// ParsePartitionFilter parses a partition filter: Invalid (entity
// "partition filter") when it is malformed or too large.
func ParsePartitionFilter(s string) (*PartitionFilter, error) {
	if len(s) > MaxPartitionFilterLength {
		return nil, floe.E(floe.Invalid, "partition filter", "partition filter is longer than %d bytes", MaxPartitionFilterLength)
	}
	if !utf8.ValidString(s) {
		return nil, floe.E(floe.Invalid, "partition filter", "partition filter is not valid UTF-8")
	}
	toks, err := lexFilter(s)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	n, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, p.fail("unexpected %q", p.toks[p.pos].text)
	}
	return &PartitionFilter{Root: n}, nil
}

// Columns returns the columns the filter names, sorted, each once.
func (f *PartitionFilter) Columns() []string {
	var out []string
	var walk func(n *FilterNode)
	walk = func(n *FilterNode) {
		if n.Column != "" {
			out = append(out, n.Column)
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&f.Root)
	slices.Sort(out)
	return slices.Compact(out)
}

// String renders the filter canonically (keywords upper-case, every
// AND/OR/NOT parenthesised); parsing it again gives the same filter.
func (f *PartitionFilter) String() string {
	var b strings.Builder
	f.Root.write(&b)
	return b.String()
}

func (n *FilterNode) write(b *strings.Builder) {
	switch n.Op {
	case OpAnd, OpOr:
		b.WriteByte('(')
		for i := range n.Children {
			if i > 0 {
				b.WriteString(" " + string(n.Op) + " ")
			}
			n.Children[i].write(b)
		}
		b.WriteByte(')')
	case OpNot:
		b.WriteString("(NOT ")
		n.Children[0].write(b)
		b.WriteByte(')')
	case OpIsNull:
		b.WriteString(quoteIdent(n.Column) + " IS NULL")
	case OpIn:
		b.WriteString(quoteIdent(n.Column) + " IN (")
		for i, v := range n.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.String())
		}
		b.WriteByte(')')
	default:
		b.WriteString(quoteIdent(n.Column) + " " + string(n.Op) + " " + n.Values[0].String())
	}
}

// String renders the literal as it is written in a filter.
func (l Literal) String() string {
	if l.Kind == "string" {
		return "'" + strings.ReplaceAll(l.Text, "'", "''") + "'"
	}
	return l.Text
}

func quoteIdent(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') || isKeyword(s) {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
	}
	return s
}

func isKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE":
		return true
	}
	return false
}

// Eval reports whether a partition with the given values (Hive-style text,
// as Delta Sharing's partitionValues; a missing or nil value is NULL)
// satisfies the filter. Two values compare as numbers when both parse as
// numbers, else as text; any comparison with NULL is false (SQL's
// three-valued logic, with unknown treated as false at the top).
func (f *PartitionFilter) Eval(values map[string]*string) bool {
	return f.Root.eval(values) == triTrue
}

type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func (n *FilterNode) eval(values map[string]*string) tri {
	switch n.Op {
	case OpAnd:
		out := triTrue
		for i := range n.Children {
			switch n.Children[i].eval(values) {
			case triFalse:
				return triFalse
			case triUnknown:
				out = triUnknown
			}
		}
		return out
	case OpOr:
		out := triFalse
		for i := range n.Children {
			switch n.Children[i].eval(values) {
			case triTrue:
				return triTrue
			case triUnknown:
				out = triUnknown
			}
		}
		return out
	case OpNot:
		switch n.Children[0].eval(values) {
		case triTrue:
			return triFalse
		case triFalse:
			return triTrue
		}
		return triUnknown
	}
	v := values[n.Column]
	if n.Op == OpIsNull {
		if v == nil {
			return triTrue
		}
		return triFalse
	}
	if v == nil {
		return triUnknown
	}
	if n.Op == OpIn {
		for _, l := range n.Values {
			if compareValue(*v, l) == 0 {
				return triTrue
			}
		}
		return triFalse
	}
	c := compareValue(*v, n.Values[0])
	ok := false
	switch n.Op {
	case OpEq:
		ok = c == 0
	case OpNe:
		ok = c != 0
	case OpLt:
		ok = c < 0
	case OpLe:
		ok = c <= 0
	case OpGt:
		ok = c > 0
	case OpGe:
		ok = c >= 0
	}
	if ok {
		return triTrue
	}
	return triFalse
}

// compareValue compares a partition value with a literal.
func compareValue(v string, l Literal) int {
	if l.Kind == "bool" {
		return cmp.Compare(strings.ToLower(v), l.Text)
	}
	if a, err := strconv.ParseFloat(v, 64); err == nil {
		if b, err := strconv.ParseFloat(l.Text, 64); err == nil {
			return cmp.Compare(a, b)
		}
	}
	return strings.Compare(v, l.Text)
}

// token kinds of the filter lexer.
const (
	tokIdent  = iota // identifier or keyword
	tokQIdent        // "quoted identifier"
	tokString        // 'string'
	tokNumber
	tokOp // = != <> < <= > >=
	tokLParen
	tokRParen
	tokComma
)

type filterToken struct {
	kind int
	text string
	pos  int
}

func lexFilter(s string) ([]filterToken, error) {
	var out []filterToken
	fail := func(pos int, format string, args ...any) error {
		return floe.E(floe.Invalid, "partition filter", "partition filter: at byte %d: %s", pos, fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			out = append(out, filterToken{tokLParen, "(", i})
			i++
		case c == ')':
			out = append(out, filterToken{tokRParen, ")", i})
			i++
		case c == ',':
			out = append(out, filterToken{tokComma, ",", i})
			i++
		case c == '=' || c == '<' || c == '>' || c == '!':
			j := i + 1
			if j < len(s) && (s[j] == '=' || c == '<' && s[j] == '>') {
				j++
			}
			op := s[i:j]
			switch op {
			case "=", "<>", "!=", "<", "<=", ">", ">=":
			default:
				return nil, fail(i, "unknown operator %q", op)
			}
			if op == "!=" {
				op = "<>"
			}
			out = append(out, filterToken{tokOp, op, i})
			i = j
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return nil, fail(i, "unterminated quote")
			}
			kind := tokString
			if c == '"' {
				kind = tokQIdent
				if b.Len() == 0 {
					return nil, fail(i, "empty quoted column name")
				}
			}
			out = append(out, filterToken{kind, b.String(), i})
			i = j
		case c == '-' || c == '+' || c >= '0' && c <= '9' || c == '.':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			if _, err := strconv.ParseFloat(s[i:j], 64); err != nil {
				return nil, fail(i, "bad number %q", s[i:j])
			}
			out = append(out, filterToken{tokNumber, s[i:j], i})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, filterToken{tokIdent, s[i:j], i})
			i = j
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return nil, fail(i, "unexpected character %q", r)
		}
		if len(out) > 4*maxFilterNodes {
			return nil, fail(i, "too many tokens")
		}
	}
	if len(out) == 0 {
		return nil, floe.E(floe.Invalid, "partition filter", "partition filter is empty")
	}
	return out, nil
}

type filterParser struct {
	toks  []filterToken
	pos   int
	nodes int
}

func (p *filterParser) fail(format string, args ...any) error {
	at := "the end"
	if p.pos < len(p.toks) {
		at = "byte " + strconv.Itoa(p.toks[p.pos].pos)
	}
	return floe.E(floe.Invalid, "partition filter", "partition filter: at %s: %s", at, fmt.Sprintf(format, args...))
}

// keyword reports whether the next token is the keyword kw, and consumes it.
func (p *filterParser) keyword(kw string) bool {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == tokIdent && strings.EqualFold(p.toks[p.pos].text, kw) {
		p.pos++
		return true
	}
	return false
}

func (p *filterParser) node() error {
	p.nodes++
	if p.nodes > maxFilterNodes {
		return p.fail("more than %d terms", maxFilterNodes)
	}
	return nil
}

func (p *filterParser) or(depth int) (FilterNode, error) {
	return p.chain(depth, OpOr, "OR", p.and)
}

func (p *filterParser) and(depth int) (FilterNode, error) {
	return p.chain(depth, OpAnd, "AND", p.not)
}

func (p *filterParser) chain(depth int, op FilterOp, kw string, next func(int) (FilterNode, error)) (FilterNode, error) {
	first, err := next(depth)
	if err != nil {
		return FilterNode{}, err
	}
	kids := []FilterNode{first}
	for p.keyword(kw) {
		n, err := next(depth)
		if err != nil {
			return FilterNode{}, err
		}
		kids = append(kids, n)
	}
	if len(kids) == 1 {
		return first, nil
	}
	if err := p.node(); err != nil {
		return FilterNode{}, err
	}
	return FilterNode{Op: op, Children: kids}, nil
}

func (p *filterParser) not(depth int) (FilterNode, error) {
	if depth > maxFilterDepth {
		return FilterNode{}, p.fail("nested deeper than %d", maxFilterDepth)
	}
	if p.keyword("NOT") {
		n, err := p.not(depth + 1)
		if err != nil {
			return FilterNode{}, err
		}
		if err := p.node(); err != nil {
			return FilterNode{}, err
		}
		return FilterNode{Op: OpNot, Children: []FilterNode{n}}, nil
	}
	return p.term(depth)
}

func (p *filterParser) term(depth int) (FilterNode, error) {
	if p.pos >= len(p.toks) {
		return FilterNode{}, p.fail("expected a term")
	}
	t := p.toks[p.pos]
	if t.kind == tokLParen {
		p.pos++
		n, err := p.or(depth + 1)
		if err != nil {
			return FilterNode{}, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokRParen {
			return FilterNode{}, p.fail("expected ')'")
		}
		p.pos++
		return n, nil
	}
	if t.kind != tokQIdent && (t.kind != tokIdent || isKeyword(t.text)) {
		return FilterNode{}, p.fail("expected a partition column, not %q", t.text)
	}
	p.pos++
	if err := p.node(); err != nil {
		return FilterNode{}, err
	}
	col := t.text
	switch {
	case p.keyword("IS"):
		negate := p.keyword("NOT")
		if !p.keyword("NULL") {
			return FilterNode{}, p.fail("expected NULL after IS")
		}
		n := FilterNode{Op: OpIsNull, Column: col}
		if negate {
			return FilterNode{Op: OpNot, Children: []FilterNode{n}}, nil
		}
		return n, nil
	case p.keyword("IN"):
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokLParen {
			return FilterNode{}, p.fail("expected '(' after IN")
		}
		p.pos++
		var vals []Literal
		for {
			l, err := p.literal()
			if err != nil {
				return FilterNode{}, err
			}
			vals = append(vals, l)
			if err := p.node(); err != nil {
				return FilterNode{}, err
			}
			if p.pos < len(p.toks) && p.toks[p.pos].kind == tokComma {
				p.pos++
				continue
			}
			break
		}
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokRParen {
			return FilterNode{}, p.fail("expected ')' after the IN list")
		}
		p.pos++
		return FilterNode{Op: OpIn, Column: col, Values: vals}, nil
	}
	if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokOp {
		return FilterNode{}, p.fail("expected a comparison (=, <>, <, <=, >, >=), IN or IS after %q", col)
	}
	op := FilterOp(p.toks[p.pos].text)
	p.pos++
	l, err := p.literal()
	if err != nil {
		return FilterNode{}, err
	}
	return FilterNode{Op: op, Column: col, Values: []Literal{l}}, nil
}

func (p *filterParser) literal() (Literal, error) {
	if p.pos >= len(p.toks) {
		return Literal{}, p.fail("expected a literal")
	}
	t := p.toks[p.pos]
	switch {
	case t.kind == tokString:
		p.pos++
		return Literal{Kind: "string", Text: t.text}, nil
	case t.kind == tokNumber:
		p.pos++
		return Literal{Kind: "number", Text: t.text}, nil
	case t.kind == tokIdent && (strings.EqualFold(t.text, "TRUE") || strings.EqualFold(t.text, "FALSE")):
		p.pos++
		return Literal{Kind: "bool", Text: strings.ToLower(t.text)}, nil
	}
	return Literal{}, p.fail("expected a literal ('text', a number, TRUE or FALSE), not %q", t.text)
}
