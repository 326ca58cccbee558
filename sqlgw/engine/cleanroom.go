package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Clean rooms (issue 22, docs/cleanrooms.md). A session that sets
// floe.collaboration queries in that collaboration: its statements are
// checked against the collaboration's aggregation rules on their syntax
// tree (checkRoom) before anything runs, the names of configured tables
// resolve to their owners' tables read with the owners' rights (not the
// caller's grants), only the configured columns are visible, and every
// output row whose groups hold fewer distinct identifiers than a table's
// threshold is suppressed: the rewritten query computes one more column,
// the threshold test, and the result drops the rows that fail it without
// sending them (counting them for the query log).

// CleanRooms gives the engine the collaborations sessions query in
// (*cleanroom.Service).
type CleanRooms interface {
	// Room returns the collaboration sub queries in; floe.Forbidden when
	// sub may not (not a member, not a result receiver, unknown).
	Room(ctx context.Context, sub authz.Subject, name string) (*cleanroom.Room, error)
	// Record appends a query to the collaboration's log.
	Record(ctx context.Context, r cleanroom.QueryRecord)
	// Charge spends epsilon of the collaboration's privacy budget for one
	// query and returns what remains; floe.Forbidden (naming what
	// remains) when it would overspend.
	Charge(ctx context.Context, name string, epsilon float64) (float64, error)
	// RunTemplate returns a template of the collaboration sub may run;
	// floe.Forbidden when it may not (or there is none).
	RunTemplate(ctx context.Context, sub authz.Subject, name, template string) (cleanroom.Template, error)
	// Budget returns the collaboration's privacy budget as now (every
	// member reads it); floe.NotFound when it has none.
	Budget(ctx context.Context, sub authz.Subject, name string) (cleanroom.Budget, error)
}

// collaborationSetting is the session setting naming the collaboration.
const collaborationSetting = "floe.collaboration"

// thresholdAlias names the column the rewrite appends: whether the row
// meets every threshold. The result drops it.
const thresholdAlias = "__floe_threshold"

// roomWithheld is what a client sees of a clean-room query that failed
// while running: DuckDB's message could quote values of the tables.
const roomWithheld = "the clean-room query failed while running (details withheld: they could quote the collaboration's data)"

// ruleError refuses a statement for a clean-room rule: SQLSTATE 42501,
// naming the rule. Messages name columns and tables, never values.
func ruleError(rule, format string, args ...any) error {
	return &pgwire.Error{Code: pgwire.CodeInsufficientPrivilege,
		Message: "clean room rule (" + rule + "): " + fmt.Sprintf(format, args...),
		Hint:    "Queries in a collaboration follow the analysis rules of the tables they read (docs/cleanrooms.md)."}
}

// The rules, as error messages name them.
const (
	ruleStatement = "aggregation queries only"
	ruleTables    = "configured tables only"
	ruleJoin      = "joins on allowed join keys"
	ruleOutput    = "aggregate outputs"
	ruleGroup     = "group by dimensions"
	ruleWhere     = "filter dimensions with literals"
	ruleFunction  = "function allowlist"
	ruleOrder     = "ordering"
)

// roomTable is one configured table a statement names.
type roomTable struct {
	alias string
	t     cleanroom.ConfiguredTable
	n     node
	// joined are the join keys the statement's join conditions use.
	joined []string
}

// roomCheck is what checking a statement against a collaboration found.
type roomCheck struct {
	room   *cleanroom.Room
	tables []*roomTable
	alias  map[string]*roomTable
	// groups are the group-by columns, "alias\x00column".
	groups map[string]bool
	// outputs are the output aliases (ORDER BY may name them).
	outputs map[string]bool
	sel     []any
	// dp plans the noise when the collaboration's privacy is on (dp.go).
	dp *dpPlan
	// kind is the analysis rule of the tables the statement reads (one
	// for all of them).
	kind string
	// template is set when the statement is an approved template's
	// (template.go): custom-rule tables may be read.
	template bool
}

// hidden is how many columns the rewrite appended: the threshold test
// of an aggregation, or the hidden counts under differential privacy;
// none for a list.
func (c *roomCheck) hidden() int {
	switch {
	case c.dp != nil:
		return c.dp.hidden
	case c.kind == cleanroom.RuleAggregation:
		return 1
	}
	return 0
}

// aggregates are the aggregate functions a query may output.
var aggregates = setOf("count", "count_star", "sum", "avg")

// scalars are the functions a query may apply to aggregates and literals.
var scalars = setOf("+", "-", "*", "/", "round")

// checkRoom checks one statement's tree against the collaboration's
// rules and rewrites it: configured table names become the owners'
// tables, unqualified columns are qualified, and the threshold column is
// appended. It returns the tables it names.
func checkRoom(stmt node, room *cleanroom.Room) (*roomCheck, error) {
	return checkRoomWith(stmt, room, nil)
}

// checkRoomWith is checkRoom for a statement, or for the bound tree of
// the template tmpl (template.go): a template reads custom-rule tables
// approved by their owners; without differential privacy it is run as
// approved, under it the aggregation checks apply and it is noised.
func checkRoomWith(stmt node, room *cleanroom.Room, tmpl *cleanroom.Template) (*roomCheck, error) {
	if err := scanRefused(stmt); err != nil {
		return nil, err
	}
	sel, ok := stmt["node"].(node)
	if !ok || sel["type"] != "SELECT_NODE" {
		return nil, ruleError(ruleStatement, "only a single SELECT ... GROUP BY statement runs in a collaboration")
	}
	for k, v := range sel {
		switch k {
		case "type", "modifiers", "cte_map", "select_list", "from_table", "where_clause", "group_expressions", "group_sets", "having":
		case "aggregate_handling":
			if v != "STANDARD_HANDLING" {
				return nil, ruleError(ruleGroup, "GROUP BY ALL is not allowed: name the dimension columns")
			}
		case "sample", "qualify":
			if v != nil {
				return nil, ruleError(ruleStatement, "%s is not allowed", strings.ToUpper(k))
			}
		default:
			if !empty(v) {
				return nil, ruleError(ruleStatement, "the construct %q is not allowed", k)
			}
		}
	}
	c := &roomCheck{room: room, alias: map[string]*roomTable{}, groups: map[string]bool{}, outputs: map[string]bool{}, template: tmpl != nil}
	from, ok := sel["from_table"].(node)
	if !ok || from["type"] == "EMPTY" || from["type"] == "EMPTY_FROM" {
		return nil, ruleError(ruleTables, "a query reads the collaboration's configured tables")
	}
	if err := c.collectTables(from); err != nil {
		return nil, err
	}
	if tmpl != nil {
		if err := c.checkTemplateTables(tmpl); err != nil {
			return nil, err
		}
		if room.Collaboration.Privacy == nil {
			// Run as its owners approved it, on their configured columns.
			c.rewrite(sel)
			return c, nil
		}
	}
	if err := c.checkJoins(from); err != nil {
		return nil, err
	}
	if c.kind == cleanroom.RuleList {
		if err := c.checkList(sel); err != nil {
			return nil, err
		}
		c.rewrite(sel)
		return c, nil
	}
	if w, ok := sel["where_clause"].(node); ok {
		if err := c.predicate(w); err != nil {
			return nil, err
		}
	}
	c.sel, _ = sel["select_list"].([]any)
	for _, it := range c.sel {
		if n, ok := it.(node); ok {
			if a, _ := n["alias"].(string); a != "" {
				c.outputs[strings.ToLower(a)] = true
			}
		}
	}
	if err := c.groupBy(sel); err != nil {
		return nil, err
	}
	aggs := 0
	for _, it := range c.sel {
		n, ok := it.(node)
		if !ok {
			return nil, ruleError(ruleOutput, "an output is not an expression")
		}
		k, err := c.output(n)
		if err != nil {
			return nil, err
		}
		aggs += k
	}
	if aggs == 0 {
		return nil, ruleError(ruleOutput, "a query outputs at least one aggregate (COUNT, SUM or AVG)")
	}
	if h, ok := sel["having"].(node); ok {
		if err := c.having(h); err != nil {
			return nil, err
		}
	}
	mods, _ := sel["modifiers"].([]any)
	for _, m := range mods {
		if err := c.modifier(m); err != nil {
			return nil, err
		}
	}
	if p := room.Collaboration.Privacy; p != nil {
		dp, err := c.planDP(sel, *p)
		if err != nil {
			return nil, err
		}
		c.dp = dp
	}
	c.rewrite(sel)
	return c, nil
}

// empty reports whether a tree value is absent: null, "", false, 0, an
// empty list or map, or the empty cte_map and order_bys DuckDB always
// writes.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case node:
		for k, c := range x {
			if k != "type" && !empty(c) {
				return false
			}
		}
		return true
	}
	return false
}

// scanRefused looks through the whole tree for constructs no clean-room
// query may hold, wherever they are, so that each is refused with its
// own rule's name.
func scanRefused(v any) error {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if err := scanRefused(c); err != nil {
				return err
			}
		}
	case node:
		typ, _ := x["type"].(string)
		class, _ := x["class"].(string)
		switch {
		case typ == "SET_OPERATION_NODE":
			return ruleError(ruleStatement, "UNION, INTERSECT and EXCEPT are not allowed")
		case typ == "RECURSIVE_CTE_NODE" || typ == "CTE_NODE" || !empty(x["cte_map"]):
			return ruleError(ruleStatement, "common table expressions (WITH) are not allowed")
		case class == "SUBQUERY" || typ == "SUBQUERY":
			return ruleError(ruleStatement, "subqueries are not allowed")
		case class == "WINDOW" || strings.HasPrefix(typ, "WINDOW_"):
			return ruleError(ruleStatement, "window functions are not allowed")
		case typ == "TABLE_FUNCTION":
			return ruleError(ruleTables, "table functions are not allowed")
		case x["at_clause"] != nil:
			return ruleError(ruleTables, "time travel (AT) is not allowed: a collaboration reads the tables' current snapshots")
		}
		for _, c := range x {
			if err := scanRefused(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// collectTables finds the configured tables of a FROM clause.
func (c *roomCheck) collectTables(n node) error {
	switch n["type"] {
	case "BASE_TABLE":
		path := tableRefPath(n)
		if len(path) != 1 {
			return ruleError(ruleTables, "name a configured table of collaboration %q by its name alone (not %s)", c.room.Collaboration.Name, strings.Join(path, "."))
		}
		name := strings.ToLower(path[0])
		t, ok := c.room.Collaboration.Table(name)
		if !ok {
			return ruleError(ruleTables, "%q is not a configured table of collaboration %q", path[0], c.room.Collaboration.Name)
		}
		if !empty(n["column_name_alias"]) || n["sample"] != nil {
			return ruleError(ruleTables, "column aliases and samples of configured tables are not allowed")
		}
		switch kind := t.Kind(); {
		case kind == cleanroom.RuleCustom && !c.template:
			return ruleError(ruleTables, "configured table %q has the custom analysis rule: only the collaboration's approved templates read it (EXECUTE TEMPLATE)", t.Name)
		case c.kind == "":
			c.kind = kind
		case kind != c.kind:
			return ruleError(ruleTables, "configured table %q has the %s analysis rule, another table of the query the %s rule: a query reads tables of one analysis rule", t.Name, kind, c.kind)
		}
		alias, _ := n["alias"].(string)
		if alias == "" {
			alias = name
		}
		alias = strings.ToLower(alias)
		if c.alias[alias] != nil {
			return ruleError(ruleTables, "two tables are named %q: give each its own alias", alias)
		}
		rt := &roomTable{alias: alias, t: t, n: n}
		c.alias[alias] = rt
		c.tables = append(c.tables, rt)
		return nil
	case "JOIN":
		l, _ := n["left"].(node)
		r, _ := n["right"].(node)
		if l == nil || r == nil {
			return ruleError(ruleJoin, "a join without two sides")
		}
		if err := c.collectTables(l); err != nil {
			return err
		}
		return c.collectTables(r)
	case "SUBQUERY":
		return ruleError(ruleStatement, "subqueries are not allowed")
	}
	return ruleError(ruleTables, "only configured tables and joins of them may be read")
}

// aliasesOf lists the aliases of the configured tables of a FROM subtree.
func (c *roomCheck) aliasesOf(n node) map[string]bool {
	out := map[string]bool{}
	var walk func(n node)
	walk = func(n node) {
		if n["type"] == "BASE_TABLE" {
			for _, t := range c.tables {
				if sameNode(t.n, n) {
					out[t.alias] = true
				}
			}
			return
		}
		if l, ok := n["left"].(node); ok {
			walk(l)
		}
		if r, ok := n["right"].(node); ok {
			walk(r)
		}
	}
	walk(n)
	return out
}

func sameNode(a, b node) bool { return nodeKey(a) == nodeKey(b) }

// checkJoins checks every join: INNER JOIN ... ON equalities of allowed
// join keys, each between the two sides.
func (c *roomCheck) checkJoins(n node) error {
	if n["type"] != "JOIN" {
		return nil
	}
	for k, v := range n {
		switch k {
		case "type", "alias", "sample", "query_location", "query_location_length", "left", "right", "condition", "join_type", "ref_type",
			"using_columns", "delim_flipped", "duplicate_eliminated_columns", "is_implicit", "nearest_count", "nearest_order_type", "nearest_approx":
		case "ranking_expression":
			if v != nil {
				return ruleError(ruleJoin, "only INNER JOIN ... ON equality of join keys is allowed")
			}
		default:
			if !empty(v) {
				return ruleError(ruleJoin, "the join construct %q is not allowed", k)
			}
		}
	}
	if n["join_type"] != "INNER" || n["ref_type"] != "REGULAR" || !empty(n["using_columns"]) || n["is_implicit"] == true {
		return ruleError(ruleJoin, "only INNER JOIN ... ON a.key = b.key is allowed (no CROSS, NATURAL, OUTER, ASOF, USING or comma joins)")
	}
	l, _ := n["left"].(node)
	r, _ := n["right"].(node)
	left, right := c.aliasesOf(l), c.aliasesOf(r)
	cond, ok := n["condition"].(node)
	if !ok {
		return ruleError(ruleJoin, "a join needs ON a.key = b.key")
	}
	for _, eq := range andTerms(cond) {
		if eq["class"] != "COMPARISON" || eq["type"] != "COMPARE_EQUAL" {
			return ruleError(ruleJoin, "a join condition may only be equalities of join keys joined by AND")
		}
		a, err := c.joinKey(eq["left"])
		if err != nil {
			return err
		}
		b, err := c.joinKey(eq["right"])
		if err != nil {
			return err
		}
		if !(left[a] && right[b] || left[b] && right[a]) {
			return ruleError(ruleJoin, "each equality of a join condition compares a join key of one side with a join key of the other")
		}
	}
	if err := c.checkJoins(l); err != nil {
		return err
	}
	return c.checkJoins(r)
}

// andTerms splits a condition on AND.
func andTerms(n node) []node {
	if n["class"] == "CONJUNCTION" && n["type"] == "CONJUNCTION_AND" {
		var out []node
		ch, _ := n["children"].([]any)
		for _, x := range ch {
			if xn, ok := x.(node); ok {
				out = append(out, andTerms(xn)...)
			} else {
				return []node{{}}
			}
		}
		return out
	}
	return []node{n}
}

// joinKey checks a join condition's side: a join key of a configured
// table. It returns the table's alias.
func (c *roomCheck) joinKey(v any) (string, error) {
	n, ok := v.(node)
	if !ok || n["class"] != "COLUMN_REF" {
		return "", ruleError(ruleJoin, "a join condition compares columns, not expressions")
	}
	t, col, err := c.column(n)
	if err != nil {
		return "", err
	}
	if !slices.Contains(t.t.JoinKeys, col) {
		return "", ruleError(ruleJoin, "column %s.%s is not an allowed join key", t.alias, col)
	}
	if !slices.Contains(t.joined, col) {
		t.joined = append(t.joined, col)
	}
	return t.alias, nil
}

// column resolves a column reference to its configured table, qualifying
// an unqualified one in the tree. The column must be allowed at all.
func (c *roomCheck) column(n node) (*roomTable, string, error) {
	parts, _ := n["column_names"].([]any)
	var names []string
	for _, p := range parts {
		s, _ := p.(string)
		names = append(names, strings.ToLower(s))
	}
	switch len(names) {
	case 1:
		var found []*roomTable
		for _, t := range c.tables {
			if t.t.Allowed(names[0]) {
				found = append(found, t)
			}
		}
		switch len(found) {
		case 0:
			return nil, "", ruleError(ruleOutput, "column %q is not an allowed column of the tables queried", names[0])
		case 1:
			n["column_names"] = []any{found[0].alias, names[0]}
			return found[0], names[0], nil
		}
		return nil, "", ruleError(ruleOutput, "column %q is ambiguous: qualify it with its table", names[0])
	case 2:
		t := c.alias[names[0]]
		if t == nil {
			return nil, "", ruleError(ruleTables, "%q names no table of the query", names[0])
		}
		if !t.t.Allowed(names[1]) {
			return nil, "", ruleError(ruleOutput, "column %s.%s is not an allowed column of configured table %q", names[0], names[1], t.t.Name)
		}
		n["column_names"] = []any{t.alias, names[1]}
		return t, names[1], nil
	}
	return nil, "", ruleError(ruleOutput, "a column is named as table.column (struct fields and other paths are not allowed)")
}

// dimension resolves a column that must be a dimension.
func (c *roomCheck) dimension(n node, rule string) (string, error) {
	t, col, err := c.column(n)
	if err != nil {
		return "", err
	}
	if t.t.Kind() == cleanroom.RuleList {
		if !slices.Contains(t.t.Columns, col) {
			return "", ruleError(rule, "column %s.%s is not a list column: identifiers and join keys are never output, filtered or ordered on", t.alias, col)
		}
		return t.alias + "\x00" + col, nil
	}
	if !slices.Contains(t.t.Dimensions, col) {
		return "", ruleError(rule, "column %s.%s is not a dimension: identifiers, join keys and other columns may only be aggregated", t.alias, col)
	}
	return t.alias + "\x00" + col, nil
}

// literal reports whether n is a literal: a constant, a cast of one, or a
// parameter.
func literal(n node) bool {
	switch n["class"] {
	case "CONSTANT", "PARAMETER":
		return true
	case "CAST":
		ch, ok := n["child"].(node)
		return ok && literal(ch) && n["try_cast"] != true
	}
	return false
}

// predicate checks a WHERE condition: AND, OR and NOT of comparisons of
// a dimension column with literals (=, <>, <, <=, >, >=, IN, BETWEEN, IS
// [NOT] NULL).
func (c *roomCheck) predicate(n node) error {
	children := func(key string) []node {
		var out []node
		ch, _ := n[key].([]any)
		for _, x := range ch {
			xn, ok := x.(node)
			if !ok {
				return []node{{}}
			}
			out = append(out, xn)
		}
		return out
	}
	whereErr := ruleError(ruleWhere, "WHERE may only compare dimension columns with literals (=, <>, <, <=, >, >=, IN, BETWEEN, IS NULL) joined by AND, OR and NOT")
	typ, _ := n["type"].(string)
	switch n["class"] {
	case "CONJUNCTION":
		for _, ch := range children("children") {
			if err := c.predicate(ch); err != nil {
				return err
			}
		}
		return nil
	case "OPERATOR":
		ch := children("children")
		switch typ {
		case "OPERATOR_NOT":
			if len(ch) != 1 {
				return whereErr
			}
			return c.predicate(ch[0])
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL":
			if len(ch) != 1 || ch[0]["class"] != "COLUMN_REF" {
				return whereErr
			}
			_, err := c.dimension(ch[0], ruleWhere)
			return err
		case "COMPARE_IN", "COMPARE_NOT_IN":
			if len(ch) < 2 || ch[0]["class"] != "COLUMN_REF" {
				return whereErr
			}
			for _, x := range ch[1:] {
				if !literal(x) {
					return whereErr
				}
			}
			_, err := c.dimension(ch[0], ruleWhere)
			return err
		}
		return whereErr
	case "COMPARISON":
		switch typ {
		case "COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_LESSTHAN", "COMPARE_GREATERTHAN", "COMPARE_LESSTHANOREQUALTO", "COMPARE_GREATERTHANOREQUALTO":
		default:
			return whereErr
		}
		l, _ := n["left"].(node)
		r, _ := n["right"].(node)
		if l == nil || r == nil {
			return whereErr
		}
		if literal(l) {
			l, r = r, l
		}
		if l["class"] != "COLUMN_REF" || !literal(r) {
			return whereErr
		}
		_, err := c.dimension(l, ruleWhere)
		return err
	case "BETWEEN":
		in, _ := n["input"].(node)
		lo, _ := n["lower"].(node)
		hi, _ := n["upper"].(node)
		if in == nil || lo == nil || hi == nil || in["class"] != "COLUMN_REF" || !literal(lo) || !literal(hi) {
			return whereErr
		}
		_, err := c.dimension(in, ruleWhere)
		return err
	}
	return whereErr
}

// groupBy checks GROUP BY: dimension columns (or positions of dimension
// outputs), one grouping set.
func (c *roomCheck) groupBy(sel node) error {
	exprs, _ := sel["group_expressions"].([]any)
	for _, e := range exprs {
		n, ok := e.(node)
		if !ok {
			return ruleError(ruleGroup, "GROUP BY takes dimension columns")
		}
		if n["class"] == "CONSTANT" {
			i, err := position(n, len(c.sel))
			if err != nil {
				return err
			}
			n, _ = c.sel[i].(node)
			if n == nil || n["class"] != "COLUMN_REF" {
				return ruleError(ruleGroup, "GROUP BY %d does not name a dimension column", i+1)
			}
		}
		if n["class"] != "COLUMN_REF" {
			return ruleError(ruleGroup, "GROUP BY takes dimension columns, not expressions")
		}
		key, err := c.dimension(n, ruleGroup)
		if err != nil {
			return err
		}
		c.groups[key] = true
	}
	if sets, _ := sel["group_sets"].([]any); len(sets) > 1 {
		return ruleError(ruleGroup, "GROUPING SETS, ROLLUP and CUBE are not allowed")
	}
	return nil
}

// position reads an integer constant naming an output (from 1).
func position(n node, outputs int) (int, error) {
	lit, _ := n["literal"].(node)
	text, _ := lit["text"].(string)
	i, err := strconv.Atoi(text)
	if err != nil || i < 1 || i > outputs {
		return 0, ruleError(ruleGroup, "a position names one of the %d outputs", outputs)
	}
	return i - 1, nil
}

// output checks one output expression: an aggregate, a dimension the
// query groups by, a literal, or an allowed scalar function of those. It
// returns the number of aggregates in it.
func (c *roomCheck) output(n node) (int, error) {
	switch n["class"] {
	case "CONSTANT":
		return 0, nil
	case "COLUMN_REF":
		key, err := c.dimension(n, ruleOutput)
		if err != nil {
			return 0, err
		}
		if !c.groups[key] {
			return 0, ruleError(ruleOutput, "dimension %s is output but not grouped by: add it to GROUP BY", strings.ReplaceAll(key, "\x00", "."))
		}
		return 0, nil
	case "CAST":
		if n["try_cast"] == true {
			return 0, ruleError(ruleFunction, "TRY_CAST is not allowed")
		}
		ch, ok := n["child"].(node)
		if !ok {
			return 0, ruleError(ruleOutput, "a cast without an expression")
		}
		return c.output(ch)
	case "STAR":
		return 0, ruleError(ruleOutput, "SELECT * would output raw rows: output aggregates (COUNT, SUM, AVG) and dimensions")
	case "FUNCTION":
		return c.function(n)
	}
	class, _ := n["class"].(string)
	return 0, ruleError(ruleOutput, "%s expressions are not allowed in outputs: output aggregates (COUNT, SUM, AVG) and dimensions", strings.ToLower(class))
}

// function checks a function call of an output.
func (c *roomCheck) function(n node) (int, error) {
	name, _ := n["function_name"].(string)
	name = strings.ToLower(name)
	if s, _ := n["schema"].(string); s != "" {
		return 0, ruleError(ruleFunction, "function %s.%s is not allowed", s, name)
	}
	if n["filter"] != nil || !empty(n["order_bys"]) || n["export_state"] == true {
		return 0, ruleError(ruleFunction, "FILTER, ORDER BY and EXPORT_STATE in aggregates are not allowed")
	}
	var args []node
	list, _ := n["arguments"].([]any)
	if list == nil {
		list, _ = n["children"].([]any)
	}
	for _, a := range list {
		an, ok := a.(node)
		if !ok {
			return 0, ruleError(ruleFunction, "function %s: an argument is not an expression", name)
		}
		if e, ok := an["expression"].(node); ok {
			if nm, _ := an["name"].(string); nm != "" {
				return 0, ruleError(ruleFunction, "named arguments are not allowed")
			}
			an = e
		}
		args = append(args, an)
	}
	if aggregates[name] {
		return 1, c.aggregate(name, n, args)
	}
	if !scalars[name] {
		return 0, ruleError(ruleFunction, "function %s is not allowed (allowed: count, sum, avg, and round, +, -, *, / of them)", name)
	}
	if n["distinct"] == true {
		return 0, ruleError(ruleFunction, "DISTINCT in %s is not allowed", name)
	}
	total := 0
	for _, a := range args {
		k, err := c.output(a)
		if err != nil {
			return 0, err
		}
		total += k
	}
	return total, nil
}

// aggregate checks COUNT(*), COUNT([DISTINCT] col), SUM(col) and
// AVG(col): a bare allowed column (any for COUNT, the aggregatable
// columns for SUM and AVG).
func (c *roomCheck) aggregate(name string, n node, args []node) error {
	if name == "count_star" {
		if len(args) != 0 {
			return ruleError(ruleFunction, "count(*) takes no argument")
		}
		return nil
	}
	if len(args) != 1 || args[0]["class"] != "COLUMN_REF" {
		return ruleError(ruleFunction, "%s takes one column (no expressions inside aggregates)", name)
	}
	t, col, err := c.column(args[0])
	if err != nil {
		return err
	}
	if name != "count" {
		if n["distinct"] == true {
			return ruleError(ruleFunction, "DISTINCT is allowed in COUNT only")
		}
		if !slices.Contains(t.t.Columns, col) {
			return ruleError(ruleFunction, "%s(%s.%s): the column is not among the aggregatable columns of configured table %q", name, t.alias, col, t.t.Name)
		}
	}
	return nil
}

// having checks HAVING: AND, OR and NOT of comparisons of outputs
// (aggregates) and literals.
func (c *roomCheck) having(n node) error {
	switch n["class"] {
	case "CONJUNCTION", "OPERATOR":
		if n["class"] == "OPERATOR" && n["type"] != "OPERATOR_NOT" {
			break
		}
		ch, _ := n["children"].([]any)
		for _, x := range ch {
			xn, ok := x.(node)
			if !ok {
				return ruleError(ruleOutput, "HAVING compares aggregates with literals")
			}
			if err := c.having(xn); err != nil {
				return err
			}
		}
		return nil
	case "COMPARISON":
		for _, k := range []string{"left", "right"} {
			side, _ := n[k].(node)
			if side == nil {
				return ruleError(ruleOutput, "HAVING compares aggregates with literals")
			}
			if _, err := c.output(side); err != nil {
				return err
			}
		}
		return nil
	}
	return ruleError(ruleOutput, "HAVING compares aggregates with literals")
}

// modifier checks ORDER BY (outputs only) and refuses LIMIT, OFFSET and
// DISTINCT.
func (c *roomCheck) modifier(m any) error {
	n, _ := m.(node)
	switch n["type"] {
	case "ORDER_MODIFIER":
		return c.orderBy(n, func(e node) error { _, err := c.output(e); return err })
	case "LIMIT_MODIFIER", "LIMIT_PERCENT_MODIFIER":
		return ruleError(ruleOrder, "LIMIT and OFFSET are not allowed: every group meeting the thresholds is output")
	case "DISTINCT_MODIFIER":
		return ruleError(ruleStatement, "SELECT DISTINCT is not allowed: use GROUP BY")
	}
	return ruleError(ruleStatement, "the modifier %v is not allowed", n["type"])
}

// orderBy checks the keys of an ORDER BY modifier: an output's position or
// alias, else an expression that check (the rule's output check) accepts.
func (c *roomCheck) orderBy(n node, check func(node) error) error {
	orders, _ := n["orders"].([]any)
	for _, o := range orders {
		on, _ := o.(node)
		e, _ := on["expression"].(node)
		if e == nil {
			return ruleError(ruleOrder, "ORDER BY takes outputs")
		}
		if e["class"] == "CONSTANT" {
			if _, err := position(e, len(c.sel)); err != nil {
				return err
			}
			continue
		}
		if e["class"] == "COLUMN_REF" {
			if parts, _ := e["column_names"].([]any); len(parts) == 1 {
				if s, _ := parts[0].(string); c.outputs[strings.ToLower(s)] {
					continue
				}
			}
		}
		if err := check(e); err != nil {
			return err
		}
	}
	return nil
}

// rewrite points the configured tables at their owners' tables and
// appends the threshold column: for every table the query names, at
// least its rule's number of distinct identifiers. Under differential
// privacy it appends the planned hidden columns instead (dp.go).
func (c *roomCheck) rewrite(sel node) {
	var tests []any
	for _, t := range c.tables {
		ns := t.t.Namespace.String()
		t.n["catalog_name"] = t.t.Warehouse
		t.n["schema_name"] = ns
		t.n["table_name"] = t.t.Table
		t.n["qualified_name"] = node{"path": []any{t.t.Warehouse, ns, t.t.Table}}
		t.n["alias"] = t.alias
		if c.dp != nil || c.kind != cleanroom.RuleAggregation {
			continue
		}
		tests = append(tests, node{
			"class": "COMPARISON", "type": "COMPARE_GREATERTHANOREQUALTO", "alias": "",
			"left": countNode(true, t.alias, t.t.Identifier, ""),
			"right": node{"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "",
				"literal": node{"kind": "INTEGER", "text": strconv.Itoa(t.t.Rule.MinIdentifiers)}},
		})
	}
	if c.dp != nil {
		sel["select_list"] = append(c.sel, c.dp.hiddenNodes...)
		return
	}
	if len(tests) == 0 {
		return
	}
	test := tests[0].(node)
	if len(tests) > 1 {
		test = node{"class": "CONJUNCTION", "type": "CONJUNCTION_AND", "alias": "", "children": tests}
	}
	test["alias"] = thresholdAlias
	sel["select_list"] = append(c.sel, test)
}

// definers are the rights each configured table is read with: its
// owner's (analysis reads them as those of a definer-rights view's
// expansion).
func (c *roomCheck) definers() map[uintptr]*viewRights {
	out := make(map[uintptr]*viewRights, len(c.tables))
	for _, t := range c.tables {
		out[nodeKey(t.n)] = &viewRights{sub: c.room.Owners[t.t.Owner],
			view: fmt.Sprintf("configured table %s of collaboration %s", t.t.Name, c.room.Collaboration.Name)}
	}
	return out
}

// joinedKeys are the join keys each configured table is joined on (by
// node).
func (c *roomCheck) joinedKeys() map[uintptr][]string {
	out := make(map[uintptr][]string, len(c.tables))
	for _, t := range c.tables {
		out[nodeKey(t.n)] = t.joined
	}
	return out
}

// configured are the configured tables a query reads (by node).
func (c *roomCheck) configured() map[uintptr]*cleanroom.ConfiguredTable {
	out := make(map[uintptr]*cleanroom.ConfiguredTable, len(c.tables))
	for _, t := range c.tables {
		out[nodeKey(t.n)] = &t.t
	}
	return out
}

// projectRoom narrows a table's view to the configured columns. Under
// differential privacy (dp) it clamps the columns with a range to [lo, hi]
// as DOUBLE (NULL stays NULL) and, when bound is set, keeps at most the
// rule's max_contributions rows of each identifier (which ones is
// arbitrary). bound may be false only when every identifier of the view
// is on one row and not NULL (uniqueIdentifier): the bound keeps every row
// then.
func projectRoom(view string, t *cleanroom.ConfiguredTable, dp, bound bool) string {
	cols := t.AllColumns()
	if !dp {
		return "SELECT " + strings.Join(quoteIdents(cols), ", ") + " FROM (" + view + ") AS floe_configured"
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		q := quoteIdent(c)
		r, ok := t.Rule.Ranges[c]
		if !ok {
			sel[i] = q
			continue
		}
		lo, hi := "CAST("+strconv.FormatFloat(r.Lo, 'g', -1, 64)+" AS DOUBLE)", "CAST("+strconv.FormatFloat(r.Hi, 'g', -1, 64)+" AS DOUBLE)"
		sel[i] = "CASE WHEN " + q + " < " + lo + " THEN " + lo + " WHEN " + q + " > " + hi + " THEN " + hi + " ELSE CAST(" + q + " AS DOUBLE) END AS " + q
	}
	if !bound {
		return "SELECT " + strings.Join(sel, ", ") + " FROM (" + view + ") AS floe_configured"
	}
	if t.Rule.Bound() == 1 {
		// One row per identifier: DISTINCT ON hashes once, where the
		// window would also number the rows.
		return "SELECT DISTINCT ON (" + quoteIdent(t.Identifier) + ") " + strings.Join(sel, ", ") + " FROM (" + view + ") AS floe_configured"
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM (" + view + ") AS floe_configured QUALIFY row_number() OVER (PARTITION BY " +
		quoteIdent(t.Identifier) + ") <= " + strconv.Itoa(t.Rule.Bound())
}

// maxUniqueIdentifiers bounds the engine's cache of uniqueIdentifier
// answers (one per table snapshot and identifier column).
const maxUniqueIdentifiers = 4096

// uniqueIdentifier reports whether every row of a configured table's view
// r has its own identifier, none NULL: then the per-identifier row bound
// of differential privacy keeps every row and need not run. It counts once
// per table snapshot (snapshots never change) and keeps the answer in a
// bounded cache; a view under a data filter is never reported unique (a
// configured table is read in full, so this does not happen).
func (ss *session) uniqueIdentifier(ctx context.Context, r *resolved, identifier string) (bool, error) {
	return ss.uniqueColumn(ctx, r, identifier)
}

// ownedJoinKey reports whether every value of join key col in a
// configured table's view r belongs to one identifier (rows with a NULL
// key, which match nothing, aside; NULL identifiers count as one): then
// the rows of the other side that one row joins belong to one person,
// at most its bound of them, and one person's rows reach at most the
// product of the tables' bounds after the join (what the noise is
// calibrated to). As uniqueIdentifier, it counts once per table snapshot.
func (ss *session) ownedJoinKey(ctx context.Context, r *resolved, col, identifier string) (bool, error) {
	k, id := quoteIdent(col), quoteIdent(identifier)
	return ss.uniqueBy(ctx, r, "key\x00"+col+"\x00"+identifier,
		"SELECT count(*) = 0 FROM (SELECT 1 FROM ("+r.sql+") AS floe_configured WHERE "+k+" IS NOT NULL GROUP BY "+k+
			" HAVING min("+id+") <> max("+id+") OR (count("+id+") > 0 AND count("+id+") < count(*))) AS floe_shared")
}

// uniqueColumn is uniqueIdentifier's count: no NULL, no value twice.
func (ss *session) uniqueColumn(ctx context.Context, r *resolved, col string) (bool, error) {
	id := quoteIdent(col)
	return ss.uniqueBy(ctx, r, "id\x00"+col, "SELECT count(*) = count(DISTINCT "+id+") FROM ("+r.sql+") AS floe_configured")
}

// uniqueBy runs a one-boolean query q over view r once per table
// snapshot and what (the cache's key), and keeps the answer.
func (ss *session) uniqueBy(ctx context.Context, r *resolved, what, q string) (bool, error) {
	if r.filtered || r.uuid == "" {
		return false, nil
	}
	if r.snapshot == 0 {
		return true, nil // no rows
	}
	key := r.wh + "\x00" + r.uuid + "\x00" + strconv.FormatInt(r.snapshot, 10) + "\x00" + what
	if u, ok := ss.e.unique.Get(key); ok {
		return u, nil
	}
	rows, err := ss.conn.QueryContext(ctx, q, nil)
	if err != nil {
		return false, fmt.Errorf("clean room: count the identifiers of %s: %w", r.name(), err)
	}
	defer rows.Close()
	dst := make([]driver.Value, 1)
	if err := rows.Next(dst); err != nil {
		return false, fmt.Errorf("clean room: count the identifiers of %s: %w", r.name(), err)
	}
	u, _ := dst[0].(bool)
	ss.e.unique.Add(key, u)
	return u, nil
}

func quoteIdents(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = quoteIdent(c)
	}
	return out
}

// analyzeRoom checks a statement of a collaboration and analyzes the
// rewritten tree: the configured tables are read with their owners'
// rights, narrowed to their configured columns.
func (ss *session) analyzeRoom(ctx context.Context, name string, stmt node, tmpl *cleanroom.Template) (*analysis, *roomCheck, error) {
	cr := ss.e.opts.CleanRooms
	if cr == nil || ss.e.opts.Policies == nil {
		return nil, nil, unsupported("clean rooms are not available on this SQL endpoint")
	}
	room, err := cr.Room(ctx, ss.sub, name)
	if err != nil {
		return nil, nil, roomRefusal(err)
	}
	c, err := checkRoomWith(stmt, room, tmpl)
	if err != nil {
		return nil, nil, err
	}
	a, err := analyzeWith(stmt, nil, c.definers())
	if err != nil {
		return nil, nil, err
	}
	tables, joined := c.configured(), c.joinedKeys()
	for _, ref := range a.refs {
		ref.roomTable = tables[nodeKey(ref.n)]
		ref.roomDP = c.dp != nil
		if ref.roomDP {
			ref.roomJoinKeys = joined[nodeKey(ref.n)]
		}
		if ref.roomTable == nil || ref.rights == nil {
			return nil, nil, ruleError(ruleTables, "only configured tables may be read")
		}
	}
	return a, c, nil
}

// roomRefusal turns the service's refusal into SQLSTATE 42501.
func roomRefusal(err error) error {
	var fe *floe.Error
	if errors.As(err, &fe) && (fe.Kind == floe.Forbidden || fe.Kind == floe.NotFound) {
		return &pgwire.Error{Code: pgwire.CodeInsufficientPrivilege, Message: floe.PublicMessage(err), Err: err}
	}
	return err
}

// EnterCollaboration puts the session in a clean-room collaboration, as
// SET floe.collaboration = 'name' does: the same membership check, audit
// and, for its statements, the same rule checks, charges and query log.
// The HTTP query API uses it for a request's "collaboration".
func (e *Engine) EnterCollaboration(ctx context.Context, s *pgwire.Session, name string) error {
	ss, ok := s.State.(*session)
	if !ok {
		return errNoSession
	}
	return ss.setCollaboration(ctx, name)
}

// setCollaboration runs SET floe.collaboration: the caller must be a
// member and result receiver of it.
func (ss *session) setCollaboration(ctx context.Context, name string) error {
	cr := ss.e.opts.CleanRooms
	if cr == nil || ss.e.opts.Policies == nil {
		return unsupported("clean rooms are not available on this SQL endpoint")
	}
	if _, err := cr.Room(ctx, ss.sub, name); err != nil {
		err = roomRefusal(err)
		ss.emitAudit(ctx, map[string]any{"sql": "SET " + collaborationSetting, "collaboration": name, "session": ss.pg.ID}, err)
		return err
	}
	ss.room = name
	return nil
}

// recordRoom appends a clean-room statement to its collaboration's query
// log.
func (ss *session) recordRoom(ctx context.Context, st *selectStmt, rows int64, err error) {
	cr := ss.e.opts.CleanRooms
	if cr == nil {
		return
	}
	r := cleanroom.QueryRecord{Collaboration: st.room, Member: ss.pg.Identity.Principal, SQL: st.text, Outcome: cleanroom.OutcomeSuccess}
	if err != nil {
		r.Outcome = cleanroom.OutcomeFailure
		var pe *pgwire.Error
		if errors.As(st.publicError(err), &pe) {
			r.Error = pe.Code + " " + pe.Message
			if pe.Code == pgwire.CodeInsufficientPrivilege {
				r.Outcome = cleanroom.OutcomeDenied
			}
		} else {
			r.Error = floe.PublicMessage(err)
		}
	} else {
		r.Rows, r.Suppressed = rows, st.suppressed
	}
	r.Epsilon, r.BudgetRemaining = st.charged, st.remaining
	cr.Record(context.WithoutCancel(ctx), r)
}

// publicError is what the client sees of a statement's error: for a
// clean-room statement, errors raised while running are withheld.
func (st *selectStmt) publicError(err error) error {
	if st.room == "" {
		return st.ss.publicError(err, st.filtered)
	}
	pe := st.ss.publicError(err, true)
	var perr *pgwire.Error
	if errors.As(pe, &perr) && perr.Message == filteredWithheld {
		return &pgwire.Error{Code: perr.Code, Message: roomWithheld, Err: err}
	}
	return pe
}
