package engine

import (
	"fmt"
	"strings"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// DuckDB cannot serialize data-changing statements to a syntax tree
// (json_serialize_sql takes only SELECT), so the engine splits INSERT,
// DELETE, UPDATE and MERGE into their clauses here and hands every
// expression and query part to DuckDB inside a SELECT it builds, which
// then goes through the same analysis and policy rewriting as a query.
// The splitter only has to find clause boundaries: it knows strings,
// quoted identifiers, comments, parentheses and CASE ... END, and refuses a
// part whose parentheses do not balance, so that no part can close the
// SELECT it is put in.

// sqlToken is a lexical token of a statement.
type sqlToken struct {
	kind       tokenKind
	text       string // raw text
	start, end int    // byte offsets in the statement
}

type tokenKind uint8

const (
	tokWord   tokenKind = iota + 1 // keyword or unquoted identifier
	tokIdent                       // "quoted identifier"
	tokString                      // 'string', E'string', $$string$$
	tokNumber                      // numeric literal or $n parameter
	tokPunct                       // any other character
)

// lexSQL splits a statement into tokens, dropping white space and
// comments.
func lexSQL(s string) ([]sqlToken, error) {
	var toks []sqlToken
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			depth := 0
			for {
				if i+1 >= len(s) {
					return nil, syntaxError("unterminated /* comment")
				}
				if s[i] == '/' && s[i+1] == '*' {
					depth++
					i += 2
					continue
				}
				if s[i] == '*' && s[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
					continue
				}
				i++
			}
			continue
		case c == '\'' || (c == 'e' || c == 'E') && i+1 < len(s) && s[i+1] == '\'':
			escapes := c != '\''
			if escapes {
				i++
			}
			i++
			for {
				if i >= len(s) {
					return nil, syntaxError("unterminated quoted string")
				}
				if escapes && s[i] == '\\' {
					i += 2
					continue
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			toks = append(toks, sqlToken{kind: tokString, text: s[start:i], start: start, end: i})
		case c == '"':
			i++
			for {
				if i >= len(s) {
					return nil, syntaxError("unterminated quoted identifier")
				}
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			toks = append(toks, sqlToken{kind: tokIdent, text: s[start:i], start: start, end: i})
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			toks = append(toks, sqlToken{kind: tokNumber, text: s[start:i], start: start, end: i})
		case c == '$':
			// Dollar quoting: $tag$ ... $tag$.
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			if j >= len(s) || s[j] != '$' {
				i++
				toks = append(toks, sqlToken{kind: tokPunct, text: "$", start: start, end: i})
				continue
			}
			tag := s[i : j+1]
			k := strings.Index(s[j+1:], tag)
			if k < 0 {
				return nil, syntaxError("unterminated dollar-quoted string")
			}
			i = j + 1 + k + len(tag)
			toks = append(toks, sqlToken{kind: tokString, text: s[start:i], start: start, end: i})
		case isIdentStart(c):
			for i < len(s) && (isIdentChar(s[i]) || s[i] == '$') {
				i++
			}
			toks = append(toks, sqlToken{kind: tokWord, text: s[start:i], start: start, end: i})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (isIdentChar(s[i]) || s[i] == '.') {
				i++
			}
			toks = append(toks, sqlToken{kind: tokNumber, text: s[start:i], start: start, end: i})
		default:
			i++
			toks = append(toks, sqlToken{kind: tokPunct, text: s[start:i], start: start, end: i})
		}
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func syntaxError(format string, args ...any) error {
	return &pgwire.Error{Code: pgwire.CodeSyntaxError, Message: fmt.Sprintf(format, args...)}
}

// dmlKind is the kind of a data-changing statement.
type dmlKind uint8

const (
	dmlInsert dmlKind = iota + 1
	dmlDelete
	dmlUpdate
	dmlMerge
)

func (k dmlKind) String() string {
	switch k {
	case dmlInsert:
		return "INSERT"
	case dmlDelete:
		return "DELETE"
	case dmlUpdate:
		return "UPDATE"
	case dmlMerge:
		return "MERGE"
	}
	return "?"
}

// assignment is one "column = expression" of UPDATE SET.
type assignment struct {
	col  string // column name, unquoted
	expr string // SQL text
}

// mergeMatch says which rows a WHEN clause of MERGE applies to.
type mergeMatch uint8

const (
	whenMatched         mergeMatch = iota + 1 // target row with a source row
	whenNotMatched                            // source row without a target row (BY TARGET)
	whenNotMatchedBySrc                       // target row without a source row (BY SOURCE)
)

// mergeAction is what a WHEN clause of MERGE does.
type mergeAction uint8

const (
	actUpdate mergeAction = iota + 1
	actDelete
	actInsert
	actNothing
)

// mergeClause is one WHEN clause of MERGE.
type mergeClause struct {
	match  mergeMatch
	cond   string // SQL text; "" for none
	action mergeAction
	sets   []assignment // actUpdate
	cols   []string     // actInsert: the column list (nil: all columns)
	values []string     // actInsert: one expression per column
}

// dmlParsed is a data-changing statement split into its parts; every part
// is SQL text of the statement.
type dmlParsed struct {
	kind        dmlKind
	target      string       // the target table's name as written
	alias       string       // the target's alias (unquoted); "" for none
	cols        []string     // INSERT column list (unquoted); nil for all
	source      string       // INSERT: the query; MERGE: a table name or a parenthesized query
	rows        [][]string   // INSERT ... VALUES: the expressions of each row (source is then "")
	sourceAlias string       // MERGE: the source's alias (unquoted)
	from        string       // DELETE ... USING / UPDATE ... FROM list
	cond        string       // DELETE/UPDATE: WHERE condition; MERGE: ON condition
	sets        []assignment // UPDATE
	clauses     []mergeClause
}

// dmlKeyword reports which data-changing statement sql is (by its first
// keyword), or 0.
func dmlKeyword(sql string) dmlKind {
	switch strings.ToUpper(firstWord(sql)) {
	case "INSERT":
		return dmlInsert
	case "DELETE":
		return dmlDelete
	case "UPDATE":
		return dmlUpdate
	case "MERGE":
		return dmlMerge
	}
	return 0
}

// dmlParser walks the tokens of one statement.
type dmlParser struct {
	src  string
	toks []sqlToken
	i    int
}

// parseDML splits an INSERT, DELETE, UPDATE or MERGE statement into its
// parts. Errors are *pgwire.Error values (42601, or 0A000 for forms the
// SQL endpoint does not support).
func parseDML(sql string) (*dmlParsed, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	for _, t := range toks {
		if t.text == ";" {
			return nil, syntaxError("send one statement at a time")
		}
	}
	p := &dmlParser{src: sql, toks: toks}
	if len(toks) == 0 {
		return nil, syntaxError("empty statement")
	}
	var d *dmlParsed
	switch strings.ToUpper(toks[0].text) {
	case "INSERT":
		d, err = p.insert()
	case "DELETE":
		d, err = p.delete()
	case "UPDATE":
		d, err = p.update()
	case "MERGE":
		d, err = p.merge()
	default:
		return nil, syntaxError("not an INSERT, DELETE, UPDATE or MERGE statement")
	}
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, syntaxError("syntax error at or near %q", p.toks[p.i].text)
	}
	return d, nil
}

func (p *dmlParser) eof() bool { return p.i >= len(p.toks) }

// isWord reports whether the token at i is the keyword w.
func (p *dmlParser) isWord(i int, w string) bool {
	return i < len(p.toks) && p.toks[i].kind == tokWord && strings.EqualFold(p.toks[i].text, w)
}

// accept consumes the keywords ws if they come next.
func (p *dmlParser) accept(ws ...string) bool {
	for k, w := range ws {
		if !p.isWord(p.i+k, w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

// expect consumes the keywords ws or fails.
func (p *dmlParser) expect(ws ...string) error {
	if p.accept(ws...) {
		return nil
	}
	return p.errAt("expected " + strings.ToUpper(strings.Join(ws, " ")))
}

func (p *dmlParser) errAt(msg string) error {
	if p.eof() {
		return syntaxError("%s at end of input", msg)
	}
	return syntaxError("%s at or near %q", msg, p.toks[p.i].text)
}

func (p *dmlParser) punct(s string) bool {
	if p.i < len(p.toks) && p.toks[p.i].kind == tokPunct && p.toks[p.i].text == s {
		p.i++
		return true
	}
	return false
}

// reserved are keywords that end a name and cannot be an alias.
var reserved = setOf("where", "using", "set", "from", "on", "when", "returning", "at", "values", "select",
	"with", "default", "by", "as", "then", "and", "or", "not", "join", "left", "right", "inner", "full",
	"cross", "natural", "order", "group", "limit", "union", "table", "tablesample", "matched", "do", "insert",
	"update", "delete", "merge", "into", "null", "true", "false", "case", "end")

// name reads a dotted table name and returns it as written.
func (p *dmlParser) name() (string, error) {
	start := p.i
	for {
		if p.eof() || (p.toks[p.i].kind != tokWord && p.toks[p.i].kind != tokIdent) {
			return "", p.errAt("expected a table name")
		}
		if p.toks[p.i].kind == tokWord && reserved[strings.ToLower(p.toks[p.i].text)] {
			return "", p.errAt("expected a table name")
		}
		p.i++
		if !p.punct(".") {
			break
		}
	}
	if p.isWord(p.i, "at") && p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(" {
		return "", unsupported("a data-changing statement cannot name a table AT a snapshot")
	}
	return p.src[p.toks[start].start:p.toks[p.i-1].end], nil
}

// ident reads one identifier and returns it unquoted.
func (p *dmlParser) ident() (string, bool) {
	if p.eof() {
		return "", false
	}
	t := p.toks[p.i]
	switch t.kind {
	case tokIdent:
		p.i++
		return strings.ReplaceAll(t.text[1:len(t.text)-1], `""`, `"`), true
	case tokWord:
		if reserved[strings.ToLower(t.text)] {
			return "", false
		}
		p.i++
		return strings.ToLower(t.text), true
	}
	return "", false
}

// alias reads an optional [AS] alias.
func (p *dmlParser) alias() (string, error) {
	if p.accept("as") {
		a, ok := p.ident()
		if !ok {
			return "", p.errAt("expected an alias")
		}
		return a, nil
	}
	a, _ := p.ident()
	return a, nil
}

// columnList reads "(a, b, ...)" after the opening parenthesis.
func (p *dmlParser) columnList() ([]string, error) {
	var cols []string
	for {
		c, ok := p.ident()
		if !ok {
			return nil, p.errAt("expected a column name")
		}
		cols = append(cols, c)
		if p.punct(")") {
			return cols, nil
		}
		if !p.punct(",") {
			return nil, p.errAt("expected , or )")
		}
	}
}

// part reads tokens up to (not including) the first one at nesting depth 0
// for which stop returns true, or to the end, and returns their text. It
// fails if the part is empty or its brackets do not balance.
func (p *dmlParser) part(what string, stop func(i int) bool) (string, error) {
	start := p.i
	depth, cases := 0, 0
	for ; p.i < len(p.toks); p.i++ {
		t := p.toks[p.i]
		if depth == 0 && cases == 0 && stop != nil && stop(p.i) {
			break
		}
		switch {
		case t.kind == tokPunct && (t.text == "(" || t.text == "[" || t.text == "{"):
			depth++
		case t.kind == tokPunct && (t.text == ")" || t.text == "]" || t.text == "}"):
			depth--
			if depth < 0 {
				return "", p.errAt("unbalanced parentheses")
			}
		case depth == 0 && t.kind == tokWord && strings.EqualFold(t.text, "case"):
			cases++
		case depth == 0 && t.kind == tokWord && strings.EqualFold(t.text, "end") && cases > 0:
			cases--
		}
	}
	if depth != 0 || cases != 0 {
		return "", syntaxError("unbalanced parentheses or CASE in %s", what)
	}
	if p.i == start {
		return "", p.errAt("expected " + what)
	}
	return p.src[p.toks[start].start:p.toks[p.i-1].end], nil
}

// words returns a stop function for part: stop at any of the keywords.
func (p *dmlParser) words(ws ...string) func(int) bool {
	return func(i int) bool {
		if p.toks[i].kind != tokWord {
			return false
		}
		for _, w := range ws {
			if strings.EqualFold(p.toks[i].text, w) {
				// FROM in IS [NOT] DISTINCT FROM is not a clause.
				if strings.EqualFold(w, "from") && i > 0 && p.isWord(i-1, "distinct") {
					return false
				}
				return true
			}
		}
		return false
	}
}

// refuseReturning fails on RETURNING, which the SQL endpoint does not
// support.
func (p *dmlParser) refuseReturning() error {
	if p.isWord(p.i, "returning") {
		return unsupported("RETURNING is not supported")
	}
	return nil
}

// INSERT INTO name [(cols)] query
func (p *dmlParser) insert() (*dmlParsed, error) {
	p.i++ // INSERT
	if p.isWord(p.i, "or") {
		return nil, unsupported("INSERT OR REPLACE and INSERT OR IGNORE are not supported: Iceberg tables have no keys")
	}
	if err := p.expect("into"); err != nil {
		return nil, err
	}
	d := &dmlParsed{kind: dmlInsert}
	var err error
	if d.target, err = p.name(); err != nil {
		return nil, err
	}
	if p.isWord(p.i, "as") {
		return nil, unsupported("INSERT does not take an alias for its table")
	}
	if p.isWord(p.i, "by") {
		return nil, unsupported("INSERT ... BY NAME/POSITION is not supported; list the columns instead")
	}
	if p.i+1 < len(p.toks) && p.toks[p.i].text == "(" && p.toks[p.i].kind == tokPunct && !p.isQueryStart(p.i+1) {
		p.i++
		if d.cols, err = p.columnList(); err != nil {
			return nil, err
		}
	}
	if p.isWord(p.i, "default") {
		return nil, unsupported("INSERT ... DEFAULT VALUES is not supported")
	}
	if !p.isQueryStart(p.i) && !(p.i < len(p.toks) && p.toks[p.i].text == "(") {
		return nil, p.errAt("expected VALUES or a query")
	}
	if p.accept("values") {
		// Each value is cast to its column's type on its own, as
		// PostgreSQL does, rather than to a type DuckDB infers for the
		// whole VALUES column.
		for {
			row, err := p.valueList()
			if err != nil {
				return nil, err
			}
			if len(d.rows) > 0 && len(row) != len(d.rows[0]) {
				return nil, syntaxError("VALUES lists must all be the same length")
			}
			d.rows = append(d.rows, row)
			if !p.punct(",") {
				break
			}
		}
		if err := p.refuseReturning(); err != nil {
			return nil, err
		}
		if p.isWord(p.i, "on") && p.isWord(p.i+1, "conflict") {
			return nil, unsupported("INSERT ... ON CONFLICT is not supported: Iceberg tables have no keys")
		}
		return d, nil
	}
	if d.source, err = p.part("a query", p.words("returning")); err != nil {
		return nil, err
	}
	if err := p.refuseReturning(); err != nil {
		return nil, err
	}
	// ON CONFLICT may only appear at the end, at depth 0.
	sub := &dmlParser{src: p.src, toks: p.toks}
	for i := range p.toks {
		if sub.isWord(i, "on") && (sub.isWord(i+1, "conflict")) {
			return nil, unsupported("INSERT ... ON CONFLICT is not supported: Iceberg tables have no keys")
		}
	}
	return d, nil
}

// isQueryStart reports whether a query starts at token i.
func (p *dmlParser) isQueryStart(i int) bool {
	return p.isWord(i, "select") || p.isWord(i, "values") || p.isWord(i, "with") || p.isWord(i, "from") || p.isWord(i, "table")
}

// DELETE FROM name [[AS] alias] [USING list] [WHERE cond]
func (p *dmlParser) delete() (*dmlParsed, error) {
	p.i++ // DELETE
	if err := p.expect("from"); err != nil {
		return nil, err
	}
	d := &dmlParsed{kind: dmlDelete}
	var err error
	if d.target, err = p.name(); err != nil {
		return nil, err
	}
	if d.alias, err = p.alias(); err != nil {
		return nil, err
	}
	if p.accept("using") {
		if d.from, err = p.part("a USING list", p.words("where", "returning")); err != nil {
			return nil, err
		}
	}
	if err := p.where(d); err != nil {
		return nil, err
	}
	return d, p.refuseReturning()
}

// UPDATE name [[AS] alias] SET col = expr, ... [FROM list] [WHERE cond]
func (p *dmlParser) update() (*dmlParsed, error) {
	p.i++ // UPDATE
	d := &dmlParsed{kind: dmlUpdate}
	var err error
	if d.target, err = p.name(); err != nil {
		return nil, err
	}
	if d.alias, err = p.alias(); err != nil {
		return nil, err
	}
	if err := p.expect("set"); err != nil {
		return nil, err
	}
	if d.sets, err = p.assignments(p.words("from", "where", "returning")); err != nil {
		return nil, err
	}
	if p.accept("from") {
		if d.from, err = p.part("a FROM list", p.words("where", "returning")); err != nil {
			return nil, err
		}
	}
	if err := p.where(d); err != nil {
		return nil, err
	}
	return d, p.refuseReturning()
}

// where reads an optional "WHERE cond" of DELETE and UPDATE into d.cond.
func (p *dmlParser) where(d *dmlParsed) error {
	if !p.accept("where") {
		return nil
	}
	if p.isWord(p.i, "current") && p.isWord(p.i+1, "of") {
		return unsupported("WHERE CURRENT OF is not supported")
	}
	var err error
	d.cond, err = p.part("a condition", p.words("returning"))
	return err
}

// assignments reads "col = expr, ..." up to a stop keyword at depth 0.
func (p *dmlParser) assignments(stop func(int) bool) ([]assignment, error) {
	var out []assignment
	for {
		if p.punct("(") {
			return nil, unsupported("SET (a, b) = (...) is not supported; assign each column")
		}
		if p.punct("*") {
			return nil, unsupported("SET * is not supported; assign each column")
		}
		col, ok := p.ident()
		if !ok {
			return nil, p.errAt("expected a column name")
		}
		if p.punct(".") {
			return nil, p.errAt("a SET column is named without a table")
		}
		if !p.punct("=") {
			return nil, p.errAt("expected =")
		}
		if p.isWord(p.i, "default") && (p.i+1 == len(p.toks) || p.toks[p.i+1].text == "," || stop(p.i+1)) {
			return nil, unsupported("SET ... = DEFAULT is not supported")
		}
		expr, err := p.part("an expression", func(i int) bool { return p.toks[i].text == "," || stop(i) })
		if err != nil {
			return nil, err
		}
		for _, a := range out {
			if a.col == col {
				return nil, syntaxError("multiple assignments to the same column %q", col)
			}
		}
		out = append(out, assignment{col: col, expr: expr})
		if !p.punct(",") {
			return out, nil
		}
	}
}

// MERGE INTO name [[AS] alias] USING source [[AS] alias] ON cond WHEN ...
func (p *dmlParser) merge() (*dmlParsed, error) {
	p.i++ // MERGE
	if err := p.expect("into"); err != nil {
		return nil, err
	}
	d := &dmlParsed{kind: dmlMerge}
	var err error
	if d.target, err = p.name(); err != nil {
		return nil, err
	}
	if d.alias, err = p.alias(); err != nil {
		return nil, err
	}
	if err := p.expect("using"); err != nil {
		return nil, err
	}
	if !p.eof() && p.toks[p.i].kind == tokPunct && p.toks[p.i].text == "(" {
		start := p.i
		p.i++
		if _, err := p.part("a query", func(i int) bool { return p.toks[i].text == ")" }); err != nil {
			return nil, err
		}
		if !p.punct(")") {
			return nil, p.errAt("expected )")
		}
		d.source = p.src[p.toks[start].start:p.toks[p.i-1].end]
	} else if d.source, err = p.name(); err != nil {
		return nil, err
	}
	if d.sourceAlias, err = p.alias(); err != nil {
		return nil, err
	}
	if p.i < len(p.toks) && p.toks[p.i].text == "(" {
		return nil, unsupported("column aliases on the MERGE source are not supported")
	}
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	if d.cond, err = p.part("a join condition", p.words("when")); err != nil {
		return nil, err
	}
	for p.accept("when") {
		var c mergeClause
		switch {
		case p.accept("matched"):
			c.match = whenMatched
		case p.accept("not", "matched", "by", "source"):
			c.match = whenNotMatchedBySrc
		case p.accept("not", "matched"):
			c.match = whenNotMatched
			p.accept("by", "target")
		default:
			return nil, p.errAt("expected MATCHED or NOT MATCHED")
		}
		if p.accept("and") {
			if c.cond, err = p.part("a condition", p.words("then")); err != nil {
				return nil, err
			}
		}
		if err := p.expect("then"); err != nil {
			return nil, err
		}
		if err := p.mergeAction(&c); err != nil {
			return nil, err
		}
		d.clauses = append(d.clauses, c)
	}
	if len(d.clauses) == 0 {
		return nil, p.errAt("expected WHEN")
	}
	return d, p.refuseReturning()
}

// mergeAction reads the action of a WHEN clause.
func (p *dmlParser) mergeAction(c *mergeClause) error {
	stop := p.words("when", "returning")
	var err error
	switch {
	case p.accept("update", "set"):
		if c.match == whenNotMatched {
			return syntaxError("WHEN NOT MATCHED cannot UPDATE: there is no target row")
		}
		c.action = actUpdate
		c.sets, err = p.assignments(stop)
		return err
	case p.accept("delete"):
		if c.match == whenNotMatched {
			return syntaxError("WHEN NOT MATCHED cannot DELETE: there is no target row")
		}
		c.action = actDelete
		return nil
	case p.accept("do", "nothing"):
		c.action = actNothing
		return nil
	case p.accept("insert"):
		if c.match != whenNotMatched {
			return syntaxError("only WHEN NOT MATCHED [BY TARGET] can INSERT")
		}
		c.action = actInsert
		if p.punct("(") {
			if c.cols, err = p.columnList(); err != nil {
				return err
			}
		}
		if p.isWord(p.i, "default") {
			return unsupported("INSERT DEFAULT VALUES is not supported")
		}
		if err := p.expect("values"); err != nil {
			return err
		}
		if c.values, err = p.valueList(); err != nil {
			return err
		}
		if c.cols != nil && len(c.cols) != len(c.values) {
			return syntaxError("INSERT has %d columns but %d values", len(c.cols), len(c.values))
		}
		return nil
	}
	return unsupported("this MERGE action is not supported; use UPDATE SET, DELETE, INSERT [(columns)] VALUES (...) or DO NOTHING")
}

// valueList reads "(expr, ...)".
func (p *dmlParser) valueList() ([]string, error) {
	if !p.punct("(") {
		return nil, p.errAt("expected (")
	}
	var out []string
	for {
		v, err := p.part("an expression", func(i int) bool { return p.toks[i].text == "," || p.toks[i].text == ")" })
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.punct(")") {
			return out, nil
		}
		if !p.punct(",") {
			return nil, p.errAt("expected , or )")
		}
	}
}
