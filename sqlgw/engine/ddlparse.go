package engine

import (
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// DuckDB's json_serialize_sql takes only SELECT, so the DDL statements the
// SQL endpoint runs as Iceberg catalog operations are parsed here, with
// the lexer of dmlparse.go. The parser takes untrusted input: it reads
// names, types, literals and keywords only; the one part it hands on as
// text is the query of CREATE TABLE ... AS, which then goes through the
// same analysis and policy rewriting as any query.

// ddlKind is the kind of a DDL statement.
type ddlKind uint8

const (
	ddlCreateSchema ddlKind = iota + 1
	ddlDropSchema
	ddlCreateTable
	ddlDropTable
	ddlAlterTable
	ddlTruncate
	ddlComment
	ddlCreateView
	ddlDropView
	ddlAlterView
)

// ddlTag is the command tag PostgreSQL answers each kind with.
func (k ddlKind) String() string {
	switch k {
	case ddlCreateSchema:
		return "CREATE SCHEMA"
	case ddlDropSchema:
		return "DROP SCHEMA"
	case ddlCreateTable:
		return "CREATE TABLE"
	case ddlDropTable:
		return "DROP TABLE"
	case ddlAlterTable:
		return "ALTER TABLE"
	case ddlTruncate:
		return "TRUNCATE TABLE"
	case ddlComment:
		return "COMMENT"
	case ddlCreateView:
		return "CREATE VIEW"
	case ddlDropView:
		return "DROP VIEW"
	case ddlAlterView:
		return "ALTER VIEW"
	}
	return "?"
}

// alterKind is the action of an ALTER TABLE.
type alterKind uint8

const (
	alterAddColumn alterKind = iota + 1
	alterDropColumn
	alterRenameColumn
	alterColumnType
	alterDropNotNull
	alterSetProps
	alterResetProps
	alterRename
	alterAddPartition
	alterDropPartition
)

// colDef is a column of CREATE TABLE or ALTER TABLE ADD COLUMN.
type colDef struct {
	name     string
	typ      iceberg.Type
	required bool
	doc      string
}

// partField is one PARTITIONED BY entry: a transform of a column.
type partField struct {
	transform iceberg.Transform
	col       string
	name      string // partition field name ("" for the default)
}

// ddlParsed is a parsed DDL statement.
type ddlParsed struct {
	kind        ddlKind
	path        []string // the schema's or table's name parts, unquoted
	ifExists    bool     // IF EXISTS / IF NOT EXISTS
	orReplace   bool
	security    string // CREATE VIEW ... SECURITY DEFINER|INVOKER: "definer", "invoker" or "" (invoker)
	cascade     bool
	purge       bool
	cols        []colDef
	colNames    []string // CREATE TABLE t (a, b) AS: names for the query's columns
	parts       []partField
	props       map[string]string // WITH (...), ALTER TABLE SET (...)
	keys        []string          // ALTER TABLE RESET (...)
	query       string            // CREATE TABLE ... AS <query>
	temp        bool              // CREATE TEMPORARY TABLE
	alter       alterKind
	col         string   // the column altered, commented on, dropped or renamed
	newName     string   // RENAME ... TO
	newPath     []string // ALTER TABLE RENAME TO
	comment     *string  // COMMENT ON ... IS; nil for IS NULL
	commentsCol bool     // COMMENT ON COLUMN
	partName    string   // DROP PARTITION FIELD by name
}

// ddlKeyword reports whether sql is a DDL statement the engine runs.
func ddlKeyword(sql string) bool {
	switch strings.ToUpper(firstWord(sql)) {
	case "CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT":
		return true
	}
	return false
}

// maxDDLColumns bounds the columns of one CREATE TABLE (PostgreSQL's own
// limit is 1600).
const maxDDLColumns = 1600

// parseDDL parses one DDL statement. Errors are *pgwire.Error values:
// 42601 for syntax, 0A000 for forms the endpoint does not support, 42704
// for an unknown type.
func parseDDL(sql string) (*ddlParsed, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return nil, syntaxError("empty statement")
	}
	p := &ddlParser{dmlParser{src: sql, toks: toks}}
	var d *ddlParsed
	switch strings.ToUpper(toks[0].text) {
	case "CREATE":
		p.i++
		d, err = p.create()
	case "DROP":
		p.i++
		d, err = p.drop()
	case "ALTER":
		p.i++
		d, err = p.alterTable()
	case "TRUNCATE":
		p.i++
		p.accept("table")
		d = &ddlParsed{kind: ddlTruncate}
		d.path, err = p.qname()
	case "COMMENT":
		p.i++
		d, err = p.commentOn()
	default:
		return nil, syntaxError("not a DDL statement")
	}
	if err != nil {
		return nil, err
	}
	if d.query == "" {
		for _, t := range p.toks[p.i:] {
			if t.text == ";" {
				return nil, syntaxError("send one statement at a time")
			}
		}
		if p.i < len(p.toks) {
			return nil, syntaxError("syntax error at or near %q", p.toks[p.i].text)
		}
	}
	return d, nil
}

// ddlParser walks the tokens of one DDL statement.
type ddlParser struct{ dmlParser }

// word reads one identifier, reserved words included (a DDL name may be
// any identifier; the grammar around it is fixed), unquoted.
func (p *ddlParser) word() (string, bool) {
	if p.eof() {
		return "", false
	}
	t := p.toks[p.i]
	switch t.kind {
	case tokIdent:
		p.i++
		s := strings.ReplaceAll(t.text[1:len(t.text)-1], `""`, `"`)
		return s, s != ""
	case tokWord:
		p.i++
		return strings.ToLower(t.text), true
	}
	return "", false
}

// qname reads a dotted name of one to three parts.
func (p *ddlParser) qname() ([]string, error) { return p.qnameN(3) }

// qnameN reads a dotted name of one to max parts.
func (p *ddlParser) qnameN(max int) ([]string, error) {
	var parts []string
	for {
		w, ok := p.word()
		if !ok {
			return nil, p.errAt("expected a name")
		}
		parts = append(parts, w)
		if !p.punct(".") {
			break
		}
	}
	if len(parts) > max {
		return nil, syntaxError("improper qualified name (too many dotted names): %s", strings.Join(parts, "."))
	}
	return parts, nil
}

// str reads a string literal and returns its value.
func (p *ddlParser) str() (string, bool) {
	if p.eof() || p.toks[p.i].kind != tokString {
		return "", false
	}
	t := p.toks[p.i].text
	switch {
	case strings.HasPrefix(t, "'"):
		p.i++
		return strings.ReplaceAll(t[1:len(t)-1], "''", "'"), true
	case strings.HasPrefix(t, "$"):
		j := strings.IndexByte(t[1:], '$') + 2
		p.i++
		return t[j : len(t)-j], true
	}
	return "", false // E'...' escapes: not taken
}

// ifExists reads IF EXISTS (or IF NOT EXISTS when not is set).
func (p *ddlParser) ifWords(not bool) bool {
	if not {
		return p.accept("if", "not", "exists")
	}
	return p.accept("if", "exists")
}

func (p *ddlParser) create() (*ddlParsed, error) {
	d := &ddlParsed{}
	if p.accept("or", "replace") {
		d.orReplace = true
	}
	switch {
	case p.accept("schema"):
		if d.orReplace {
			return nil, syntaxError("CREATE OR REPLACE SCHEMA is not valid; use CREATE SCHEMA IF NOT EXISTS")
		}
		d.kind = ddlCreateSchema
		d.ifExists = p.ifWords(true)
		var err error
		if d.path, err = p.qname(); err != nil {
			return nil, err
		}
		if p.accept("with") {
			if d.props, err = p.props(); err != nil {
				return nil, err
			}
		}
		return d, nil
	case p.accept("table"):
		d.kind = ddlCreateTable
		return d, p.createTable(d)
	case p.accept("view"):
		d.kind = ddlCreateView
		return d, p.createView(d)
	case (p.isWord(p.i, "temp") || p.isWord(p.i, "temporary")) && p.isWord(p.i+1, "table"):
		p.i += 2
		d.kind = ddlCreateTable
		d.temp = true
		return d, p.createTable(d)
	case p.isWord(p.i, "temp") || p.isWord(p.i, "temporary") || p.isWord(p.i, "unlogged"):
		return nil, unsupported("temporary and unlogged tables are not supported: every table is an Iceberg table of the catalog")
	}
	if p.eof() {
		return nil, syntaxError("syntax error at end of input")
	}
	return nil, unsupported("CREATE %s is not supported by the SQL endpoint (it runs CREATE SCHEMA and CREATE TABLE)", strings.ToUpper(p.toks[p.i].text))
}

// createView reads the rest of CREATE [OR REPLACE] VIEW name AS query.
func (p *ddlParser) createView(d *ddlParsed) error {
	var err error
	if d.path, err = p.qname(); err != nil {
		return err
	}
	if p.punct("(") {
		return unsupported("CREATE VIEW with column names is not supported: name the columns in the query")
	}
	if p.accept("security") {
		switch {
		case p.accept("definer"):
			d.security = securityDefiner
		case p.accept("invoker"):
			d.security = securityInvoker
		default:
			return p.errAt("expected DEFINER or INVOKER after SECURITY")
		}
	}
	if !p.accept("as") {
		return p.errAt("expected AS")
	}
	if p.eof() || (!p.isWord(p.i, "select") && !p.isWord(p.i, "with") && !p.isWord(p.i, "values") && !p.isWord(p.i, "from") && p.toks[p.i].text != "(") {
		return p.errAt("expected a query after AS")
	}
	q, err := p.part("query", func(i int) bool { return p.toks[i].text == ";" })
	if err != nil {
		return err
	}
	if p.i < len(p.toks) {
		return syntaxError("send one statement at a time")
	}
	d.query = strings.TrimSpace(q)
	return nil
}

// createTable reads the rest of CREATE [OR REPLACE] TABLE.
func (p *ddlParser) createTable(d *ddlParsed) error {
	d.ifExists = p.ifWords(true)
	if d.ifExists && d.orReplace {
		return syntaxError("CREATE OR REPLACE TABLE cannot have IF NOT EXISTS")
	}
	var err error
	if d.path, err = p.qname(); err != nil {
		return err
	}
	if p.punct("(") {
		if err := p.tableElements(d); err != nil {
			return err
		}
	}
	for {
		switch {
		case p.accept("partitioned", "by"), p.accept("partition", "by"):
			if !p.punct("(") {
				return p.errAt("expected ( after PARTITIONED BY")
			}
			if d.parts, err = p.partitions(); err != nil {
				return err
			}
			continue
		case p.accept("with"), p.accept("tblproperties"):
			if d.props, err = p.props(); err != nil {
				return err
			}
			continue
		case p.accept("using"):
			if w, ok := p.word(); !ok || w != "iceberg" {
				return unsupported("tables are Iceberg tables: USING %s is not supported", w)
			}
			continue
		}
		break
	}
	if p.accept("as") {
		if len(d.cols) > 0 {
			return syntaxError("CREATE TABLE ... AS takes column names, not column definitions")
		}
		if p.eof() {
			return p.errAt("expected a query after AS")
		}
		if !p.isWord(p.i, "select") && !p.isWord(p.i, "with") && !p.isWord(p.i, "values") && !p.isWord(p.i, "from") && p.toks[p.i].text != "(" {
			return p.errAt("expected a query after AS")
		}
		q, err := p.part("query", func(i int) bool { return p.toks[i].text == ";" })
		if err != nil {
			return err
		}
		if p.i < len(p.toks) {
			return syntaxError("send one statement at a time")
		}
		if strings.HasSuffix(strings.ToUpper(strings.TrimSpace(q)), "WITH NO DATA") {
			return unsupported("CREATE TABLE ... AS ... WITH NO DATA is not supported")
		}
		d.query = q
		return nil
	}
	if d.colNames != nil {
		return syntaxError("column definitions need types (or use CREATE TABLE ... AS)")
	}
	if len(d.cols) == 0 {
		return syntaxError("CREATE TABLE needs column definitions or AS query")
	}
	return nil
}

// tableElements reads column definitions (or bare names before AS) after
// the opening parenthesis.
func (p *ddlParser) tableElements(d *ddlParsed) error {
	for {
		if p.isWord(p.i, "primary") || p.isWord(p.i, "unique") || p.isWord(p.i, "constraint") || p.isWord(p.i, "foreign") || p.isWord(p.i, "check") {
			return unsupported("table constraints (%s) are not supported by Iceberg tables", strings.ToUpper(p.toks[p.i].text))
		}
		name, ok := p.word()
		if !ok {
			return p.errAt("expected a column name")
		}
		if p.toks[p.i-1].text == "," || p.toks[p.i-1].text == ")" {
			return p.errAt("expected a column name")
		}
		if !p.eof() && (p.toks[p.i].text == "," || p.toks[p.i].text == ")") {
			d.colNames = append(d.colNames, name)
		} else {
			c, err := p.columnDef(name)
			if err != nil {
				return err
			}
			d.cols = append(d.cols, c)
		}
		if len(d.cols)+len(d.colNames) > maxDDLColumns {
			return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded, Message: "tables can have at most 1600 columns"}
		}
		if p.punct(")") {
			break
		}
		if !p.punct(",") {
			return p.errAt("expected , or )")
		}
	}
	if len(d.cols) > 0 && len(d.colNames) > 0 {
		return syntaxError("every column needs a type")
	}
	return nil
}

// columnDef reads a column's type and constraints.
func (p *ddlParser) columnDef(name string) (colDef, error) {
	c := colDef{name: name}
	t, err := p.typeName()
	if err != nil {
		return c, err
	}
	c.typ = t
	for !p.eof() && p.toks[p.i].text != "," && p.toks[p.i].text != ")" {
		switch {
		case p.accept("not", "null"):
			c.required = true
		case p.accept("null"):
			c.required = false
		case p.accept("comment"):
			s, ok := p.str()
			if !ok {
				return c, p.errAt("expected a string after COMMENT")
			}
			c.doc = s
		case p.isWord(p.i, "primary"), p.isWord(p.i, "unique"), p.isWord(p.i, "references"), p.isWord(p.i, "check"),
			p.isWord(p.i, "default"), p.isWord(p.i, "generated"), p.isWord(p.i, "collate"), p.isWord(p.i, "constraint"):
			return c, unsupported("column constraint %s is not supported by Iceberg tables", strings.ToUpper(p.toks[p.i].text))
		default:
			return c, p.errAt("syntax error")
		}
	}
	return c, nil
}

// typeArgs reads an optional "(n[, m])" after a type name.
func (p *ddlParser) typeArgs() ([]int, error) {
	if !p.punct("(") {
		return nil, nil
	}
	var args []int
	for {
		if p.eof() || p.toks[p.i].kind != tokNumber {
			return nil, p.errAt("expected a number")
		}
		n, err := strconv.Atoi(p.toks[p.i].text)
		if err != nil || n < 0 {
			return nil, p.errAt("invalid type modifier")
		}
		p.i++
		args = append(args, n)
		if p.punct(")") {
			return args, nil
		}
		if !p.punct(",") || len(args) >= 2 {
			return nil, p.errAt("expected , or )")
		}
	}
}

// typeName reads a PostgreSQL or DuckDB type name and maps it to an
// Iceberg type.
func (p *ddlParser) typeName() (iceberg.Type, error) {
	at := p.i
	w, ok := p.word()
	if !ok || p.toks[at].kind != tokWord {
		return nil, p.errAtTok(at, "expected a type name")
	}
	name := w
	switch w {
	case "double":
		p.accept("precision")
		name = "double precision"
	case "character", "char":
		if p.accept("varying") {
			name = "varchar"
		}
	case "timestamp", "time":
		if p.isWord(p.i, "(") {
			break
		}
		if _, err := p.typeArgs(); err != nil {
			return nil, err
		}
		switch {
		case p.accept("with", "time", "zone"):
			name = w + "tz"
		case p.accept("without", "time", "zone"):
		}
	}
	args, err := p.typeArgs()
	if err != nil {
		return nil, err
	}
	if !p.eof() && p.toks[p.i].text == "[" {
		return nil, unsupported("array types are not supported in Iceberg tables created through SQL (column type %s[])", name)
	}
	t, err := icebergType(name, args)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (p *ddlParser) errAtTok(i int, msg string) error {
	p.i = i
	return p.errAt(msg)
}

// icebergType maps a type name (lower case) with its modifiers to an
// Iceberg type.
func icebergType(name string, args []int) (iceberg.Type, error) {
	noArgs := func(t iceberg.Type) (iceberg.Type, error) {
		if len(args) > 0 {
			return nil, syntaxError("type %s takes no modifiers", name)
		}
		return t, nil
	}
	switch name {
	case "int", "integer", "int4", "smallint", "int2", "tinyint", "int1":
		return noArgs(iceberg.PrimitiveTypes.Int32)
	case "bigint", "int8", "long":
		return noArgs(iceberg.PrimitiveTypes.Int64)
	case "real", "float4":
		return noArgs(iceberg.PrimitiveTypes.Float32)
	case "float":
		// PostgreSQL: float is double precision; float(p) with p <= 24 is real.
		if len(args) == 1 && args[0] >= 1 && args[0] <= 24 {
			return iceberg.PrimitiveTypes.Float32, nil
		}
		if len(args) > 1 || len(args) == 1 && (args[0] < 1 || args[0] > 53) {
			return nil, syntaxError("precision for type float must be between 1 and 53")
		}
		return iceberg.PrimitiveTypes.Float64, nil
	case "double precision", "double", "float8":
		return noArgs(iceberg.PrimitiveTypes.Float64)
	case "numeric", "decimal":
		p, s := 38, 9
		switch len(args) {
		case 1:
			p, s = args[0], 0
		case 2:
			p, s = args[0], args[1]
		}
		if p < 1 || p > 38 {
			return nil, unsupported("decimal precision %d is out of Iceberg's range 1..38", p)
		}
		if s > p {
			return nil, syntaxError("decimal scale %d must not exceed its precision %d", s, p)
		}
		return iceberg.DecimalTypeOf(p, s), nil
	case "text", "varchar", "string", "bpchar", "character", "char", "name":
		return iceberg.PrimitiveTypes.String, nil // the length is not kept
	case "boolean", "bool":
		return noArgs(iceberg.PrimitiveTypes.Bool)
	case "date":
		return noArgs(iceberg.PrimitiveTypes.Date)
	case "time":
		return iceberg.PrimitiveTypes.Time, nil
	case "timestamp", "datetime":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case "timestamptz", "timetz":
		if name == "timetz" {
			return nil, unsupported("type time with time zone is not supported in Iceberg tables")
		}
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case "bytea", "blob", "binary", "varbinary":
		return iceberg.PrimitiveTypes.Binary, nil
	case "uuid":
		return noArgs(iceberg.PrimitiveTypes.UUID)
	case "json", "jsonb", "interval", "money", "inet", "cidr", "macaddr", "xml", "bit", "varbit", "point",
		"hugeint", "uhugeint", "ubigint", "uinteger", "usmallint", "utinyint", "struct", "map", "list", "union", "enum":
		return nil, unsupported("type %s is not supported in Iceberg tables", name)
	}
	return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: "type \"" + name + "\" does not exist"}
}

// props reads "(key = 'value', ...)" (WITH, SET, TBLPROPERTIES).
func (p *ddlParser) props() (map[string]string, error) {
	if !p.punct("(") {
		return nil, p.errAt("expected (")
	}
	out := map[string]string{}
	for {
		k, err := p.propKey()
		if err != nil {
			return nil, err
		}
		if !p.punct("=") {
			return nil, p.errAt("expected =")
		}
		var v string
		if s, ok := p.str(); ok {
			v = s
		} else if !p.eof() && (p.toks[p.i].kind == tokNumber || p.toks[p.i].kind == tokWord) {
			v = p.toks[p.i].text
			p.i++
		} else {
			return nil, p.errAt("expected a value")
		}
		out[k] = v
		if len(out) > 1000 {
			return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded, Message: "too many properties in one statement (at most 1000)"}
		}
		if p.punct(")") {
			return out, nil
		}
		if !p.punct(",") {
			return nil, p.errAt("expected , or )")
		}
	}
}

// propKey reads a property name: a string, or dotted words.
func (p *ddlParser) propKey() (string, error) {
	if s, ok := p.str(); ok {
		if s == "" {
			return "", syntaxError("empty property name")
		}
		return s, nil
	}
	var parts []string
	for {
		if p.eof() || (p.toks[p.i].kind != tokWord && p.toks[p.i].kind != tokIdent) {
			return "", p.errAt("expected a property name")
		}
		w, _ := p.word()
		parts = append(parts, w)
		if !p.punct(".") {
			return strings.Join(parts, "."), nil
		}
	}
}

// partitions reads PARTITIONED BY entries after the opening parenthesis.
func (p *ddlParser) partitions() ([]partField, error) {
	var out []partField
	for {
		f, err := p.partitionField()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if len(out) > maxDDLColumns {
			return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded, Message: "too many partition fields"}
		}
		if p.punct(")") {
			return out, nil
		}
		if !p.punct(",") {
			return nil, p.errAt("expected , or )")
		}
	}
}

// partitionField reads col, identity(col), bucket(n, col), truncate(n,
// col) (the number may also come second, as Trino writes it), year(col),
// month(col), day(col), hour(col), optionally followed by AS name.
func (p *ddlParser) partitionField() (partField, error) {
	var f partField
	w, ok := p.word()
	if !ok {
		return f, p.errAt("expected a column or a partition transform")
	}
	if !p.punct("(") {
		f.transform, f.col = iceberg.IdentityTransform{}, w
	} else {
		var n = -1
		var col string
		for k := 0; k < 2; k++ {
			if !p.eof() && p.toks[p.i].kind == tokNumber {
				v, err := strconv.Atoi(p.toks[p.i].text)
				if err != nil || v <= 0 || n >= 0 {
					return f, p.errAt("invalid transform argument")
				}
				n = v
				p.i++
			} else {
				c, ok := p.word()
				if !ok || col != "" {
					return f, p.errAt("expected a column name")
				}
				col = c
			}
			if p.punct(")") {
				break
			}
			if k == 1 || !p.punct(",") {
				return f, p.errAt("expected , or )")
			}
		}
		if col == "" {
			return f, syntaxError("partition transform %s needs a column", w)
		}
		f.col = col
		switch w {
		case "bucket", "truncate":
			if n < 0 {
				return f, syntaxError("%s needs a number: %s(16, col)", w, w)
			}
			if w == "bucket" {
				f.transform = iceberg.BucketTransform{NumBuckets: n}
			} else {
				f.transform = iceberg.TruncateTransform{Width: n}
			}
		default:
			if n >= 0 {
				return f, syntaxError("partition transform %s takes no number", w)
			}
			switch w {
			case "identity":
				f.transform = iceberg.IdentityTransform{}
			case "year", "years":
				f.transform = iceberg.YearTransform{}
			case "month", "months":
				f.transform = iceberg.MonthTransform{}
			case "day", "days":
				f.transform = iceberg.DayTransform{}
			case "hour", "hours":
				f.transform = iceberg.HourTransform{}
			case "void":
				f.transform = iceberg.VoidTransform{}
			default:
				return f, unsupported("unknown partition transform %s (use identity, bucket, truncate, year, month, day, hour)", w)
			}
		}
	}
	if p.accept("as") {
		n, ok := p.word()
		if !ok {
			return f, p.errAt("expected a partition field name")
		}
		f.name = n
	}
	return f, nil
}

func (p *ddlParser) drop() (*ddlParsed, error) {
	d := &ddlParsed{}
	switch {
	case p.accept("schema"):
		d.kind = ddlDropSchema
	case p.accept("table"):
		d.kind = ddlDropTable
	case p.accept("view"):
		d.kind = ddlDropView
	default:
		if p.eof() {
			return nil, syntaxError("syntax error at end of input")
		}
		return nil, unsupported("DROP %s is not supported by the SQL endpoint (it runs DROP SCHEMA and DROP TABLE)", strings.ToUpper(p.toks[p.i].text))
	}
	d.ifExists = p.ifWords(false)
	var err error
	if d.path, err = p.qname(); err != nil {
		return nil, err
	}
	if p.punct(",") {
		return nil, unsupported("drop one object per statement")
	}
	for !p.eof() {
		switch {
		case p.accept("cascade"):
			d.cascade = true
		case p.accept("restrict"):
		case d.kind == ddlDropTable && p.accept("purge"):
			d.purge = true
		default:
			return nil, p.errAt("syntax error")
		}
	}
	return d, nil
}

func (p *ddlParser) alterTable() (*ddlParsed, error) {
	if p.accept("view") {
		d := &ddlParsed{kind: ddlAlterView, alter: alterRename}
		d.ifExists = p.ifWords(false)
		var err error
		if d.path, err = p.qname(); err != nil {
			return nil, err
		}
		if !p.accept("rename", "to") {
			return nil, unsupported("ALTER VIEW supports RENAME TO only")
		}
		if d.newPath, err = p.qname(); err != nil {
			return nil, err
		}
		return d, nil
	}
	if !p.accept("table") {
		if p.eof() {
			return nil, syntaxError("syntax error at end of input")
		}
		return nil, unsupported("ALTER %s is not supported by the SQL endpoint (it runs ALTER TABLE)", strings.ToUpper(p.toks[p.i].text))
	}
	d := &ddlParsed{kind: ddlAlterTable}
	d.ifExists = p.ifWords(false)
	var err error
	if d.path, err = p.qname(); err != nil {
		return nil, err
	}
	colName := func() error {
		c, ok := p.word()
		if !ok {
			return p.errAt("expected a column name")
		}
		d.col = c
		return nil
	}
	switch {
	case p.accept("add", "partition", "field"):
		d.alter = alterAddPartition
		f, err := p.partitionField()
		if err != nil {
			return nil, err
		}
		d.parts = []partField{f}
	case p.accept("drop", "partition", "field"):
		d.alter = alterDropPartition
		save := p.i
		f, err := p.partitionField()
		if err == nil && p.eof() && (p.toks[save].kind != tokWord || p.i-save > 1) {
			d.parts = []partField{f}
		} else {
			p.i = save
			n, ok := p.word()
			if !ok {
				return nil, p.errAt("expected a partition field")
			}
			d.partName = n
		}
	case p.accept("add"):
		p.accept("column")
		d.alter = alterAddColumn
		d.ifExists = d.ifExists || p.ifWords(true)
		name, ok := p.word()
		if !ok {
			return nil, p.errAt("expected a column name")
		}
		c, err := p.columnDef(name)
		if err != nil {
			return nil, err
		}
		d.cols = []colDef{c}
		if p.punct(",") {
			return nil, unsupported("change one column per ALTER TABLE statement")
		}
	case p.accept("drop"):
		p.accept("column")
		d.alter = alterDropColumn
		d.ifExists = d.ifExists || p.ifWords(false)
		if err := colName(); err != nil {
			return nil, err
		}
		p.accept("restrict")
		if p.accept("cascade") {
			return nil, unsupported("DROP COLUMN ... CASCADE is not supported")
		}
	case p.accept("rename", "to"):
		d.alter = alterRename
		if d.newPath, err = p.qname(); err != nil {
			return nil, err
		}
	case p.accept("rename"):
		p.accept("column")
		d.alter = alterRenameColumn
		if err := colName(); err != nil {
			return nil, err
		}
		if err := p.expect("to"); err != nil {
			return nil, err
		}
		n, ok := p.word()
		if !ok {
			return nil, p.errAt("expected a column name")
		}
		d.newName = n
	case p.accept("alter"):
		p.accept("column")
		if err := colName(); err != nil {
			return nil, err
		}
		switch {
		case p.accept("set", "data", "type"), p.accept("type"):
			d.alter = alterColumnType
			t, err := p.typeName()
			if err != nil {
				return nil, err
			}
			d.cols = []colDef{{name: d.col, typ: t}}
			if p.accept("using") {
				return nil, unsupported("ALTER COLUMN ... TYPE ... USING is not supported: Iceberg only widens types without rewriting data")
			}
		case p.accept("drop", "not", "null"):
			d.alter = alterDropNotNull
		case p.accept("set", "not", "null"):
			return nil, unsupported("SET NOT NULL is not supported: Iceberg cannot make an optional column required")
		default:
			return nil, p.errAt("expected TYPE or DROP NOT NULL")
		}
	case p.accept("set", "tblproperties"), p.accept("set"):
		d.alter = alterSetProps
		if d.props, err = p.props(); err != nil {
			return nil, err
		}
	case p.accept("reset"), p.accept("unset", "tblproperties"):
		d.alter = alterResetProps
		if !p.punct("(") {
			return nil, p.errAt("expected (")
		}
		for {
			k, err := p.propKey()
			if err != nil {
				return nil, err
			}
			d.keys = append(d.keys, k)
			if len(d.keys) > 1000 {
				return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded, Message: "too many properties in one statement (at most 1000)"}
			}
			if p.punct(")") {
				break
			}
			if !p.punct(",") {
				return nil, p.errAt("expected , or )")
			}
		}
	default:
		if p.eof() {
			return nil, syntaxError("syntax error at end of input")
		}
		return nil, unsupported("ALTER TABLE ... %s is not supported", strings.ToUpper(p.toks[p.i].text))
	}
	return d, nil
}

func (p *ddlParser) commentOn() (*ddlParsed, error) {
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	d := &ddlParsed{kind: ddlComment}
	switch {
	case p.accept("table"):
	case p.accept("column"):
		d.commentsCol = true
	default:
		if p.eof() {
			return nil, syntaxError("syntax error at end of input")
		}
		return nil, unsupported("COMMENT ON %s is not supported (only TABLE and COLUMN)", strings.ToUpper(p.toks[p.i].text))
	}
	parts := 3
	if d.commentsCol {
		parts = 4
	}
	var err error
	if d.path, err = p.qnameN(parts); err != nil {
		return nil, err
	}
	if d.commentsCol {
		if len(d.path) < 2 {
			return nil, syntaxError("column name must be qualified")
		}
		d.col = d.path[len(d.path)-1]
		d.path = d.path[:len(d.path)-1]
	}
	if err := p.expect("is"); err != nil {
		return nil, err
	}
	if p.accept("null") {
		return d, nil
	}
	s, ok := p.str()
	if !ok {
		return nil, p.errAt("expected a string or NULL")
	}
	d.comment = &s
	return d, nil
}
