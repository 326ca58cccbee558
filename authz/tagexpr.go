package authz

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/floe-lake/floe"
)

// Limits of tag expressions and tags.
const (
	// MaxExprLength is the longest tag expression accepted, in bytes.
	MaxExprLength = 4096
	// MaxExprDepth is the deepest nesting of parentheses accepted.
	MaxExprDepth = 32
	// MaxExprTerms is the most conditions one expression may hold.
	MaxExprTerms = 256
	// MaxTagKeyLength is the longest tag key accepted.
	MaxTagKeyLength = 128
)

// Expr is a parsed tag expression such as
//
//	domain = sales AND (sensitivity IN (low, medium) OR owner != finance)
//
// Conditions are key = value, key != value, key IN (v1, v2, ...) and
// key NOT IN (v1, ...); they combine with AND (binding tighter) and OR and
// group with parentheses. Keywords are case-insensitive; keys and values are
// case-sensitive. A value is a bare word of letters, digits and _ . : / @ + -
// or a quoted string ('...' or "...", the quote doubled to escape it).
//
// A condition on a key that the object does not carry is false, including
// key != v and key NOT IN (...): a grant on "sensitivity != high" does not
// cover objects that have no sensitivity tag at all. An Expr is immutable.
type Expr struct {
	root exprNode
	text string
}

// String returns the canonical form of the expression, which is how it is
// stored and compared.
func (e *Expr) String() string { return e.text }

// Match reports whether tags (effective tags of an object) satisfy e.
func (e *Expr) Match(tags map[string]string) bool { return e.root.match(tags) }

// Keys returns the tag keys the expression mentions, sorted, without duplicates.
func (e *Expr) Keys() []string {
	var keys []string
	e.root.keys(&keys)
	slices.Sort(keys)
	return slices.Compact(keys)
}

type exprNode interface {
	match(tags map[string]string) bool
	// write renders the node; parens asks for parentheses around an OR.
	write(b *strings.Builder, parens bool)
	keys(out *[]string)
}

type orNode []exprNode
type andNode []exprNode

type condOp uint8

const (
	opEq condOp = iota
	opNe
	opIn
	opNotIn
)

type condNode struct {
	key    string
	op     condOp
	values []string
}

func (n orNode) match(tags map[string]string) bool {
	for _, c := range n {
		if c.match(tags) {
			return true
		}
	}
	return false
}

func (n andNode) match(tags map[string]string) bool {
	for _, c := range n {
		if !c.match(tags) {
			return false
		}
	}
	return true
}

func (n *condNode) match(tags map[string]string) bool {
	v, ok := tags[n.key]
	if !ok {
		return false
	}
	switch n.op {
	case opEq:
		return v == n.values[0]
	case opNe:
		return v != n.values[0]
	case opIn:
		return slices.Contains(n.values, v)
	default:
		return !slices.Contains(n.values, v)
	}
}

func (n orNode) write(b *strings.Builder, parens bool) {
	if parens {
		b.WriteByte('(')
	}
	for i, c := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		c.write(b, false)
	}
	if parens {
		b.WriteByte(')')
	}
}

func (n andNode) write(b *strings.Builder, _ bool) {
	for i, c := range n {
		if i > 0 {
			b.WriteString(" AND ")
		}
		c.write(b, true)
	}
}

func (n *condNode) write(b *strings.Builder, _ bool) {
	b.WriteString(n.key)
	switch n.op {
	case opEq:
		b.WriteString(" = ")
		writeValue(b, n.values[0])
		return
	case opNe:
		b.WriteString(" != ")
		writeValue(b, n.values[0])
		return
	case opIn:
		b.WriteString(" IN (")
	default:
		b.WriteString(" NOT IN (")
	}
	for i, v := range n.values {
		if i > 0 {
			b.WriteString(", ")
		}
		writeValue(b, v)
	}
	b.WriteByte(')')
}

func (n orNode) keys(out *[]string) {
	for _, c := range n {
		c.keys(out)
	}
}

func (n andNode) keys(out *[]string) {
	for _, c := range n {
		c.keys(out)
	}
}

func (n *condNode) keys(out *[]string) { *out = append(*out, n.key) }

func writeValue(b *strings.Builder, v string) {
	if isWord(v) && !isKeyword(v) {
		b.WriteString(v)
		return
	}
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(v, "'", "''"))
	b.WriteByte('\'')
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-'
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

func isKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "IN", "NOT":
		return true
	}
	return false
}

// ValidateTagKey checks a tag key: 1 to MaxTagKeyLength letters, digits and
// _ . : / @ + -, not a keyword of the expression language.
func ValidateTagKey(k string) error {
	switch {
	case k == "":
		return floe.E(floe.Invalid, "tag", "tag key must not be empty")
	case len(k) > MaxTagKeyLength:
		return floe.E(floe.Invalid, "tag", "tag key is longer than %d bytes", MaxTagKeyLength)
	case !isWord(k):
		return floe.E(floe.Invalid, "tag", "tag key %q may hold only letters, digits and _ . : / @ + -", k)
	case isKeyword(k):
		return floe.E(floe.Invalid, "tag", "tag key %q is a reserved word", k)
	}
	return nil
}

// ValidateTagValue checks a tag value: 1 to MaxNameLength bytes of UTF-8
// without control characters.
func ValidateTagValue(v string) error {
	switch {
	case v == "":
		return floe.E(floe.Invalid, "tag", "tag value must not be empty")
	case len(v) > MaxNameLength:
		return floe.E(floe.Invalid, "tag", "tag value is longer than %d bytes", MaxNameLength)
	case !utf8.ValidString(v):
		return floe.E(floe.Invalid, "tag", "tag value is not valid UTF-8")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return floe.E(floe.Invalid, "tag", "tag value %q contains a control character", v)
		}
	}
	return nil
}

// ParseExpr parses a tag expression. Errors are floe.Invalid (entity "tag
// expression") and name the byte offset of the problem.
func ParseExpr(s string) (*Expr, error) {
	if len(s) > MaxExprLength {
		return nil, floe.E(floe.Invalid, "tag expression", "tag expression is longer than %d bytes", MaxExprLength)
	}
	if !utf8.ValidString(s) {
		return nil, floe.E(floe.Invalid, "tag expression", "tag expression is not valid UTF-8")
	}
	p := &parser{src: s}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, floe.E(floe.Invalid, "tag expression", "tag expression is empty")
	}
	root, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errorf("unexpected %s", p.tok.describe())
	}
	var b strings.Builder
	root.write(&b, false)
	return &Expr{root: root, text: b.String()}, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokWord
	tokString
	tokLParen
	tokRParen
	tokComma
	tokEq
	tokNe
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokString:
		return "string '" + t.text + "'"
	case tokWord:
		return "word " + quote(t.text)
	}
	return quote(t.text)
}

func (t token) isKeyword(k string) bool { return t.kind == tokWord && strings.EqualFold(t.text, k) }

type parser struct {
	src   string
	pos   int
	tok   token
	terms int
}

func (p *parser) errorf(format string, args ...any) error {
	args = append(args, p.tok.pos+1)
	return floe.E(floe.Invalid, "tag expression", "tag expression: "+format+" at offset %d", args...)
}

func (p *parser) next() error {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(p.src) {
		p.tok = token{kind: tokEOF, pos: start}
		return nil
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		p.tok = token{kind: tokLParen, text: "(", pos: start}
	case c == ')':
		p.pos++
		p.tok = token{kind: tokRParen, text: ")", pos: start}
	case c == ',':
		p.pos++
		p.tok = token{kind: tokComma, text: ",", pos: start}
	case c == '=':
		p.pos++
		p.tok = token{kind: tokEq, text: "=", pos: start}
	case c == '!':
		if p.pos+1 < len(p.src) && p.src[p.pos+1] == '=' {
			p.pos += 2
			p.tok = token{kind: tokNe, text: "!=", pos: start}
			return nil
		}
		p.tok = token{pos: start}
		return p.errorf("'!' must be followed by '='")
	case c == '<':
		if p.pos+1 < len(p.src) && p.src[p.pos+1] == '>' {
			p.pos += 2
			p.tok = token{kind: tokNe, text: "<>", pos: start}
			return nil
		}
		p.tok = token{pos: start}
		return p.errorf("'<' must be followed by '>'")
	case c == '\'' || c == '"':
		var b strings.Builder
		p.pos++
		for {
			if p.pos >= len(p.src) {
				p.tok = token{pos: start}
				return p.errorf("unterminated string")
			}
			d := p.src[p.pos]
			p.pos++
			if d == c {
				if p.pos < len(p.src) && p.src[p.pos] == c {
					b.WriteByte(c)
					p.pos++
					continue
				}
				break
			}
			b.WriteByte(d)
		}
		p.tok = token{kind: tokString, text: b.String(), pos: start}
	case isWordByte(c):
		for p.pos < len(p.src) && isWordByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: tokWord, text: p.src[start:p.pos], pos: start}
	default:
		p.tok = token{pos: start}
		r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
		return p.errorf("unexpected character %q", r)
	}
	return nil
}

func (p *parser) parseOr(depth int) (exprNode, error) {
	if depth > MaxExprDepth {
		return nil, p.errorf("parentheses nested deeper than %d", MaxExprDepth)
	}
	var terms orNode
	for {
		t, err := p.parseAnd(depth)
		if err != nil {
			return nil, err
		}
		if o, ok := t.(orNode); ok {
			terms = append(terms, o...)
		} else {
			terms = append(terms, t)
		}
		if !p.tok.isKeyword("OR") {
			break
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (p *parser) parseAnd(depth int) (exprNode, error) {
	var factors andNode
	for {
		f, err := p.parseFactor(depth)
		if err != nil {
			return nil, err
		}
		if a, ok := f.(andNode); ok {
			factors = append(factors, a...)
		} else {
			factors = append(factors, f)
		}
		if !p.tok.isKeyword("AND") {
			break
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if len(factors) == 1 {
		return factors[0], nil
	}
	return factors, nil
}

func (p *parser) parseFactor(depth int) (exprNode, error) {
	if p.tok.kind == tokLParen {
		if err := p.next(); err != nil {
			return nil, err
		}
		n, err := p.parseOr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.errorf("expected ')' but found %s", p.tok.describe())
		}
		return n, p.next()
	}
	return p.parseCond()
}

func (p *parser) parseCond() (exprNode, error) {
	if p.tok.kind != tokWord || isKeyword(p.tok.text) {
		return nil, p.errorf("expected a tag key but found %s", p.tok.describe())
	}
	if err := ValidateTagKey(p.tok.text); err != nil {
		return nil, p.errorf("%s", floe.PublicMessage(err))
	}
	p.terms++
	if p.terms > MaxExprTerms {
		return nil, p.errorf("more than %d conditions", MaxExprTerms)
	}
	n := &condNode{key: p.tok.text}
	if err := p.next(); err != nil {
		return nil, err
	}
	switch {
	case p.tok.kind == tokEq || p.tok.kind == tokNe:
		if p.tok.kind == tokNe {
			n.op = opNe
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		v, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		n.values = []string{v}
		return n, nil
	case p.tok.isKeyword("IN"):
		n.op = opIn
	case p.tok.isKeyword("NOT"):
		if err := p.next(); err != nil {
			return nil, err
		}
		if !p.tok.isKeyword("IN") {
			return nil, p.errorf("expected IN after NOT but found %s", p.tok.describe())
		}
		n.op = opNotIn
	default:
		return nil, p.errorf("expected =, !=, IN or NOT IN after tag key %q but found %s", n.key, p.tok.describe())
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokLParen {
		return nil, p.errorf("expected '(' after IN but found %s", p.tok.describe())
	}
	for {
		if err := p.next(); err != nil {
			return nil, err
		}
		v, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(n.values, v) {
			n.values = append(n.values, v)
		}
		if p.tok.kind == tokRParen {
			break
		}
		if p.tok.kind != tokComma {
			return nil, p.errorf("expected ',' or ')' in IN list but found %s", p.tok.describe())
		}
	}
	return n, p.next()
}

// parseValue consumes a value and the token after it.
func (p *parser) parseValue() (string, error) {
	if p.tok.kind != tokWord && p.tok.kind != tokString || p.tok.kind == tokWord && isKeyword(p.tok.text) {
		return "", p.errorf("expected a tag value but found %s", p.tok.describe())
	}
	v := p.tok.text
	if err := ValidateTagValue(v); err != nil {
		return "", p.errorf("%s", floe.PublicMessage(err))
	}
	return v, p.next()
}
