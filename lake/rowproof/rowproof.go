// Package rowproof decides a row filter on whole Iceberg files: whether
// every row of a data file passes it, no row does, or the file's metadata
// cannot tell. Server-side scan planning uses it to hand a principal whose
// SELECT carries a row filter exactly the files whose rows all pass.
//
// A row filter is SQL, enforced by the SQL endpoint (DuckDB). Only a
// subset is compiled here, chosen so that its meaning on a file's
// metadata is DuckDB's meaning on the file's rows; anything else fails to
// compile, and the caller refuses the plan. The subset:
//
//   - comparisons of a column with a literal: = <> != < <= > >=, and
//     column [NOT] BETWEEN literal AND literal;
//   - column [NOT] IN (literal, ...), column IS [NOT] NULL;
//   - AND, OR, NOT, parentheses, TRUE and FALSE.
//
// Columns are of type string (with 'string' literals), int or long (with
// integer literals), date (with DATE 'yyyy-mm-dd' or 'yyyy-mm-dd') or
// boolean (with TRUE or FALSE); comparisons are byte-wise for strings, as
// both Iceberg's bounds and DuckDB's default collation order them.
//
// What a file's metadata proves about a column: an identity partition
// field of the file's spec fixes its value in every row (null included); a
// day, month or year partition of a date column, or a truncate partition of
// an int or long column, bounds it to the partition value's interval; its
// statistics bound it too: lower and upper bounds (valid bounds, perhaps
// truncated, never tighter than the values) and the null count.
// A predicate is evaluated in SQL's three-valued logic as the set of truth
// values its rows may take; a row passes only when the filter is TRUE, so
// a file passes whole only when TRUE is the only possible value.
package rowproof

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
)

// Verdict is what a file's metadata proves about its rows.
type Verdict int8

// Verdicts.
const (
	// Unknown: some rows may pass and some may not.
	Unknown Verdict = 0
	// All: every row passes.
	All Verdict = 1
	// None: no row passes.
	None Verdict = -1
)

// Column is what a column reference of a filter resolves to.
type Column struct {
	ID   int
	Type iceberg.Type
}

// MaxFilterBytes bounds a compiled filter's text (the sum of its parts).
const MaxFilterBytes = 64 << 10

// Filter is a compiled row filter: the OR of its parts.
type Filter struct {
	root *node
}

// Compile compiles the OR of filters (each one SQL boolean expression of
// the package's subset); resolve maps a column reference (an identifier,
// unquoted) to its column. Errors are floe.Unsupported (entity "filter")
// and say what is outside the subset.
func Compile(filters []string, resolve func(ref string) (Column, bool)) (*Filter, error) {
	if len(filters) == 0 {
		return nil, unsupported("no row filter")
	}
	n := 0
	var root *node
	for _, f := range filters {
		if n += len(f); n > MaxFilterBytes {
			return nil, unsupported("row filters longer than %d bytes", MaxFilterBytes)
		}
		toks, err := lex(f)
		if err != nil {
			return nil, err
		}
		p := &parser{toks: toks, resolve: resolve}
		e, err := p.or(0)
		if err != nil {
			return nil, err
		}
		if p.i < len(p.toks) {
			return nil, unsupported("unexpected %q", p.toks[p.i].text)
		}
		if root == nil {
			root = e
		} else {
			root = &node{op: opOr, kids: []*node{root, e}}
		}
	}
	return &Filter{root: root}, nil
}

// Or is the filter that admits a row when any of fs does (a principal's
// grants each with its own filter); nil if fs is empty.
func Or(fs ...*Filter) *Filter {
	var root *node
	for _, f := range fs {
		if root == nil {
			root = f.root
		} else {
			root = &node{op: opOr, kids: []*node{root, f.root}}
		}
	}
	if root == nil {
		return nil
	}
	return &Filter{root: root}
}

// String is the filter in a canonical form with columns as field ids
// (#2): two filters of the same meaning on a table may differ, but equal
// strings mean the same filter.
func (f *Filter) String() string {
	var b strings.Builder
	f.root.write(&b)
	return b.String()
}

// Decide returns what df's metadata proves about its rows (df a data file
// written under spec).
func (f *Filter) Decide(df iceberg.DataFile, spec *iceberg.PartitionSpec) Verdict {
	if df.Count() == 0 {
		return All // no row to fail
	}
	k := &knowledge{df: df, spec: spec, cache: map[int]facts{}}
	m := f.root.eval(k)
	switch {
	case m == maskT:
		return All
	case m&maskT == 0:
		return None
	}
	return Unknown
}

func unsupported(format string, args ...any) error {
	return floe.E(floe.Unsupported, "filter", "the row filter cannot be decided per file: "+format, args...)
}

// ---- values ----

// kind is a column's comparison domain.
type kind byte

const (
	kString kind = 's'
	kInt    kind = 'i' // int, long: int64
	kDate   kind = 'd' // days since the epoch
	kBool   kind = 'b'
)

func kindOf(t iceberg.Type) (kind, bool) {
	switch t.(type) {
	case iceberg.StringType:
		return kString, true
	case iceberg.Int32Type, iceberg.Int64Type:
		return kInt, true
	case iceberg.DateType:
		return kDate, true
	case iceberg.BooleanType:
		return kBool, true
	}
	return 0, false
}

// value is a non-null value of a kind: s for strings, n otherwise.
type value struct {
	s string
	n int64
}

func compare(k kind, a, b value) int {
	if k == kString {
		return strings.Compare(a.s, b.s)
	}
	switch {
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}

func (v value) write(b *strings.Builder, k kind) {
	switch k {
	case kString:
		b.WriteString(strconv.Quote(v.s))
	case kDate:
		b.WriteString("date:" + strconv.FormatInt(v.n, 10))
	default:
		b.WriteString(strconv.FormatInt(v.n, 10))
	}
}

// ---- what a file's metadata says about a column ----

type nulls byte

const (
	maybeNull nulls = iota
	noNull
	allNull
)

type facts struct {
	nulls  nulls
	ranged bool // lo and hi bound every non-null value
	lo, hi value
}

type knowledge struct {
	df    iceberg.DataFile
	spec  *iceberg.PartitionSpec
	cache map[int]facts
}

func (k *knowledge) facts(c *colRef) facts {
	if f, ok := k.cache[c.id]; ok {
		return f
	}
	f := k.derive(c)
	k.cache[c.id] = f
	return f
}

func (k *knowledge) derive(c *colRef) facts {
	f := facts{nulls: maybeNull}
	if k.spec != nil {
		part := k.df.Partition()
		for _, pf := range k.spec.Fields() {
			if pf.SourceID() != c.id {
				continue
			}
			v, has := part[pf.FieldID]
			if !has {
				continue
			}
			lo, hi, ok := preimage(pf.Transform, c.kind, v)
			if !ok {
				continue
			}
			if v == nil {
				return facts{nulls: allNull} // transforms keep nulls: every row is null
			}
			f = narrow(c.kind, f, lo, hi)
			f.nulls = noNull
		}
	}
	if f.ranged && f.nulls == noNull && compare(c.kind, f.lo, f.hi) == 0 {
		return f // exact: statistics cannot tell more
	}
	if n, ok := k.df.NullValueCounts()[c.id]; ok {
		switch {
		case n == 0:
			f.nulls = noNull
		case n >= k.df.Count():
			return facts{nulls: allNull}
		}
	}
	lo, okLo := k.df.LowerBoundValues()[c.id]
	hi, okHi := k.df.UpperBoundValues()[c.id]
	if okLo && okHi {
		l, ok1 := boundValue(c.kind, lo)
		h, ok2 := boundValue(c.kind, hi)
		if ok1 && ok2 && compare(c.kind, l, h) <= 0 {
			f = narrow(c.kind, f, l, h)
		}
	}
	return f
}

// narrow intersects f's range with [lo, hi] (both bound the same values).
func narrow(k kind, f facts, lo, hi value) facts {
	if !f.ranged {
		f.ranged, f.lo, f.hi = true, lo, hi
		return f
	}
	if compare(k, lo, f.lo) > 0 {
		f.lo = lo
	}
	if compare(k, hi, f.hi) < 0 {
		f.hi = hi
	}
	return f
}

// preimage returns the range of source values a partition value v of
// transform t stands for (any v, nil included, when ok): identity gives the
// value itself; day, month and year of a date and truncate of an int or
// long give an interval. Other transforms (bucket, truncate of a string,
// void, hours) tell nothing here.
func preimage(t iceberg.Transform, k kind, v any) (lo, hi value, ok bool) {
	if v == nil {
		// These transforms map null to null and nothing else to null.
		switch t.(type) {
		case iceberg.IdentityTransform, iceberg.DayTransform, iceberg.MonthTransform, iceberg.YearTransform,
			iceberg.HourTransform, iceberg.TruncateTransform, iceberg.BucketTransform:
			return value{}, value{}, true
		}
		return value{}, value{}, false
	}
	switch tr := t.(type) {
	case iceberg.IdentityTransform:
		x, ok := partValue(k, v)
		return x, x, ok
	case iceberg.DayTransform:
		if k != kDate {
			return value{}, value{}, false
		}
		n, ok := partInt(v)
		return value{n: n}, value{n: n}, ok
	case iceberg.MonthTransform, iceberg.YearTransform:
		n, ok := partInt(v)
		if k != kDate || !ok {
			return value{}, value{}, false
		}
		var from, to time.Time
		if _, month := tr.(iceberg.MonthTransform); month {
			from = time.Date(1970, time.Month(1+n), 1, 0, 0, 0, 0, time.UTC) // Date normalizes months beyond 12 and below 1
			to = from.AddDate(0, 1, 0)
		} else {
			from = time.Date(1970+int(n), 1, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(1, 0, 0)
		}
		return value{n: from.Unix() / 86400}, value{n: to.Unix()/86400 - 1}, true
	case iceberg.TruncateTransform:
		n, ok := partInt(v)
		if k != kInt || !ok || tr.Width <= 0 {
			return value{}, value{}, false
		}
		return value{n: n}, value{n: n + int64(tr.Width) - 1}, true
	}
	return value{}, value{}, false
}

// partInt reads an integer partition value (int32, int64 or a date).
func partInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case iceberg.Date:
		return int64(x), true
	}
	return 0, false
}

// partValue converts an identity partition value.
func partValue(k kind, v any) (value, bool) {
	switch k {
	case kString:
		s, ok := v.(string)
		return value{s: s}, ok
	case kInt:
		switch x := v.(type) {
		case int32:
			return value{n: int64(x)}, true
		case int64:
			return value{n: x}, true
		}
	case kDate:
		if x, ok := v.(iceberg.Date); ok {
			return value{n: int64(x)}, true
		}
	case kBool:
		if x, ok := v.(bool); ok {
			return boolValue(x), true
		}
	}
	return value{}, false
}

// boundValue decodes a bound (Iceberg's single-value serialization).
func boundValue(k kind, b []byte) (value, bool) {
	switch k {
	case kString:
		return value{s: string(b)}, true
	case kInt, kDate:
		switch len(b) {
		case 4:
			return value{n: int64(int32(binary.LittleEndian.Uint32(b)))}, true
		case 8:
			return value{n: int64(binary.LittleEndian.Uint64(b))}, true
		}
	case kBool:
		if len(b) == 1 && b[0] <= 1 {
			return boolValue(b[0] == 1), true
		}
	}
	return value{}, false
}

func boolValue(b bool) value {
	if b {
		return value{n: 1}
	}
	return value{n: 0}
}

// ---- three-valued evaluation over a file's possible rows ----

// mask is the set of truth values a predicate may take on the file's
// rows.
type mask byte

const (
	maskT mask = 1 << iota
	maskF
	maskN
)

type op byte

const (
	opOr op = iota
	opAnd
	opNot
	opConst // val
	opCmp   // col cmp lits[0]
	opIn    // col IN lits
	opIsNull
)

type colRef struct {
	id   int
	kind kind
}

type node struct {
	op   op
	kids []*node
	val  bool   // opConst
	cmp  string // opCmp: = <> < <= > >=
	col  *colRef
	lits []value
}

func (n *node) eval(k *knowledge) mask {
	switch n.op {
	case opConst:
		if n.val {
			return maskT
		}
		return maskF
	case opNot:
		m := n.kids[0].eval(k)
		out := m & maskN
		if m&maskT != 0 {
			out |= maskF
		}
		if m&maskF != 0 {
			out |= maskT
		}
		return out
	case opAnd, opOr:
		acc := n.kids[0].eval(k)
		for _, c := range n.kids[1:] {
			acc = combine(n.op, acc, c.eval(k))
		}
		return acc
	case opIsNull:
		f := k.facts(n.col)
		switch f.nulls {
		case allNull:
			return maskT
		case noNull:
			return maskF
		}
		return maskT | maskF
	}
	f := k.facts(n.col)
	if f.nulls == allNull {
		return maskN
	}
	var m mask
	if f.nulls == maybeNull {
		m = maskN
	}
	if !f.ranged {
		return m | maskT | maskF
	}
	t, fl := n.possible(f)
	if t {
		m |= maskT
	}
	if fl {
		m |= maskF
	}
	return m
}

// possible says whether the comparison may be true, and may be false, for
// a non-null value in [f.lo, f.hi].
func (n *node) possible(f facts) (mayTrue, mayFalse bool) {
	k := n.col.kind
	lo, hi := f.lo, f.hi
	exact := compare(k, lo, hi) == 0
	if n.op == opIn {
		for _, c := range n.lits {
			if compare(k, lo, c) <= 0 && compare(k, c, hi) <= 0 {
				mayTrue = true
			}
			if exact && compare(k, lo, c) == 0 {
				return true, false
			}
		}
		return mayTrue, true
	}
	c := n.lits[0]
	cl, ch := compare(k, lo, c), compare(k, hi, c)
	switch n.cmp {
	case "=":
		return cl <= 0 && ch >= 0, !(exact && cl == 0)
	case "<>":
		return !(exact && cl == 0), cl <= 0 && ch >= 0
	case "<":
		return cl < 0, ch >= 0
	case "<=":
		return cl <= 0, ch > 0
	case ">":
		return ch > 0, cl <= 0
	case ">=":
		return ch >= 0, cl < 0
	}
	return true, true
}

// combine is the set of values of a AND/OR b for a in x, b in y.
func combine(o op, x, y mask) mask {
	var out mask
	for _, a := range []mask{maskT, maskF, maskN} {
		if x&a == 0 {
			continue
		}
		for _, b := range []mask{maskT, maskF, maskN} {
			if y&b != 0 {
				out |= logic(o, a, b)
			}
		}
	}
	return out
}

func logic(o op, a, b mask) mask {
	if o == opAnd {
		switch {
		case a == maskF || b == maskF:
			return maskF
		case a == maskN || b == maskN:
			return maskN
		}
		return maskT
	}
	switch {
	case a == maskT || b == maskT:
		return maskT
	case a == maskN || b == maskN:
		return maskN
	}
	return maskF
}

func (n *node) write(b *strings.Builder) {
	switch n.op {
	case opConst:
		b.WriteString(strconv.FormatBool(n.val))
	case opNot:
		b.WriteString("not(")
		n.kids[0].write(b)
		b.WriteString(")")
	case opAnd, opOr:
		name := "and("
		if n.op == opOr {
			name = "or("
		}
		b.WriteString(name)
		for i, c := range n.kids {
			if i > 0 {
				b.WriteString(",")
			}
			c.write(b)
		}
		b.WriteString(")")
	case opIsNull:
		fmt.Fprintf(b, "isnull(#%d)", n.col.id)
	case opCmp:
		fmt.Fprintf(b, "(#%d%s", n.col.id, n.cmp)
		n.lits[0].write(b, n.col.kind)
		b.WriteString(")")
	case opIn:
		fmt.Fprintf(b, "in(#%d", n.col.id)
		for _, l := range n.lits {
			b.WriteString(",")
			l.write(b, n.col.kind)
		}
		b.WriteString(")")
	}
}

// ---- parsing ----

// maxDepth bounds the nesting of a filter.
const maxDepth = 64

type token struct {
	kind byte // 'i' identifier, 'q' quoted identifier, 's' string, 'n' integer, 'o' operator
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
					return nil, unsupported("unterminated %c", ch)
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
		case ch >= '0' && ch <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '_' || isLetter(s[j])) {
				return nil, unsupported("only integer literals are supported, not %q", s[i:min(j+1, len(s))])
			}
			out = append(out, token{kind: 'n', text: s[i:j]})
			i = j
		case ch == '_' || isLetter(ch):
			j := i + 1
			for j < len(s) && (s[j] == '_' || isLetter(s[j]) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{kind: 'i', text: s[i:j]})
			i = j
		default:
			for _, o := range []string{"<=", ">=", "<>", "!=", "=", "<", ">", "(", ")", ",", "-"} {
				if strings.HasPrefix(s[i:], o) {
					if o == "=" && strings.HasPrefix(s[i:], "==") {
						return nil, unsupported("operator ==")
					}
					out = append(out, token{kind: 'o', text: o})
					i += len(o)
					goto next
				}
			}
			return nil, unsupported("unexpected character %q", ch)
		next:
		}
	}
	return out, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

type parser struct {
	toks    []token
	i       int
	resolve func(string) (Column, bool)
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{}
}

// keyword reports whether the next token is the keyword w, consuming it.
func (p *parser) keyword(w string) bool {
	if t := p.peek(); t.kind == 'i' && strings.EqualFold(t.text, w) {
		p.i++
		return true
	}
	return false
}

func (p *parser) punct(o string) bool {
	if t := p.peek(); t.kind == 'o' && t.text == o {
		p.i++
		return true
	}
	return false
}

func (p *parser) or(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, unsupported("nested deeper than %d levels", maxDepth)
	}
	n, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		n = &node{op: opOr, kids: []*node{n, r}}
	}
	return n, nil
}

func (p *parser) and(depth int) (*node, error) {
	n, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		n = &node{op: opAnd, kids: []*node{n, r}}
	}
	return n, nil
}

func (p *parser) not(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, unsupported("nested deeper than %d levels", maxDepth)
	}
	if p.keyword("NOT") {
		n, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, kids: []*node{n}}, nil
	}
	return p.primary(depth)
}

func (p *parser) primary(depth int) (*node, error) {
	if p.punct("(") {
		n, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.punct(")") {
			return nil, unsupported("missing )")
		}
		return n, nil
	}
	if p.keyword("TRUE") {
		return &node{op: opConst, val: true}, nil
	}
	if p.keyword("FALSE") {
		return &node{op: opConst, val: false}, nil
	}
	t := p.peek()
	if t.kind != 'i' && t.kind != 'q' {
		return nil, unsupported("expected a column, found %q", t.text)
	}
	if t.kind == 'i' && isKeyword(t.text) {
		return nil, unsupported("%s is not supported here", strings.ToUpper(t.text))
	}
	p.i++
	if p.punct("(") {
		return nil, unsupported("function %s", t.text)
	}
	c, ok := p.resolve(t.text)
	if !ok {
		return nil, unsupported("column %q is not one of the table's", t.text)
	}
	k, ok := kindOf(c.Type)
	if !ok {
		return nil, unsupported("column %q is of type %s (supported: string, int, long, date, boolean)", t.text, c.Type)
	}
	col := &colRef{id: c.ID, kind: k}
	if p.keyword("IS") {
		neg := p.keyword("NOT")
		if !p.keyword("NULL") {
			return nil, unsupported("IS without NULL")
		}
		n := &node{op: opIsNull, col: col}
		if neg {
			n = &node{op: opNot, kids: []*node{n}}
		}
		return n, nil
	}
	neg := p.keyword("NOT")
	switch {
	case p.keyword("IN"):
		if !p.punct("(") {
			return nil, unsupported("IN without (")
		}
		n := &node{op: opIn, col: col}
		for {
			v, err := p.literal(k)
			if err != nil {
				return nil, err
			}
			n.lits = append(n.lits, v)
			if p.punct(")") {
				break
			}
			if !p.punct(",") {
				return nil, unsupported("expected , or ) in IN list")
			}
		}
		return negate(n, neg), nil
	case p.keyword("BETWEEN"):
		lo, err := p.literal(k)
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, unsupported("BETWEEN without AND")
		}
		hi, err := p.literal(k)
		if err != nil {
			return nil, err
		}
		n := &node{op: opAnd, kids: []*node{{op: opCmp, cmp: ">=", col: col, lits: []value{lo}}, {op: opCmp, cmp: "<=", col: col, lits: []value{hi}}}}
		return negate(n, neg), nil
	case neg:
		return nil, unsupported("NOT after a column without IN or BETWEEN")
	}
	o := p.peek()
	if o.kind != 'o' || !strings.Contains(" = <> != < <= > >= ", " "+o.text+" ") {
		return nil, unsupported("expected a comparison after column %q, found %q", t.text, o.text)
	}
	p.i++
	cmp := o.text
	if cmp == "!=" {
		cmp = "<>"
	}
	v, err := p.literal(k)
	if err != nil {
		return nil, err
	}
	return &node{op: opCmp, cmp: cmp, col: col, lits: []value{v}}, nil
}

func negate(n *node, neg bool) *node {
	if neg {
		return &node{op: opNot, kids: []*node{n}}
	}
	return n
}

func isKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "DATE", "LIKE", "ILIKE", "SIMILAR",
		"CASE", "CAST", "SELECT", "EXISTS", "ANY", "ALL", "SOME", "GLOB", "COLLATE":
		return true
	}
	return false
}

// literal parses a literal of a column of kind k: the literals whose
// comparison with such a column DuckDB makes without a surprise.
func (p *parser) literal(k kind) (value, error) {
	t := p.peek()
	switch k {
	case kString:
		if t.kind == 's' {
			p.i++
			return value{s: t.text}, nil
		}
	case kInt:
		neg := p.punct("-")
		t = p.peek()
		if t.kind == 'n' {
			p.i++
			text := t.text
			if neg {
				text = "-" + text
			}
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return value{}, unsupported("integer %s out of range", text)
			}
			return value{n: n}, nil
		}
	case kDate:
		if p.keyword("DATE") {
			t = p.peek()
		}
		if t.kind == 's' {
			d, err := time.Parse("2006-01-02", t.text)
			if err != nil || len(t.text) != 10 {
				return value{}, unsupported("date literal %q is not yyyy-mm-dd", t.text)
			}
			p.i++
			return value{n: d.Unix() / 86400}, nil
		}
	case kBool:
		if p.keyword("TRUE") {
			return boolValue(true), nil
		}
		if p.keyword("FALSE") {
			return boolValue(false), nil
		}
	}
	return value{}, unsupported("literal %q does not fit a column of its type (%s)", t.text, kindName(k))
}

func kindName(k kind) string {
	switch k {
	case kString:
		return "string: 'text'"
	case kInt:
		return "integer"
	case kDate:
		return "date: DATE 'yyyy-mm-dd'"
	}
	return "boolean: TRUE or FALSE"
}
