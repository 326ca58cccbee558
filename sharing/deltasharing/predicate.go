package deltasharing

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// expr is a predicate: a share's partition filter, a predicateHint or a
// jsonPredicateHints tree, all parsed into one form.
type expr struct {
	op   string // and, or, not, isNull, equal, notEqual, lessThan, lessThanOrEqual, greaterThan, greaterThanOrEqual, in, unknown
	kids []*expr
	col  string // lower-case column of a comparison, isNull or in
	lits []lit  // the literal of a comparison; the list of in
}

// lit is a literal: a string, a number (text in s, value in n) or a
// boolean.
type lit struct {
	kind byte // 's', 'n', 'b'
	s    string
	n    float64
	b    bool
}

// tri is a three-valued truth: of a file, whether all its rows satisfy a
// predicate (yes), none does (no) or it is not known (maybe).
type tri int8

const (
	no    tri = -1
	maybe tri = 0
	yes   tri = 1
)

// predicateError is a parse error of a predicate; bound marks a predicate
// refused for its size or depth (an error even for a best-effort hint).
type predicateError struct {
	msg   string
	bound bool
}

func (e *predicateError) Error() string { return e.msg }

func perr(format string, args ...any) error {
	return &predicateError{msg: fmt.Sprintf(format, args...)}
}

// boundErr is a predicateError for a predicate past a bound.
func boundErr(format string, args ...any) error {
	return &predicateError{msg: fmt.Sprintf(format, args...), bound: true}
}

// isBound reports a predicate refused for its size or depth.
func isBound(err error) bool {
	pe, ok := err.(*predicateError)
	return ok && pe.bound
}

// ---- jsonPredicateHints ----

type jsonNode struct {
	Op        string     `json:"op"`
	Children  []jsonNode `json:"children"`
	Name      string     `json:"name"`
	Value     string     `json:"value"`
	ValueType string     `json:"valueType"`
}

// parseJSONPredicate parses jsonPredicateHints (bounded in size, depth and
// nodes).
func parseJSONPredicate(s string) (*expr, error) {
	if len(s) > MaxPredicateBytes {
		return nil, boundErr("jsonPredicateHints is longer than %d bytes", MaxPredicateBytes)
	}
	// Bound the depth before decoding (encoding/json recurses).
	depth, maxDepth := 0, 0
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && ch == '\\':
			esc = true
		case ch == '"':
			inStr = !inStr
		case !inStr && (ch == '{' || ch == '['):
			depth++
			maxDepth = max(maxDepth, depth)
		case !inStr && (ch == '}' || ch == ']'):
			depth--
		}
	}
	if maxDepth > 2*MaxPredicateDepth+2 {
		return nil, boundErr("jsonPredicateHints is nested deeper than %d", MaxPredicateDepth)
	}
	var n jsonNode
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return nil, perr("jsonPredicateHints is not valid JSON: %v", err)
	}
	count := 0
	return fromJSON(&n, 0, &count)
}

func fromJSON(n *jsonNode, depth int, count *int) (*expr, error) {
	*count++
	if depth > MaxPredicateDepth || *count > MaxPredicateNodes {
		return nil, boundErr("predicate too large (at most %d nodes, %d deep)", MaxPredicateNodes, MaxPredicateDepth)
	}
	switch n.Op {
	case "and", "or":
		if len(n.Children) < 2 {
			return nil, perr("%s needs at least two children", n.Op)
		}
		e := &expr{op: n.Op}
		for i := range n.Children {
			k, err := fromJSON(&n.Children[i], depth+1, count)
			if err != nil {
				return nil, err
			}
			e.kids = append(e.kids, k)
		}
		return e, nil
	case "not":
		if len(n.Children) != 1 {
			return nil, perr("not needs one child")
		}
		k, err := fromJSON(&n.Children[0], depth+1, count)
		if err != nil {
			return nil, err
		}
		return &expr{op: "not", kids: []*expr{k}}, nil
	case "isNull":
		if len(n.Children) != 1 || n.Children[0].Op != "column" || n.Children[0].Name == "" {
			return nil, perr("isNull needs one column child")
		}
		*count++
		return &expr{op: "isNull", col: strings.ToLower(n.Children[0].Name)}, nil
	case "equal", "lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual":
		if len(n.Children) != 2 {
			return nil, perr("%s needs two children", n.Op)
		}
		*count += 2
		a, b := &n.Children[0], &n.Children[1]
		op := n.Op
		if a.Op == "literal" && b.Op == "column" {
			a, b, op = b, a, flip(op)
		}
		if a.Op != "column" || b.Op != "literal" || a.Name == "" {
			if (a.Op == "column" || a.Op == "literal") && (b.Op == "column" || b.Op == "literal") {
				return &expr{op: "unknown"}, nil
			}
			return nil, perr("%s compares a column with a literal", n.Op)
		}
		l, err := jsonLit(b)
		if err != nil {
			return nil, err
		}
		return &expr{op: op, col: strings.ToLower(a.Name), lits: []lit{l}}, nil
	case "column", "literal":
		return nil, perr("a %s is not a predicate", n.Op)
	}
	return nil, perr("unknown op %q", n.Op)
}

func flip(op string) string {
	switch op {
	case "lessThan":
		return "greaterThan"
	case "lessThanOrEqual":
		return "greaterThanOrEqual"
	case "greaterThan":
		return "lessThan"
	case "greaterThanOrEqual":
		return "lessThanOrEqual"
	}
	return op
}

func jsonLit(n *jsonNode) (lit, error) {
	switch n.ValueType {
	case "bool":
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return lit{}, perr("invalid bool %q", n.Value)
		}
		return lit{kind: 'b', b: b}, nil
	case "int", "long", "float", "double":
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(f) {
			return lit{}, perr("invalid %s %q", n.ValueType, n.Value)
		}
		return lit{kind: 'n', n: f, s: n.Value}, nil
	case "string", "date", "timestamp":
		return lit{kind: 's', s: n.Value}, nil
	}
	return lit{}, perr("unknown valueType %q", n.ValueType)
}

// ---- SQL-like predicates: partition filters and predicateHints ----

// ParseFilter checks a partition filter (see docs/sharing.md, "Partition
// filters"): comparisons of a partition column with a literal (=, <>, !=,
// <, <=, >, >=), col [NOT] IN (literals), col IS [NOT] NULL, combined with
// AND, OR, NOT and parentheses. Literals are 'strings' (” escapes a
// quote), numbers, TRUE and FALSE, DATE '...' and TIMESTAMP '...'. Column
// names are identifiers or "quoted"; they name identity partition columns
// or partition fields, compared case-insensitively.
func ParseFilter(s string) error {
	_, err := parseSQL(s)
	return err
}

// FilterColumns parses a partition filter (ParseFilter's grammar) and
// returns the columns it names, lower case, sorted, each once: the
// sharing service checks them against the table's partition columns when
// the filter is added, with the parser that enforces it here.
func FilterColumns(s string) ([]string, error) {
	e, err := parseSQL(s)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var walk func(*expr)
	walk = func(e *expr) {
		if e.col != "" {
			seen[e.col] = true
		}
		for _, k := range e.kids {
			walk(k)
		}
	}
	walk(e)
	return slices.Sorted(maps.Keys(seen)), nil
}

// parseSQL parses the predicate language of ParseFilter.
func parseSQL(s string) (*expr, error) {
	if len(s) > MaxPredicateBytes {
		return nil, boundErr("predicate is longer than %d bytes", MaxPredicateBytes)
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{toks: toks}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, perr("unexpected %q", p.toks[p.i].text)
	}
	return e, nil
}

type token struct {
	kind byte // 'i' identifier, 'q' quoted identifier, 's' string, 'n' number, 'o' operator/punctuation
	text string
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case ch == '\'' || ch == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, perr("unterminated %c", ch)
				}
				if s[j] == ch {
					if j+1 < len(s) && s[j+1] == ch {
						b.WriteByte(ch)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			k := byte('s')
			if ch == '"' {
				k = 'q'
			}
			out = append(out, token{kind: k, text: b.String()})
			i = j + 1
		case ch >= '0' && ch <= '9' || ch == '-' || ch == '+' || ch == '.':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				((s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
				j++
			}
			if _, err := strconv.ParseFloat(s[i:j], 64); err != nil {
				return nil, perr("invalid number %q", s[i:j])
			}
			out = append(out, token{kind: 'n', text: s[i:j]})
			i = j
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{kind: 'i', text: s[i:j]})
			i = j
		default:
			for _, op := range []string{"<=", ">=", "<>", "!=", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{kind: 'o', text: op})
					i += len(op)
					goto next
				}
			}
			return nil, perr("unexpected character %q", ch)
		next:
		}
		if len(out) > MaxPredicateNodes {
			return nil, boundErr("predicate too large (at most %d tokens)", MaxPredicateNodes)
		}
	}
	return out, nil
}

type sqlParser struct {
	toks []token
	i    int
}

func (p *sqlParser) peekKw(kw string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'i' && strings.EqualFold(p.toks[p.i].text, kw)
}

func (p *sqlParser) peekOp(op string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'o' && p.toks[p.i].text == op
}

func (p *sqlParser) or(depth int) (*expr, error) {
	if depth > MaxPredicateDepth {
		return nil, boundErr("predicate nested deeper than %d", MaxPredicateDepth)
	}
	e, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.peekKw("OR") {
		p.i++
		k, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		if e.op == "or" {
			e.kids = append(e.kids, k)
		} else {
			e = &expr{op: "or", kids: []*expr{e, k}}
		}
	}
	return e, nil
}

func (p *sqlParser) and(depth int) (*expr, error) {
	e, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.peekKw("AND") {
		p.i++
		k, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		if e.op == "and" {
			e.kids = append(e.kids, k)
		} else {
			e = &expr{op: "and", kids: []*expr{e, k}}
		}
	}
	return e, nil
}

func (p *sqlParser) unary(depth int) (*expr, error) {
	if depth > MaxPredicateDepth {
		return nil, boundErr("predicate nested deeper than %d", MaxPredicateDepth)
	}
	switch {
	case p.peekKw("NOT"):
		p.i++
		k, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &expr{op: "not", kids: []*expr{k}}, nil
	case p.peekOp("("):
		p.i++
		e, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.peekOp(")") {
			return nil, perr("missing )")
		}
		p.i++
		return e, nil
	}
	return p.predicate()
}

var sqlOps = map[string]string{"=": "equal", "<>": "notEqual", "!=": "notEqual", "<": "lessThan", "<=": "lessThanOrEqual",
	">": "greaterThan", ">=": "greaterThanOrEqual"}

func (p *sqlParser) predicate() (*expr, error) {
	if p.i >= len(p.toks) {
		return nil, perr("unexpected end of predicate")
	}
	t := p.toks[p.i]
	if t.kind != 'i' && t.kind != 'q' || t.kind == 'i' && isKeyword(t.text) {
		return nil, perr("expected a column name, got %q", t.text)
	}
	col := strings.ToLower(t.text)
	p.i++
	switch {
	case p.peekKw("IS"):
		p.i++
		not := false
		if p.peekKw("NOT") {
			p.i++
			not = true
		}
		if !p.peekKw("NULL") {
			return nil, perr("expected NULL after IS")
		}
		p.i++
		e := &expr{op: "isNull", col: col}
		if not {
			e = &expr{op: "not", kids: []*expr{e}}
		}
		return e, nil
	case p.peekKw("IN") || p.peekKw("NOT"):
		not := p.peekKw("NOT")
		if not {
			p.i++
			if !p.peekKw("IN") {
				return nil, perr("expected IN after NOT")
			}
		}
		p.i++
		if !p.peekOp("(") {
			return nil, perr("expected ( after IN")
		}
		p.i++
		e := &expr{op: "in", col: col}
		for {
			l, err := p.literal()
			if err != nil {
				return nil, err
			}
			e.lits = append(e.lits, l)
			if p.peekOp(",") {
				p.i++
				continue
			}
			if p.peekOp(")") {
				p.i++
				break
			}
			return nil, perr("expected , or ) in IN list")
		}
		if not {
			e = &expr{op: "not", kids: []*expr{e}}
		}
		return e, nil
	}
	if p.i >= len(p.toks) || p.toks[p.i].kind != 'o' || sqlOps[p.toks[p.i].text] == "" {
		return nil, perr("expected a comparison after %q", t.text)
	}
	op := sqlOps[p.toks[p.i].text]
	p.i++
	l, err := p.literal()
	if err != nil {
		return nil, err
	}
	return &expr{op: op, col: col, lits: []lit{l}}, nil
}

func isKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "DATE", "TIMESTAMP":
		return true
	}
	return false
}

func (p *sqlParser) literal() (lit, error) {
	if p.i >= len(p.toks) {
		return lit{}, perr("expected a literal")
	}
	t := p.toks[p.i]
	p.i++
	switch t.kind {
	case 's':
		return lit{kind: 's', s: t.text}, nil
	case 'n':
		f, _ := strconv.ParseFloat(t.text, 64)
		if math.IsInf(f, 0) {
			return lit{}, perr("number %s out of range", t.text)
		}
		return lit{kind: 'n', n: f, s: t.text}, nil
	case 'i':
		switch strings.ToUpper(t.text) {
		case "TRUE", "FALSE":
			return lit{kind: 'b', b: strings.EqualFold(t.text, "TRUE")}, nil
		case "DATE", "TIMESTAMP":
			if p.i < len(p.toks) && p.toks[p.i].kind == 's' {
				p.i++
				return lit{kind: 's', s: p.toks[p.i-1].text}, nil
			}
		}
	}
	return lit{}, perr("expected a literal, got %q", t.text)
}

// ---- evaluation ----

// eval decides e for file f: with stats false only partition values count
// (a share's partition filter), with stats true also column bounds (hints).
func eval(e *expr, f *fileEntry, stats bool) tri {
	switch e.op {
	case "and":
		r := yes
		for _, k := range e.kids {
			switch eval(k, f, stats) {
			case no:
				return no
			case maybe:
				r = maybe
			}
		}
		return r
	case "or":
		r := no
		for _, k := range e.kids {
			switch eval(k, f, stats) {
			case yes:
				return yes
			case maybe:
				r = maybe
			}
		}
		return r
	case "not":
		return -eval(e.kids[0], f, stats)
	case "unknown":
		return maybe
	}
	if pv, ok := f.part(e.col); ok {
		return evalValue(e, pv)
	}
	if !stats {
		return maybe
	}
	return evalStats(e, f)
}

// evalValue decides e on a column whose every row has value v.
func evalValue(e *expr, v pval) tri {
	if e.op == "isNull" {
		return truth(v.kind == 0)
	}
	if v.kind == 0 {
		return no // a comparison with null is never true
	}
	if e.op == "in" {
		r := no
		for _, l := range e.lits {
			c, ok := compare(v, l)
			if !ok {
				r = maybe
				continue
			}
			if c == 0 {
				return yes
			}
		}
		return r
	}
	c, ok := compare(v, e.lits[0])
	if !ok {
		return maybe
	}
	switch e.op {
	case "equal":
		return truth(c == 0)
	case "notEqual":
		return truth(c != 0)
	case "lessThan":
		return truth(c < 0)
	case "lessThanOrEqual":
		return truth(c <= 0)
	case "greaterThan":
		return truth(c > 0)
	case "greaterThanOrEqual":
		return truth(c >= 0)
	}
	return maybe
}

// evalStats decides e from a file's column bounds: only no is certain.
func evalStats(e *expr, f *fileEntry) tri {
	lo, hi, nulls := f.bounds(e.col)
	hasNulls := nulls >= 0
	if e.op == "isNull" {
		if hasNulls && nulls == 0 {
			return no
		}
		if hasNulls && nulls == f.records {
			return yes
		}
		return maybe
	}
	if hasNulls && nulls == f.records && f.records > 0 {
		return no // every value is null
	}
	if lo.kind == 'x' || hi.kind == 'x' || len(e.lits) != 1 {
		return maybe
	}
	cl, ok1 := compare(lo, e.lits[0])
	ch, ok2 := compare(hi, e.lits[0])
	if !ok1 || !ok2 {
		return maybe
	}
	switch e.op {
	case "equal":
		if cl > 0 || ch < 0 {
			return no
		}
	case "lessThan":
		if cl >= 0 {
			return no
		}
	case "lessThanOrEqual":
		if cl > 0 {
			return no
		}
	case "greaterThan":
		if ch <= 0 {
			return no
		}
	case "greaterThanOrEqual":
		if ch < 0 {
			return no
		}
	}
	return maybe
}

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// compare compares v with l, converting l to v's kind; ok is false when l
// cannot be converted.
func compare(v pval, l lit) (int, bool) {
	switch v.kind {
	case 'n':
		n := l.n
		if l.kind == 's' {
			f, err := strconv.ParseFloat(strings.TrimSpace(l.s), 64)
			if err != nil {
				return 0, false
			}
			n = f
		} else if l.kind != 'n' {
			return 0, false
		}
		return cmpFloat(v.n, n), true
	case 's':
		if l.kind != 's' {
			return 0, false
		}
		return strings.Compare(v.s, l.s), true
	case 'b':
		b := l.b
		if l.kind == 's' {
			x, err := strconv.ParseBool(l.s)
			if err != nil {
				return 0, false
			}
			b = x
		} else if l.kind != 'b' {
			return 0, false
		}
		return cmpFloat(b2f(v.b), b2f(b)), true
	case 'd':
		if l.kind != 's' {
			return 0, false
		}
		t, err := time.Parse("2006-01-02", strings.TrimSpace(l.s))
		if err != nil {
			return 0, false
		}
		return cmpFloat(v.n, float64(t.Unix()/86400)), true
	case 't':
		if l.kind != 's' {
			return 0, false
		}
		t, err := parseLitTime(l.s)
		if err != nil {
			return 0, false
		}
		return cmpFloat(v.n, float64(t.UnixMicro())), true
	}
	return 0, false
}

func parseLitTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid timestamp %q", s)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
